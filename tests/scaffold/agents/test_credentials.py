"""Credentials: where settings come from, which reach an agent's process, and that secrets stay out of files.

Per-agent checks run one real ``CliAgent.turn`` against a recording workspace, so the environment and
command line asserted are exactly the ones the agent's process would get.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from scaffold.agents import create_agent
from scaffold.agents.base import AgentRequest
from scaffold.agents.builtin import builtin_spec
from scaffold.agents.cli import CliAgent
from scaffold.agents.credentials import CredentialSpec, Redactor, eval_home, load_environment, resolve_credentials
from scaffold.errors import AgentError
from scaffold.workspaces.testing import Command, Reply, ScriptedWorkspace

QUIET_CLAUDE = {
    "IS_SANDBOX": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
}

# Where Codex keeps its own files (HOME and CODEX_HOME) is the spec's business, not the credentials'.
CODEX_HOME_ENV = builtin_spec("codex", {}).home_env("/root")

# Every credential and setting of every agent, each with a distinct value.
EVERYTHING = {
    "BENCH_API_KEY": "bench-key-000001",
    "BENCH_BASE_URL": "https://bench.example/v1",
    "BENCH_MODEL": "bench-model",
    "BENCH_JUDGE_API_KEY": "judge-key-000002",
    "BENCH_JUDGE_AUTH_TOKEN": "judge-token-000003",
    "ANTHROPIC_API_KEY": "anthropic-key-000004",
    "ANTHROPIC_AUTH_TOKEN": "anthropic-token-000005",
    "ANTHROPIC_BASE_URL": "https://anthropic.example",
    "ANTHROPIC_MODEL": "claude-model",
    "OPENAI_API_KEY": "openai-key-000006",
    "CODEX_API_KEY": "codex-key-000007",
    "OPENAI_BASE_URL": "https://openai.example/v1",
    "CODEX_MODEL": "codex-model",
    "QODER_PERSONAL_ACCESS_TOKEN": "qoder-pat-000008",
    "QODER_BASE_URL": "https://qoder.example",
    "QODER_MODEL": "qoder-model",
    "CODEBUDDY_API_KEY": "codebuddy-key-000009",
    "CODEBUDDY_AUTH_TOKEN": "codebuddy-token-000010",
    "CODEBUDDY_CUSTOM_HEADERS": "X-Team: secret-header-000011",
    "CODEBUDDY_BASE_URL": "https://codebuddy.example/v1",
    "CODEBUDDY_MODEL": "codebuddy-model",
    "CODEBUDDY_SMALL_FAST_MODEL": "fast-model",
    "CODEBUDDY_INTERNET_ENVIRONMENT": "internal",
    "MY_AGENT_API_KEY": "my-agent-key-000012",
    "LANGFUSE_SECRET_KEY": "sk-lf-000013",
    "LANGSMITH_API_KEY": "lsv2-000014",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-000015",
}

CLAUDE_STREAM = [
    {"type": "system", "subtype": "init", "session_id": "s-1", "claude_code_version": "2.1.112"},
    {"type": "result", "subtype": "success", "is_error": False, "result": "ok", "session_id": "s-1"},
]


def canned(
    root: Path, stream: Sequence[Mapping[str, Any]] | str = (), *, host_address: str | None = None
) -> ScriptedWorkspace:
    """A workspace in *root* whose commands print *stream* (JSON lines), or a version for ``--version``."""
    text = stream if isinstance(stream, str) else "".join(json.dumps(e) + "\n" for e in stream)

    def answer(command: Command) -> Reply:
        return Reply(stdout="9.9.9 (test)\n" if "--version" in command.argv else text)

    root.mkdir(exist_ok=True)
    return ScriptedWorkspace(root, answer, host_address=host_address)


def run_turn(agent: object, tmp_path: Path, stream: Any = CLAUDE_STREAM, **ws: Any) -> tuple[list[str], dict[str, str]]:
    """The argv and environment one turn of *agent* starts its process with."""
    assert isinstance(agent, CliAgent)
    workspace = canned(tmp_path / "ws", stream, **ws)
    request = cast(AgentRequest, SimpleNamespace(log_dir=tmp_path / "logs"))
    agent.turn(
        workspace,
        request,
        "do it",
        session_id=None,
        index=1,
        home="/root",
        timeout_s=30,
    )
    return list(workspace.commands[0].argv), dict(workspace.commands[0].env)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty COMET_EVAL_HOME so the user's real ~/.comet never leaks into a test."""
    folder = tmp_path / "comet-home"
    folder.mkdir()
    return folder


def env_with(home: Path, **values: str) -> dict[str, str]:
    return {"COMET_EVAL_HOME": str(home), **values}


# --- load_environment --------------------------------------------------------------------------


def write_env(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ".env"
    path.write_text(text, encoding="utf-8")
    return path


def test_process_environment_wins_over_env_file(home: Path) -> None:
    write_env(home, "BENCH_API_KEY=from-file\nBENCH_MODEL=file-model\n")
    merged = load_environment({"COMET_EVAL_HOME": str(home), "BENCH_API_KEY": "from-process"})
    assert merged["BENCH_API_KEY"] == "from-process"
    assert merged["BENCH_MODEL"] == "file-model"


def test_empty_process_value_never_overrides_a_set_file_value(home: Path) -> None:
    write_env(home, "BENCH_API_KEY=from-file\n")
    merged = load_environment({"COMET_EVAL_HOME": str(home), "BENCH_API_KEY": ""})
    assert merged["BENCH_API_KEY"] == "from-file"


def test_empty_file_value_does_not_appear(home: Path) -> None:
    write_env(home, "BENCH_API_KEY=\nBENCH_BASE_URL=''\nBENCH_MODEL\nOPENAI_API_KEY=set\n")
    merged = load_environment({"COMET_EVAL_HOME": str(home)})
    assert merged == {"COMET_EVAL_HOME": str(home), "OPENAI_API_KEY": "set"}


def test_empty_file_value_does_not_hide_a_process_value(home: Path) -> None:
    write_env(home, "BENCH_API_KEY=\n")
    assert load_environment(env_with(home, BENCH_API_KEY="proc"))["BENCH_API_KEY"] == "proc"


def test_env_file_syntax_quotes_comments_and_export(home: Path) -> None:
    write_env(home, "# a comment\nexport BENCH_MODEL=\"my model\"\nMY_AGENT_API_KEY='k=v#1'\n")
    merged = load_environment({"COMET_EVAL_HOME": str(home)})
    assert merged["BENCH_MODEL"] == "my model"
    assert merged["MY_AGENT_API_KEY"] == "k=v#1"


def test_comet_eval_home_moves_the_folder(tmp_path: Path) -> None:
    moved = tmp_path / "elsewhere"
    write_env(moved, "BENCH_API_KEY=moved\n")
    write_env(tmp_path / "home" / ".comet" / "eval", "BENCH_API_KEY=default\n")
    merged = load_environment({"COMET_EVAL_HOME": str(moved), "HOME": str(tmp_path / "home")})
    assert merged["BENCH_API_KEY"] == "moved"
    assert eval_home({"COMET_EVAL_HOME": str(moved)}) == moved


def test_default_folder_is_under_the_user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    write_env(tmp_path / ".comet" / "eval", "BENCH_API_KEY=default\n")
    assert eval_home({}) == tmp_path / ".comet" / "eval"
    assert load_environment({})["BENCH_API_KEY"] == "default"


def test_process_environment_defaults_to_os_environ(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_env(home, "BENCH_MODEL=file-model\n")
    monkeypatch.setenv("COMET_EVAL_HOME", str(home))
    monkeypatch.setenv("BENCH_API_KEY", "os-value")
    merged = load_environment()
    assert merged["BENCH_API_KEY"] == "os-value"
    assert merged["BENCH_MODEL"] == "file-model"


def test_missing_env_file_is_fine(home: Path) -> None:
    process = {"COMET_EVAL_HOME": str(home / "nowhere"), "A": "1", "B": ""}
    assert load_environment(process) == process


def test_explicit_env_file(tmp_path: Path, home: Path) -> None:
    path = write_env(tmp_path / "explicit", "BENCH_MODEL=explicit\n")
    write_env(home, "BENCH_MODEL=home\n")
    assert load_environment({"COMET_EVAL_HOME": str(home)}, env_file=path)["BENCH_MODEL"] == "explicit"


def test_load_environment_does_not_change_its_input(home: Path) -> None:
    write_env(home, "BENCH_MODEL=file-model\n")
    process = {"COMET_EVAL_HOME": str(home)}
    load_environment(process)
    assert process == {"COMET_EVAL_HOME": str(home)}


# --- resolve_credentials -----------------------------------------------------------------------

SPEC = CredentialSpec(
    secrets=("A_KEY", "A_TOKEN"),
    required_any=("A_KEY", "A_TOKEN"),
    aliases={"A_KEY": ("FIRST_FALLBACK", "BENCH_API_KEY")},
    settings=("A_SETTING",),
)


def test_only_declared_names_come_out() -> None:
    env = {"A_KEY": "k", "A_SETTING": "s", "OTHER_KEY": "o", "A_KEYS": "x", "PATH": "/bin", "BENCH_API_KEY": "b"}
    assert resolve_credentials(SPEC, env, agent="a") == {"A_KEY": "k", "A_SETTING": "s"}


def test_alias_applies_only_when_the_native_name_is_unset() -> None:
    assert resolve_credentials(SPEC, {"BENCH_API_KEY": "b"}, agent="a") == {"A_KEY": "b"}
    assert resolve_credentials(SPEC, {"A_KEY": "native", "BENCH_API_KEY": "b"}, agent="a") == {"A_KEY": "native"}
    assert resolve_credentials(SPEC, {"A_KEY": "", "BENCH_API_KEY": "b"}, agent="a") == {"A_KEY": "b"}


def test_aliases_are_tried_in_order_and_empty_ones_skipped() -> None:
    env = {"FIRST_FALLBACK": "first", "BENCH_API_KEY": "bench"}
    assert resolve_credentials(SPEC, env, agent="a") == {"A_KEY": "first"}
    env = {"FIRST_FALLBACK": "", "BENCH_API_KEY": "bench"}
    assert resolve_credentials(SPEC, env, agent="a") == {"A_KEY": "bench"}


def test_any_one_required_name_is_enough() -> None:
    assert resolve_credentials(SPEC, {"A_TOKEN": "t"}, agent="a") == {"A_TOKEN": "t"}


def test_missing_credentials_name_the_variables_and_the_env_file(home: Path) -> None:
    with pytest.raises(AgentError) as caught:
        resolve_credentials(SPEC, env_with(home, A_SETTING="s", A_KEY=""), agent="my-agent")
    assert str(caught.value) == (
        "agent 'my-agent' needs credentials: set A_KEY or A_TOKEN or BENCH_API_KEY or FIRST_FALLBACK "
        f"in the environment or in {home / '.env'}"
    )


def test_nothing_required_resolves_to_nothing() -> None:
    assert resolve_credentials(CredentialSpec(secrets=()), {"A_KEY": "k"}, agent="a") == {}


# --- Redactor ----------------------------------------------------------------------------------


def test_redactor_scrubs_text() -> None:
    redactor = Redactor(["sk-secret-123456"])
    assert redactor.text("key=sk-secret-123456; again sk-secret-123456") == "key=[redacted]; again [redacted]"
    assert redactor.text("nothing here") == "nothing here"


def test_redactor_ignores_short_values() -> None:
    redactor = Redactor(["12345", "", "x"])
    assert not redactor
    assert redactor.text("12345 x") == "12345 x"
    assert Redactor(["123456"])


def test_redactor_replaces_longest_first() -> None:
    redactor = Redactor(["abcdef", "abcdefghij"])
    assert redactor.text("<abcdefghij> <abcdef>") == "<[redacted]> <[redacted]>"
    assert Redactor(["abcdefghij", "abcdef"]).text("abcdefghij") == "[redacted]"


def test_redactor_scrubs_files_bytes_and_all(tmp_path: Path) -> None:
    path = tmp_path / "stream.jsonl"
    path.write_bytes(b'{"key": "sk-secret-123456"}\n\xff\xfe binary sk-secret-123456 \xe4\xbd\xa0\n')
    Redactor(["sk-secret-123456"]).file(path)
    assert path.read_bytes() == b'{"key": "[redacted]"}\n\xff\xfe binary [redacted] \xe4\xbd\xa0\n'


def test_redactor_non_ascii_secret(tmp_path: Path) -> None:
    path = tmp_path / "log.txt"
    path.write_text("token=pässwörd-λ\n", encoding="utf-8")
    Redactor(["pässwörd-λ"]).file(path)
    assert path.read_text(encoding="utf-8") == "token=[redacted]\n"


def test_redactor_leaves_clean_and_missing_files_alone(tmp_path: Path) -> None:
    clean = tmp_path / "clean.txt"
    clean.write_text("nothing secret\n")
    before = clean.stat().st_mtime_ns
    Redactor(["sk-secret-123456"]).file(clean)
    Redactor(["sk-secret-123456"]).file(tmp_path / "missing.txt")
    assert clean.read_text() == "nothing secret\n"
    assert clean.stat().st_mtime_ns == before
    assert not (tmp_path / "missing.txt").exists()


# --- built-in agents through create_agent --------------------------------------------------------


def test_claude_code_maps_bench_variables_to_its_native_config(home: Path, tmp_path: Path) -> None:
    env = env_with(
        home, BENCH_API_KEY="bench-key-000001", BENCH_BASE_URL="https://bench.example/v1", BENCH_MODEL="bench-model"
    )
    agent = create_agent("claude-code", env)
    argv, proc_env = run_turn(agent, tmp_path)
    assert proc_env == {
        **QUIET_CLAUDE,
        "HOME": "/root",
        "ANTHROPIC_API_KEY": "bench-key-000001",
        "ANTHROPIC_BASE_URL": "https://bench.example/v1",
    }
    assert argv[0] == "claude"
    assert argv[argv.index("--model") + 1] == "bench-model"
    assert "--resume" not in argv


def test_claude_code_explicit_anthropic_variables_win_over_bench(home: Path, tmp_path: Path) -> None:
    env = env_with(
        home,
        BENCH_API_KEY="bench-key-000001",
        ANTHROPIC_API_KEY="anthropic-key-000004",
        BENCH_BASE_URL="https://bench.example/v1",
        ANTHROPIC_BASE_URL="https://anthropic.example",
        BENCH_MODEL="bench-model",
        ANTHROPIC_MODEL="claude-model",
    )
    argv, proc_env = run_turn(create_agent("claude-code", env), tmp_path)
    assert proc_env["ANTHROPIC_API_KEY"] == "anthropic-key-000004"
    assert proc_env["ANTHROPIC_BASE_URL"] == "https://anthropic.example"
    assert argv[argv.index("--model") + 1] == "claude-model"
    assert "bench-key-000001" not in json.dumps([argv, proc_env])


def test_claude_code_model_precedence(home: Path) -> None:
    env = env_with(home, ANTHROPIC_AUTH_TOKEN="token-123456", BENCH_MODEL="b", ANTHROPIC_MODEL="a", BENCH_CC_MODEL="cc")
    assert create_agent("claude-code", env).model == "cc"  # type: ignore[attr-defined]
    assert create_agent("claude-code", env, model="cli").model == "cli"  # type: ignore[attr-defined]


def test_claude_code_auth_token_alone_is_enough(home: Path, tmp_path: Path) -> None:
    _, proc_env = run_turn(create_agent("claude-code", env_with(home, ANTHROPIC_AUTH_TOKEN="token-123456")), tmp_path)
    assert proc_env == {**QUIET_CLAUDE, "HOME": "/root", "ANTHROPIC_AUTH_TOKEN": "token-123456"}


def test_claude_code_loopback_base_url_points_at_the_container_host(home: Path, tmp_path: Path) -> None:
    env = env_with(home, BENCH_API_KEY="bench-key-000001", BENCH_BASE_URL="http://127.0.0.1:8765/api")
    _, proc_env = run_turn(create_agent("claude-code", env), tmp_path, host_address="172.17.0.1")
    assert proc_env["ANTHROPIC_BASE_URL"] == "http://172.17.0.1:8765/api"


def test_codex_uses_openai_or_codex_api_key(home: Path, tmp_path: Path) -> None:
    stream = [{"type": "thread.started", "thread_id": "t"}, {"type": "turn.completed", "usage": {}}]
    _, proc_env = run_turn(create_agent("codex", env_with(home, OPENAI_API_KEY="openai-key-000006")), tmp_path, stream)
    assert proc_env == {**CODEX_HOME_ENV, "OPENAI_API_KEY": "openai-key-000006"}
    assert CODEX_HOME_ENV["HOME"] == "/root"
    assert set(CODEX_HOME_ENV) == {"HOME", "CODEX_HOME"}

    _, proc_env = run_turn(create_agent("codex", env_with(home, CODEX_API_KEY="codex-key-000007")), tmp_path, stream)
    assert proc_env == {
        **CODEX_HOME_ENV,
        "OPENAI_API_KEY": "codex-key-000007",
        "CODEX_API_KEY": "codex-key-000007",
    }


def test_codex_maps_bench_variables(home: Path, tmp_path: Path) -> None:
    env = env_with(
        home, BENCH_API_KEY="bench-key-000001", BENCH_BASE_URL="https://bench.example/v1", BENCH_MODEL="bench-model"
    )
    stream = [{"type": "thread.started", "thread_id": "t"}, {"type": "turn.completed", "usage": {}}]
    argv, proc_env = run_turn(create_agent("codex", env), tmp_path, stream)
    assert proc_env == {
        **CODEX_HOME_ENV,
        "OPENAI_API_KEY": "bench-key-000001",
        "OPENAI_BASE_URL": "https://bench.example/v1",
    }
    assert argv[:2] == ["codex", "exec"]
    assert argv[argv.index("-m") + 1] == "bench-model"
    assert (
        'model_providers.comet={name="comet", base_url="https://bench.example/v1", env_key="OPENAI_API_KEY", '
        'wire_api="responses"}'
    ) in argv
    assert argv[-1] == "do it"
    assert "bench-key-000001" not in argv


def test_codex_native_key_wins_over_bench(home: Path) -> None:
    env = env_with(home, BENCH_API_KEY="bench-key-000001", OPENAI_API_KEY="openai-key-000006")
    assert create_agent("codex", env)._env == {"OPENAI_API_KEY": "openai-key-000006"}  # type: ignore[attr-defined]


def test_qoder_does_not_take_bench_base_url(home: Path, tmp_path: Path) -> None:
    env = env_with(home, BENCH_API_KEY="bench-key-000001", BENCH_BASE_URL="https://bench.example/v1")
    agent = create_agent("qoder", env)
    assert agent.base_url is None  # type: ignore[attr-defined]
    argv, proc_env = run_turn(agent, tmp_path)
    assert proc_env == {"HOME": "/root", "QODER_PERSONAL_ACCESS_TOKEN": "bench-key-000001"}
    assert argv[0] == "qodercli"
    assert "https://bench.example/v1" not in argv


def test_qoder_takes_its_own_base_url(home: Path, tmp_path: Path) -> None:
    env = env_with(
        home,
        QODER_PERSONAL_ACCESS_TOKEN="qoder-pat-000008",
        QODER_BASE_URL="https://qoder.example",
        BENCH_BASE_URL="https://bench.example/v1",
    )
    _, proc_env = run_turn(create_agent("qoder", env), tmp_path)
    assert proc_env == {
        "HOME": "/root",
        "QODER_PERSONAL_ACCESS_TOKEN": "qoder-pat-000008",
        "QODER_BASE_URL": "https://qoder.example",
    }


def test_codebuddy_maps_bench_variables_and_passes_its_settings(home: Path, tmp_path: Path) -> None:
    env = env_with(
        home,
        BENCH_API_KEY="bench-key-000001",
        BENCH_BASE_URL="https://bench.example/v1",
        CODEBUDDY_SMALL_FAST_MODEL="fast-model",
    )
    argv, proc_env = run_turn(create_agent("codebuddy", env), tmp_path)
    assert proc_env == {
        "HOME": "/root",
        "CODEBUDDY_API_KEY": "bench-key-000001",
        "CODEBUDDY_BASE_URL": "https://bench.example/v1",
        "CODEBUDDY_SMALL_FAST_MODEL": "fast-model",
    }
    assert argv[:1] == ["codebuddy"]
    assert "-y" in argv


@pytest.mark.parametrize(
    ("agent", "names"),
    [
        ("claude-code", "ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN or BENCH_API_KEY"),
        ("codex", "OPENAI_API_KEY or CODEX_API_KEY or BENCH_API_KEY"),
        ("qoder", "QODER_PERSONAL_ACCESS_TOKEN or BENCH_API_KEY"),
        ("codebuddy", "CODEBUDDY_API_KEY or CODEBUDDY_AUTH_TOKEN or BENCH_API_KEY"),
    ],
)
def test_missing_credentials_fail_in_create_agent(agent: str, names: str, home: Path) -> None:
    # Another agent's credentials and the judge's never satisfy this one.
    others = {k: v for k, v in EVERYTHING.items() if k.startswith(("LANGFUSE", "BENCH_JUDGE", "MY_AGENT", "AWS"))}
    with pytest.raises(AgentError) as caught:
        create_agent(agent, env_with(home, BENCH_BASE_URL="https://bench.example/v1", **others))
    assert str(caught.value) == (
        f"agent {agent!r} needs credentials: set {names} in the environment or in {home / '.env'}"
    )


def test_missing_credentials_fail_without_a_workspace(home: Path) -> None:
    """create_agent is the only step: nothing else is needed (or touched) to see the error."""
    with pytest.raises(AgentError, match="ANTHROPIC_API_KEY"):
        create_agent("claude-code", env_with(home, CODEX_API_KEY="codex-key-000007"))


@pytest.mark.parametrize(
    ("agent", "model", "expected"),
    [
        (
            "claude-code",
            "claude-model",
            {
                **QUIET_CLAUDE,
                "HOME": "/root",
                "ANTHROPIC_API_KEY": "anthropic-key-000004",
                "ANTHROPIC_AUTH_TOKEN": "anthropic-token-000005",
                "ANTHROPIC_BASE_URL": "https://anthropic.example",
            },
        ),
        (
            "codex",
            "codex-model",
            {
                **CODEX_HOME_ENV,
                "OPENAI_API_KEY": "openai-key-000006",
                "CODEX_API_KEY": "codex-key-000007",
                "OPENAI_BASE_URL": "https://openai.example/v1",
            },
        ),
        (
            "qoder",
            "qoder-model",
            {
                "HOME": "/root",
                "QODER_PERSONAL_ACCESS_TOKEN": "qoder-pat-000008",
                "QODER_BASE_URL": "https://qoder.example",
            },
        ),
        (
            "codebuddy",
            "codebuddy-model",
            {
                "HOME": "/root",
                "CODEBUDDY_API_KEY": "codebuddy-key-000009",
                "CODEBUDDY_AUTH_TOKEN": "codebuddy-token-000010",
                "CODEBUDDY_CUSTOM_HEADERS": "X-Team: secret-header-000011",
                "CODEBUDDY_BASE_URL": "https://codebuddy.example/v1",
                "CODEBUDDY_SMALL_FAST_MODEL": "fast-model",
                "CODEBUDDY_INTERNET_ENVIRONMENT": "internal",
            },
        ),
    ],
)
def test_an_agent_receives_none_of_the_other_agents_variables(
    agent: str, model: str, expected: dict[str, str], home: Path, tmp_path: Path
) -> None:
    stream: Any = CLAUDE_STREAM if agent != "codex" else [{"type": "turn.completed", "usage": {}}]
    argv, proc_env = run_turn(create_agent(agent, env_with(home, **EVERYTHING)), tmp_path, stream)
    assert proc_env == expected
    assert model in argv  # its own model, as a command-line flag
    foreign = set(EVERYTHING.values()) - set(expected.values()) - {model}
    leaked = [v for v in foreign if any(v in part for part in [*argv, *proc_env.values()])]
    assert leaked == []


def test_turn_scrubs_secrets_from_the_raw_stream(home: Path, tmp_path: Path) -> None:
    key = "anthropic-key-000004"
    stream: list[dict[str, Any]] = [
        {"type": "system", "subtype": "init", "session_id": "s-1", "claude_code_version": "2.1.112"},
        {"type": "result", "subtype": "success", "is_error": False, "result": f"your key is {key}"},
    ]
    agent = create_agent("claude-code", env_with(home, ANTHROPIC_API_KEY=key))
    workspace = canned(tmp_path / "ws", stream)
    request = cast(AgentRequest, SimpleNamespace(log_dir=tmp_path / "logs"))
    assert isinstance(agent, CliAgent)
    trajectory = agent.turn(
        workspace,
        request,
        "hi",
        session_id="s-0",
        index=3,
        home="/root",
        timeout_s=5,
    )
    raw = (tmp_path / "logs" / "agent.turn-3.jsonl").read_text(encoding="utf-8")
    assert key not in raw
    assert "your key is [redacted]" in raw
    assert trajectory.final_text == "your key is [redacted]"
    argv = workspace.commands[0].argv
    assert argv[argv.index("--resume") + 1] == "s-0"

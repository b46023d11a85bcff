"""The user's ~/.comet/eval/.env: the template, its creation (mode, never overwritten, concurrent first
runs) and how it is read; ``comet env`` masks every secret."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from scaffold.agents.credentials import load_environment
from scaffold.cli.main import main
from scaffold.cli.user_env import (
    MASK,
    ensure_user_env,
    environment_report,
    is_secret,
    template_text,
    template_variables,
)
from tests.support.factories import REPO

# Variables the harness sets for processes it starts, or reads from names it was handed: not settings.
_NOT_SETTINGS = {
    "COMET_WORKSPACE",
    "COMET_EXEC_ID",
    "COMET_SOLUTION_DIR",
    "CODEX_HOME",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
    "COMET_REQUIRE_DOCKER",
    "COMET_REQUIRE_BROWSER",
    # Names the judge's scrubbing removes or sets for the judge's process, and a constant: not settings.
    "BENCH_AUTH_TOKEN",
    "COMET_EVAL_AGENT_ROLE",
    "COMET_DIMENSIONS",
    "COMET_FOLDER",  # the name of a constant (the .comet folder), exported
}
_ENV_NAME = re.compile(
    r"[\"'](?:BENCH|COMET|ANTHROPIC|OPENAI|CODEX|QODER|CODEBUDDY|LANGSMITH|LANGFUSE)_[A-Z0-9_]+[\"']"
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "eval-home"
    monkeypatch.setenv("COMET_EVAL_HOME", str(folder))
    return folder


def test_the_template_lists_every_variable_the_code_reads(tmp_path: Path) -> None:
    text = template_text()
    names = {v.name for v in template_variables()}
    read = set()
    for package in ("scaffold", "pytest_comet"):
        for file in (REPO / package).rglob("*.py"):
            read |= {m.group(0)[1:-1] for m in _ENV_NAME.finditer(file.read_text(encoding="utf-8"))}
    missing = sorted(name for name in read - _NOT_SETTINGS if name not in text)
    assert not missing, f"env.template does not mention {missing}"
    # Every listed variable is commented out: a fresh file changes nothing.
    (tmp_path / ".env").write_text(text)
    assert load_environment({}, tmp_path / ".env") == {}
    assert {"BENCH_EVAL_AGENT", "BENCH_JUDGE_MODEL", "LANGFUSE_SECRET_KEY", "COMET_EVAL_ADAPTERS_DIR"} <= names


def test_first_run_creates_the_template_private(home: Path) -> None:
    created = ensure_user_env()
    assert created == home / ".env"
    assert created.read_text() == template_text()
    assert stat.S_IMODE(created.stat().st_mode) == 0o600
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert [p.name for p in home.iterdir()] == [".env"]  # no temporary file left behind


def test_mode_is_private_whatever_the_umask(home: Path) -> None:
    old = os.umask(0)
    try:
        created = ensure_user_env()
    finally:
        os.umask(old)
    assert created is not None
    assert stat.S_IMODE(created.stat().st_mode) == 0o600
    assert stat.S_IMODE(home.stat().st_mode) == 0o700


def test_an_existing_file_is_never_overwritten(home: Path) -> None:
    home.mkdir(mode=0o755)
    (home / ".env").write_text("BENCH_MODEL=mine\n")
    assert ensure_user_env() is None
    assert (home / ".env").read_text() == "BENCH_MODEL=mine\n"
    assert stat.S_IMODE(home.stat().st_mode) == 0o755  # the user's folder is left as it is


def test_a_dangling_symlink_is_not_followed(home: Path, tmp_path: Path) -> None:
    home.mkdir()
    target = tmp_path / "elsewhere"
    (home / ".env").symlink_to(target)
    assert ensure_user_env() is None
    assert not target.exists()


_RACE = """
import sys
from scaffold.cli.user_env import ensure_user_env
sys.stdin.readline()  # start together
print("created" if ensure_user_env() else "existed")
"""


def test_two_concurrent_first_runs_create_one_complete_file(home: Path) -> None:
    for _ in range(5):
        for child in home.iterdir() if home.exists() else ():
            child.unlink()
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _RACE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO
            )
            for _ in range(2)
        ]
        outputs = [p.communicate("go\n", timeout=60)[0].strip() for p in procs]
        assert all(p.returncode == 0 for p in procs)
        assert sorted(outputs) == ["created", "existed"]
        assert (home / ".env").read_text() == template_text()
        assert [p.name for p in home.iterdir()] == [".env"]


def test_process_environment_wins_and_empty_values_never_override(home: Path) -> None:
    home.mkdir()
    (home / ".env").write_text("BENCH_MODEL=from-file\nBENCH_BASE_URL=http://file\nBENCH_API_KEY=\nOPENAI_MODEL=f\n")
    env = load_environment({"COMET_EVAL_HOME": str(home), "BENCH_MODEL": "from-process", "BENCH_BASE_URL": ""})
    assert env["BENCH_MODEL"] == "from-process"
    assert env["BENCH_BASE_URL"] == "http://file"  # an empty process value does not hide the file's
    assert "BENCH_API_KEY" not in env or env["BENCH_API_KEY"] == ""  # an empty file value sets nothing
    assert env["OPENAI_MODEL"] == "f"


def test_secret_names() -> None:
    for name in ("BENCH_API_KEY", "ANTHROPIC_AUTH_TOKEN", "LANGFUSE_SECRET_KEY", "CODEBUDDY_CUSTOM_HEADERS"):
        assert is_secret(name)
    assert not is_secret("BENCH_MODEL")
    assert is_secret("MY_AGENT_PAT", frozenset({"MY_AGENT_PAT"}))


def _custom_adapter(home: Path) -> None:
    folder = home / "adapters" / "my-agent"
    folder.mkdir(parents=True)
    (folder / "adapter.yaml").write_text(
        "apiVersion: comet.eval.agent/v1alpha1\nkind: EvalAgentAdapter\n"
        "metadata: {id: my-agent, version: 1.0.0}\n"
        "runtime: {executable: my-agent, install: {kind: none}}\n"
        "credentials: [MY_AGENT_PASS]\nmodelEnv: MY_AGENT_MODEL\nbaseUrlEnv: MY_AGENT_URL\n"
        "capabilities: {singleTurn: true, resume: true, structuredEvents: true, telemetry: false,"
        " skillInvocationEvidence: true}\n"
    )


def test_comet_env_masks_every_secret(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _custom_adapter(home)
    values: dict[str, str] = {}
    lines = []
    for i, variable in enumerate(template_variables()):
        values[variable.name] = f"value-{i:03d}-{variable.name.lower()}"
    del values["COMET_EVAL_ADAPTERS_DIR"]  # the adapter registry stays beside the file
    values["MY_AGENT_PASS"] = "custom-secret-value"
    values["MY_AGENT_MODEL"] = "custom-model"
    values["BENCH_BASE_URL"] = "https://user:url-password-123@proxy.example/v1"
    # Half from the file, half from the process.
    names = sorted(values)
    for name in names[::2]:
        lines.append(f"{name}={values[name]}")
    (home / ".env").write_text("\n".join(lines) + "\n")
    for name in names[1::2]:
        monkeypatch.setenv(name, values[name])
    for args in (["env"], ["env", "--json"]):
        code = main(args)
        out, err = capsys.readouterr()
        assert code == 0, err
        text = out + err
        secrets = [v for n, v in values.items() if is_secret(n, frozenset({"MY_AGENT_PASS"}))]
        assert len(secrets) > 15
        for secret in [*secrets, "url-password-123", "user:"]:
            assert secret not in text
        assert "custom-model" in text  # what is not a secret is shown
        assert values["BENCH_MODEL"] in text
        assert "proxy.example/v1" in text
    rows = {row["name"]: row for row in json.loads(out)["settings"]}
    assert rows["BENCH_API_KEY"]["value"] == MASK
    assert rows["MY_AGENT_PASS"]["value"] == MASK and rows["MY_AGENT_PASS"]["secret"]
    assert rows[names[0]]["from"] == str(home / ".env")
    assert rows[names[1]]["from"] == "environment"


def test_comet_env_shows_defaults_and_what_is_not_set(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for variable in template_variables():
        monkeypatch.delenv(variable.name, raising=False)
    assert main(["env"]) == 0
    out = capsys.readouterr().out
    assert "not created yet" in out  # comet env only reads: it never creates the file
    assert not (home / ".env").exists()
    assert re.search(r"BENCH_EVAL_AGENT\s+claude-code", out)
    assert re.search(r"ANTHROPIC_API_KEY\s+not set", out)
    assert environment_report()  # the same rows as the command's

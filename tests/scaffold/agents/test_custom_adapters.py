"""Custom agents registered as ``<registry>/<id>/adapter.yaml``: what loads, what is rejected and why."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
import yaml

from scaffold.agents import create_agent, known_agents
from scaffold.agents.base import AgentRequest, AgentTraits
from scaffold.agents.cli import CliAgent, version_in
from scaffold.agents.custom import adapters_dir, load_adapters
from scaffold.errors import AgentError, Problem, SelectionError
from scaffold.workspaces.base import InstallSpec
from scaffold.workspaces.testing import Command, Reply, ScriptedWorkspace

BUILTIN = ("nop", "oracle", "claude-code", "codebuddy", "codex", "qoder")

# The example of the original Comet eval's documentation of custom agents, verbatim.
SEED_ADAPTER = """\
apiVersion: comet.eval.agent/v1alpha1
kind: EvalAgentAdapter
metadata: { id: my-agent, version: 1.0.0 }
runtime:
  executable: my-agent
  install: { kind: npm, package: my-agent, version: latest }
credentials: [MY_AGENT_API_KEY]
modelEnv: MY_AGENT_MODEL
baseUrlEnv: MY_AGENT_BASE_URL
capabilities:
  singleTurn: true
  resume: true
  structuredEvents: true
  telemetry: false
  skillInvocationEvidence: true
"""
VALID: dict[str, Any] = yaml.safe_load(SEED_ADAPTER)


class Registry:
    """A temporary adapters registry and the env mapping that points at it."""

    def __init__(self, root: Path, home: Path) -> None:
        self.root = root
        self.env = {"COMET_EVAL_ADAPTERS_DIR": str(root), "COMET_EVAL_HOME": str(home)}

    def add(self, folder: str, data: Mapping[str, Any] | str | None = None, /, **changes: Any) -> Path:
        """Write ``<folder>/adapter.yaml``: the original's example adapter with id *folder*, *changes* merged in."""
        if data is None:
            merged = copy.deepcopy(VALID)
            merged["metadata"]["id"] = folder
            merged["runtime"]["executable"] = folder
            for dotted, value in changes.items():
                *parents, last = dotted.split("__")
                node = merged
                for part in parents:
                    node = node[part]
                if value is DELETE:
                    del node[last]
                else:
                    node[last] = value
            data = merged
        path = self.root / folder / "adapter.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(data if isinstance(data, str) else yaml.safe_dump(dict(data), sort_keys=False))
        return path

    def problems(self) -> tuple[Problem, ...]:
        catalog = load_adapters(self.env, reserved=BUILTIN)
        return catalog.problems

    def specs(self) -> list[str]:
        return sorted(load_adapters(self.env, reserved=BUILTIN).specs)


DELETE = object()


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    root = tmp_path / "registry"
    root.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    return Registry(root, home)


def only_problem(registry: Registry) -> Problem:
    problems = registry.problems()
    assert len(problems) == 1, [str(p) for p in problems]
    assert registry.specs() == []
    return problems[0]


def canned(root: Path, stream: str) -> ScriptedWorkspace:
    """A workspace in *root* whose commands print *stream* (and a version for ``--version``)."""

    def answer(command: Command) -> Reply:
        return Reply(stdout="1.0.0\n" if "--version" in command.argv else stream)

    root.mkdir(exist_ok=True)
    return ScriptedWorkspace(root, answer)


# --- the registry --------------------------------------------------------------------------------


def test_seed_adapter_loads(registry: Registry) -> None:
    path = registry.root / "my-agent" / "adapter.yaml"
    path.parent.mkdir()
    path.write_text(SEED_ADAPTER)
    catalog = load_adapters(registry.env, reserved=BUILTIN)
    assert catalog.problems == ()
    spec = catalog.specs["my-agent"]
    assert spec.name == "my-agent"
    assert spec.install == InstallSpec("npm", "my-agent", "my-agent", "latest")
    assert spec.traits == AgentTraits(".agents/skills", "AGENTS.md", invokes_skills=True, reports_tokens=False)
    assert spec.credentials.secrets == ("MY_AGENT_API_KEY",)
    assert spec.credentials.required_any == ("MY_AGENT_API_KEY",)
    assert dict(spec.credentials.aliases) == {}
    assert spec.model_env == ("MY_AGENT_MODEL",)
    assert spec.base_url_env == ("MY_AGENT_BASE_URL",)


def test_create_agent_runs_a_custom_adapter_with_its_declared_credentials(registry: Registry, tmp_path: Path) -> None:
    registry.add("my-agent")
    env = {
        **registry.env,
        "MY_AGENT_API_KEY": "my-agent-key-000001",
        "MY_AGENT_MODEL": "your-model",
        "MY_AGENT_BASE_URL": "https://your-provider.example/v1",
        "BENCH_API_KEY": "bench-key-000002",
        "ANTHROPIC_API_KEY": "anthropic-key-000003",
        "OPENAI_API_KEY": "openai-key-000004",
    }
    agent = create_agent("my-agent", env)
    assert isinstance(agent, CliAgent)
    assert agent.name == "my-agent"
    assert agent.traits.skills_dir == ".agents/skills"
    stream = "".join(
        json.dumps(e) + "\n"
        for e in [
            {"type": "system", "subtype": "init", "session_id": "c-1", "version": "1.0.0"},
            {
                "type": "assistant",
                "message": {"id": "m1", "content": [{"type": "tool_use", "name": "Skill", "input": {"skill": "x"}}]},
            },
            {"type": "skill_invocation", "skill": "my-skill"},
            {"type": "result", "subtype": "success", "result": "done", "session_id": "c-1"},
        ]
    )
    workspace = canned(tmp_path / "ws", stream)
    request = cast(AgentRequest, SimpleNamespace(log_dir=tmp_path / "logs"))
    trajectory = agent.turn(
        workspace,
        request,
        "do the task",
        session_id="c-0",
        index=1,
        home="/root",
        timeout_s=10,
    )
    argv, proc_env = list(workspace.commands[0].argv), workspace.commands[0].env
    assert argv == [
        "my-agent",
        "-p",
        "do the task",
        "--output-format",
        "stream-json",
        "--model",
        "your-model",
        "--resume",
        "c-0",
    ]
    assert proc_env == {
        "HOME": "/root",
        "MY_AGENT_API_KEY": "my-agent-key-000001",
        "MY_AGENT_BASE_URL": "https://your-provider.example/v1",
    }
    assert trajectory.agent == "my-agent"
    assert trajectory.skills_invoked == ("my-skill",)  # only the skill_invocation event counts
    assert trajectory.session_id == "c-1"
    assert trajectory.agent_version == "1.0.0"


# A CLI without --version takes it for a prompt: its JSON stream, long enough that its last 400 bytes
# begin inside a line (`on_id": "13e3...`), as a custom adapter's did.
STREAM_FOR_VERSION = "".join(
    json.dumps(e) + "\n"
    for e in [
        {"type": "system", "subtype": "init", "session_id": "13e3f0c2-5b1d-4c70-9a51-8e7f2b6c", "tools": ["x"] * 40},
        {"type": "result", "subtype": "success", "result": "I do not know that option.", "session_id": "13e3f0c2"},
    ]
)


@pytest.mark.parametrize(
    "printed",
    [STREAM_FOR_VERSION, "error: unknown option '--version'\n", "Usage: my-agent -p PROMPT [options]\n", "\n"],
    ids=["json-stream", "error", "usage", "nothing"],
)
def test_a_version_answer_that_is_no_version_is_unknown(registry: Registry, tmp_path: Path, printed: str) -> None:
    registry.add("my-agent")
    agent = create_agent("my-agent", {**registry.env, "MY_AGENT_API_KEY": "my-agent-key-000001"})
    assert isinstance(agent, CliAgent)
    stream = json.dumps({"type": "result", "subtype": "success", "result": "done", "session_id": "c-1"}) + "\n"

    def answer(command: Command) -> Reply:
        return Reply(stdout=printed if "--version" in command.argv else stream)

    (tmp_path / "ws").mkdir()
    request = cast(AgentRequest, SimpleNamespace(log_dir=tmp_path / "logs"))
    trajectory = agent.turn(
        ScriptedWorkspace(tmp_path / "ws", answer), request, "go", session_id=None, index=1, home="/h", timeout_s=10
    )
    assert trajectory.agent_version is None  # shown as "unknown" in every report


@pytest.mark.parametrize(
    ("printed", "version"),
    [
        ("2.1.112 (Claude Code)\n", "2.1.112 (Claude Code)"),
        ("codex-cli 0.171.0\n", "codex-cli 0.171.0"),
        ("\nmy-agent v1.4\nbuilt 2026-11-30\n", "my-agent v1.4"),
        ("1.0.0", "1.0.0"),
    ],
)
def test_a_version_answer_is_its_first_line(printed: str, version: str) -> None:
    assert version_in(printed) == version


def test_custom_adapter_gets_no_bench_mapping(registry: Registry, tmp_path: Path) -> None:
    registry.add("my-agent")
    env = {**registry.env, "BENCH_API_KEY": "bench-key-000002", "BENCH_MODEL": "m", "BENCH_BASE_URL": "https://b"}
    with pytest.raises(AgentError) as caught:
        create_agent("my-agent", env)
    home = Path(registry.env["COMET_EVAL_HOME"])
    assert str(caught.value) == (
        f"agent 'my-agent' needs credentials: set MY_AGENT_API_KEY in the environment or in {home / '.env'}"
    )
    agent = create_agent("my-agent", {**env, "MY_AGENT_API_KEY": "my-agent-key-000001"})
    assert agent.model is None  # type: ignore[attr-defined]
    assert agent.base_url is None  # type: ignore[attr-defined]
    assert agent._env == {"MY_AGENT_API_KEY": "my-agent-key-000001"}  # type: ignore[attr-defined]


def test_two_credentials_both_forwarded_either_enough(registry: Registry) -> None:
    registry.add("two-keys", credentials=["TWO_API_KEY", "TWO_AUTH_TOKEN"], modelEnv=DELETE, baseUrlEnv=DELETE)
    agent = create_agent("two-keys", {**registry.env, "TWO_AUTH_TOKEN": "token-000001", "OTHER": "x"})
    assert agent._env == {"TWO_AUTH_TOKEN": "token-000001"}  # type: ignore[attr-defined]
    assert agent.redactor.text("token-000001") == "[redacted]"  # type: ignore[attr-defined]


def test_adapter_without_credentials_needs_none(registry: Registry) -> None:
    registry.add("keyless", credentials=DELETE, runtime__install={"kind": "none"})
    agent = create_agent("keyless", registry.env)
    assert agent._env == {}  # type: ignore[attr-defined]
    assert agent.install == InstallSpec("none", "keyless", None, None)


def test_known_agents_lists_builtins_and_valid_adapters_only(registry: Registry) -> None:
    registry.add("my-agent")
    registry.add("zz-agent")
    registry.add("broken", capabilities__resume=False)
    (registry.root / "README.md").write_text("not an adapter folder")
    assert known_agents(registry.env) == sorted([*BUILTIN, "my-agent", "zz-agent"])


def test_registry_under_comet_eval_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    registry = Registry(home / "adapters", home)
    registry.add("home-agent")
    env = {"COMET_EVAL_HOME": str(home)}
    assert adapters_dir(env) == home / "adapters"
    assert "home-agent" in known_agents(env)
    assert create_agent("home-agent", {**env, "MY_AGENT_API_KEY": "k-000001"}).name == "home-agent"


def test_adapters_dir_setting_wins_over_comet_eval_home(tmp_path: Path) -> None:
    env = {"COMET_EVAL_HOME": str(tmp_path / "home"), "COMET_EVAL_ADAPTERS_DIR": str(tmp_path / "reg")}
    assert adapters_dir(env) == tmp_path / "reg"


def test_missing_registry_is_empty(tmp_path: Path) -> None:
    catalog = load_adapters({"COMET_EVAL_ADAPTERS_DIR": str(tmp_path / "none")})
    assert dict(catalog.specs) == {}
    assert catalog.problems == ()


# --- invalid adapters ----------------------------------------------------------------------------


@pytest.mark.parametrize("ident", ["My-Agent", "a", "a" * 33, "1agent", "my_agent", "-agent"])
def test_bad_id_pattern(registry: Registry, ident: str) -> None:
    file = registry.add(ident)
    problem = only_problem(registry)
    assert problem.file == file
    assert problem.key == "metadata.id"
    assert problem.value == ident
    assert "lowercase letter" in problem.message
    assert "2-32" in problem.message


@pytest.mark.parametrize("ident", ["ab", "a" * 32, "a1-b2"])
def test_id_pattern_boundaries_accepted(registry: Registry, ident: str) -> None:
    registry.add(ident)
    assert registry.problems() == ()
    assert registry.specs() == [ident]


def test_id_differing_from_its_folder(registry: Registry) -> None:
    file = registry.add("my-agent", metadata={"id": "other-agent"})
    problem = only_problem(registry)
    assert str(problem) == f"{file}: metadata.id: must equal the folder name 'my-agent' (got 'other-agent')"


def test_more_than_two_credentials(registry: Registry) -> None:
    file = registry.add("my-agent", credentials=["A_KEY", "B_KEY", "C_KEY"])
    problem = only_problem(registry)
    assert problem.file == file
    assert problem.key == "credentials"
    assert "at most 2" in problem.message


@pytest.mark.parametrize("secret", ["sk-ant-api03-Zx9Qw8Er7Ty6", "ghp_abcdEFGH1234", "my secret value"])
def test_credential_that_looks_like_a_secret_value(registry: Registry, secret: str) -> None:
    file = registry.add("my-agent", credentials=["MY_AGENT_API_KEY", secret])
    problem = only_problem(registry)
    assert problem.file == file
    assert problem.key == "credentials[1]"
    assert "environment variable name" in problem.message
    assert secret not in str(problem)  # a secret pasted by mistake is never echoed


def test_credentials_as_a_string_is_rejected_without_echoing_it(registry: Registry) -> None:
    registry.add("my-agent", credentials="sk-ant-api03-Zx9Qw8Er7Ty6")
    problem = only_problem(registry)
    assert problem.key == "credentials"
    assert "sk-ant-api03" not in str(problem)


def test_env_name_fields_must_be_variable_names(registry: Registry) -> None:
    file = registry.add("my-agent", modelEnv="my-model")
    problem = only_problem(registry)
    assert (problem.file, problem.key, problem.value) == (file, "modelEnv", "my-model")


def test_install_kind_not_npm_pip_or_none(registry: Registry) -> None:
    file = registry.add("my-agent", runtime__install={"kind": "brew", "package": "my-agent"})
    problem = only_problem(registry)
    assert (problem.file, problem.key, problem.value) == (file, "runtime.install.kind", "brew")
    assert "'npm', 'pip' or 'none'" in problem.message


@pytest.mark.parametrize("kind", ["npm", "pip"])
def test_package_install_without_package(registry: Registry, kind: str) -> None:
    file = registry.add("my-agent", runtime__install={"kind": kind})
    problem = only_problem(registry)
    assert str(problem) == f"{file}: runtime.install.package: install kind {kind} needs a package"


@pytest.mark.parametrize("capability", ["singleTurn", "resume", "structuredEvents", "skillInvocationEvidence"])
def test_required_capability_false(registry: Registry, capability: str) -> None:
    file = registry.add("my-agent", **{f"capabilities__{capability}": False})
    problem = only_problem(registry)
    assert str(problem) == f"{file}: capabilities: real evaluations need these capabilities true: {capability}"


def test_required_capabilities_missing_count_as_false(registry: Registry) -> None:
    registry.add("my-agent", capabilities={"telemetry": True})
    problem = only_problem(registry)
    assert problem.message == (
        "real evaluations need these capabilities true: singleTurn, resume, structuredEvents, skillInvocationEvidence"
    )


def test_telemetry_may_be_false(registry: Registry) -> None:
    registry.add("my-agent", capabilities__telemetry=False)
    assert registry.specs() == ["my-agent"]


def test_capability_must_be_a_real_boolean(registry: Registry) -> None:
    file = registry.add("my-agent", capabilities__resume="yes")
    problem = only_problem(registry)
    assert (problem.file, problem.key, problem.value) == (file, "capabilities.resume", "yes")


@pytest.mark.parametrize(
    ("changes", "key"),
    [
        ({"args": ["--json"]}, "args"),
        ({"runtime__command": "x"}, "runtime.command"),
        ({"capabilities__streaming": True}, "capabilities.streaming"),
        ({"metadata__name": "My Agent"}, "metadata.name"),
    ],
)
def test_unknown_keys(registry: Registry, changes: dict[str, Any], key: str) -> None:
    file = registry.add("my-agent", **changes)
    problem = only_problem(registry)
    assert (problem.file, problem.key) == (file, key)
    assert problem.message.startswith("unknown key; allowed: ")


def test_unknown_top_level_key_lists_the_allowed_ones(registry: Registry) -> None:
    registry.add("my-agent", args=["--json"])
    assert only_problem(registry).message == (
        "unknown key; allowed: apiVersion, baseUrlEnv, capabilities, credentials, kind, metadata, modelEnv, runtime"
    )


@pytest.mark.parametrize(
    ("changes", "key", "value"),
    [
        ({"apiVersion": "comet.eval.agent/v1"}, "apiVersion", "comet.eval.agent/v1"),
        ({"kind": "AgentAdapter"}, "kind", "AgentAdapter"),
    ],
)
def test_wrong_api_version_or_kind(registry: Registry, changes: dict[str, Any], key: str, value: str) -> None:
    file = registry.add("my-agent", **changes)
    problem = only_problem(registry)
    assert (problem.file, problem.key, problem.value) == (file, key, value)


@pytest.mark.parametrize("missing", ["apiVersion", "runtime", "capabilities", "metadata"])
def test_required_sections(registry: Registry, missing: str) -> None:
    file = registry.add("my-agent", **{missing: DELETE})
    problem = only_problem(registry)
    assert str(problem) == f"{file}: {missing}: required key is missing"


def test_invalid_yaml(registry: Registry) -> None:
    file = registry.add("my-agent", "apiVersion: [unclosed\nkind: : :\n")
    problem = only_problem(registry)
    assert problem.file == file
    assert problem.key == "line 2, column 5"  # where the parser stopped
    assert problem.message.startswith("not valid YAML: ")


def test_yaml_that_is_not_a_mapping(registry: Registry) -> None:
    file = registry.add("my-agent", "- apiVersion\n- kind\n")
    problem = only_problem(registry)
    assert problem.file == file


def test_empty_adapter_file(registry: Registry) -> None:
    registry.add("my-agent", "")
    assert {p.key for p in registry.problems()} == {"apiVersion", "kind", "metadata", "runtime", "capabilities"}


def test_not_utf8(registry: Registry) -> None:
    path = registry.root / "my-agent" / "adapter.yaml"
    path.parent.mkdir()
    path.write_bytes(b"apiVersion: \xff\xfe\n")
    assert only_problem(registry).message.startswith("not valid YAML")


def test_folder_without_adapter_yaml(registry: Registry) -> None:
    (registry.root / "my-agent").mkdir()
    problem = only_problem(registry)
    assert (
        str(problem)
        == f"{registry.root / 'my-agent' / 'adapter.yaml'}: missing: each adapter folder holds an adapter.yaml"
    )


def test_invalid_adapter_does_not_hide_valid_ones(registry: Registry) -> None:
    registry.add("aa-broken", capabilities__resume=False)
    registry.add("my-agent")
    assert registry.specs() == ["my-agent"]
    assert len(registry.problems()) == 1


def test_id_equal_to_a_builtin_agent_is_rejected_naming_file_and_field(registry: Registry) -> None:
    file = registry.add("codex", runtime__install={"kind": "npm", "package": "evil-codex"})
    problem = only_problem(registry)
    assert str(problem) == (
        f"{file}: metadata.id: is a built-in agent's id, which an adapter cannot replace; give the adapter "
        "another id (and folder name) (got 'codex')"
    )
    assert known_agents(registry.env).count("codex") == 1
    # Choosing that agent is a usage error naming the adapter, never a silent run of the built-in.
    with pytest.raises(SelectionError) as caught:
        create_agent("codex", {**registry.env, "OPENAI_API_KEY": "openai-key-000001"})
    assert str(caught.value) == f"--agent=codex: a custom adapter claims this built-in agent's id: {problem}"
    # Other agents are not its business.
    agent = create_agent("claude-code", {**registry.env, "ANTHROPIC_API_KEY": "anthropic-key-000001"})
    assert agent.install == InstallSpec("npm", "claude", "@anthropic-ai/claude-code", "2.1.112")


def test_folder_named_after_a_builtin_with_another_id_is_rejected_too(registry: Registry) -> None:
    file = registry.add("oracle", metadata={"id": "my-oracle", "version": "1.0.0"})
    with pytest.raises(SelectionError) as caught:
        create_agent("oracle", registry.env)
    assert f"{file}: metadata.id: must equal the folder name 'oracle'" in str(caught.value)


@pytest.mark.parametrize("builtin", ["oracle", "nop", "claude-code"])
def test_every_builtin_name_is_reserved(registry: Registry, builtin: str) -> None:
    registry.add(builtin)
    assert "built-in agent's id" in only_problem(registry).message
    with pytest.raises(SelectionError, match=f"--agent={builtin}: a custom adapter claims"):
        create_agent(builtin, {**registry.env, "ANTHROPIC_API_KEY": "anthropic-key-000001"})


def test_adapter_folder_symlinked_outside_the_registry(registry: Registry, tmp_path: Path) -> None:
    outside = Registry(tmp_path / "outside", tmp_path / "home")
    outside.add("evil")
    (registry.root / "evil").symlink_to(tmp_path / "outside" / "evil", target_is_directory=True)
    problem = only_problem(registry)
    assert problem.file == registry.root / "evil"
    assert problem.message == "adapter folder points outside the adapters registry"
    assert problem.value == str((tmp_path / "outside" / "evil").resolve())
    assert "evil" not in known_agents(registry.env)
    with pytest.raises(SelectionError) as caught:
        create_agent("evil", {**registry.env, "MY_AGENT_API_KEY": "k-000001"})
    assert "points outside the adapters registry" in str(caught.value)


def test_adapter_file_symlinked_outside_the_registry(registry: Registry, tmp_path: Path) -> None:
    outside = Registry(tmp_path / "outside", tmp_path / "home")
    target = outside.add("evil")
    (registry.root / "evil").mkdir()
    (registry.root / "evil" / "adapter.yaml").symlink_to(target)
    problem = only_problem(registry)
    # The symlinked file is named, and where it leads; its folder is a plain folder of the registry.
    assert problem.file == registry.root / "evil" / "adapter.yaml"
    assert problem.message == (
        f"symlink to a file outside the adapters registry {registry.root}: copy the file into "
        f"{registry.root / 'evil'} instead"
    )
    assert problem.value == str(target.resolve())
    assert "evil" not in known_agents(registry.env)


def test_executable_on_path_is_not_an_agent(
    registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "my-tool"
    tool.write_text('#!/bin/sh\necho \'{"type":"skill_invocation","skill":"x"}\'\n')
    tool.chmod(0o755)
    path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    monkeypatch.setenv("PATH", path)
    env = {**registry.env, "PATH": path, "MY_AGENT_API_KEY": "k-000001"}
    assert os.access(tool, os.X_OK)
    with pytest.raises(SelectionError) as caught:
        create_agent("my-tool", env)
    assert str(caught.value).startswith("--agent=my-tool: unknown agent; known: ")
    assert "invalid" not in str(caught.value)
    assert "my-tool" not in known_agents(env)


def test_unknown_agent_lists_the_known_ones(registry: Registry) -> None:
    registry.add("my-agent")
    with pytest.raises(SelectionError) as caught:
        create_agent("nobody", registry.env)
    assert str(caught.value) == (
        "--agent=nobody: unknown agent; known: claude-code, codebuddy, codex, my-agent, nop, oracle, qoder"
    )


def test_selection_error_for_an_invalid_adapter_names_its_problems(registry: Registry) -> None:
    file = registry.add("my-agent", capabilities__resume=False, runtime__install={"kind": "pip"})
    registry.add("other-agent", capabilities__singleTurn=False)
    with pytest.raises(SelectionError) as caught:
        create_agent("my-agent", {**registry.env, "MY_AGENT_API_KEY": "k-000001"})
    message = str(caught.value)
    assert message == (
        "--agent=my-agent: unknown agent; known: claude-code, codebuddy, codex, nop, oracle, qoder; "
        f"its adapter is invalid: {file}: runtime.install.package: install kind pip needs a package; "
        f"{file}: capabilities: real evaluations need these capabilities true: resume"
    )
    assert "other-agent" not in message


def test_selection_error_for_invalid_yaml_names_the_file(registry: Registry) -> None:
    file = registry.add("my-agent", "metadata: {id: [\n")
    with pytest.raises(SelectionError) as caught:
        create_agent("my-agent", registry.env)
    assert f"its adapter is invalid: {file}: line 2, column 1: not valid YAML" in str(caught.value)

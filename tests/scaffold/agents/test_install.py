"""Agent programs: the check at collection (a missing CLI is a usage error), where a run finds a CLI
(``$COMET_AGENT_BIN_DIR``, the comet agents prefix, ``PATH``), ``comet agents install`` and ``comet agents list``."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from scaffold.agents import create_agent
from scaffold.agents.install import require_program
from scaffold.agents.locate import default_prefix, locate
from scaffold.cli.main import main
from scaffold.errors import AgentError
from tests.support.factories import TaskFactory

PLANTED = "sk-planted-agents-list-0123456789"
FILE_PLANTED = "sk-planted-dotenv-9876543210"

# A stand-in for npm: records its argv, and for every NAME@VERSION it is asked for creates the package's
# package.json and the program named in $FAKE_NPM_BINS, as `npm install --prefix DIR` would.
FAKE_NPM = """#!{python}
import json, os, sys
from pathlib import Path
args = sys.argv[1:]
with open(os.environ["FAKE_NPM_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
prefix = Path(args[args.index("--prefix") + 1])
bins = json.loads(os.environ["FAKE_NPM_BINS"])
for spec in (a for a in args[1:] if not a.startswith("-") and a != str(prefix)):
    name, _, version = spec.rpartition("@")
    package = prefix / "node_modules" / name
    package.mkdir(parents=True, exist_ok=True)
    (package / "package.json").write_text(json.dumps({{"name": name, "version": version}}))
    program = prefix / "node_modules" / ".bin" / bins[name]
    program.parent.mkdir(parents=True, exist_ok=True)
    program.write_text("#!/bin/sh\\necho " + version + " fake\\n")
    program.chmod(0o755)
"""


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private comet home (COMET_EVAL_HOME), no COMET_AGENT_BIN_DIR and a PATH with no agent CLI on it."""
    folder = tmp_path / "comet-home"
    folder.mkdir()
    monkeypatch.setenv("COMET_EVAL_HOME", str(folder))
    monkeypatch.delenv("COMET_AGENT_BIN_DIR", raising=False)
    monkeypatch.delenv("BENCH_EVAL_AGENT", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("bash", "sh", "python3", "env"):  # what task scripts and shebangs need, nothing more
        found = next((Path(d) / tool for d in os.defpath.split(os.pathsep) if (Path(d) / tool).exists()), None)
        if found:
            (bare / tool).symlink_to(found)
    monkeypatch.setenv("PATH", str(bare))
    return folder


@pytest.fixture
def fake_npm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: Path) -> Path:
    """``npm`` on PATH that records every argv in the returned file."""
    tools = tmp_path / "npm-bin"
    executable(tools / "npm", FAKE_NPM.format(python=sys.executable))
    log = tmp_path / "npm-argv.jsonl"
    monkeypatch.setenv("PATH", os.pathsep.join([str(tools), os.environ["PATH"]]))
    monkeypatch.setenv("FAKE_NPM_LOG", str(log))
    bins = {"@anthropic-ai/claude-code": "claude", "@openai/codex": "codex", "@qoder-ai/qodercli": "qodercli"}
    monkeypatch.setenv("FAKE_NPM_BINS", json.dumps(bins))
    return log


def npm_calls(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


# --- the check at collection -------------------------------------------------------------------------------


def baseline_suite(suite: TaskFactory) -> None:
    suite.treatments("common.yaml", {"CONTROL": {"description": "baseline", "skills": []}})
    for name in ("one", "two", "three"):
        suite.task(name)


def test_missing_cli_is_a_usage_error_before_any_workspace(
    pytester: pytest.Pytester, suite: TaskFactory, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: 3 xfailed, exit 0 (every trial's agent 'cannot start', on baseline-only tasks)."""
    baseline_suite(suite)
    monkeypatch.setenv("CODEBUDDY_API_KEY", "x-key-for-codebuddy")
    workspaces = pytester.path / "ws"
    result = pytester.runpytest(f"--workspace-root={workspaces}", "--agent=codebuddy")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*--agent=codebuddy: its program 'codebuddy' is not installed; looked in "
            f"the comet agents prefix ({home / 'agents'}/node_modules/.bin:*); PATH (*)."
            " Install it with `comet agents install codebuddy` (npm @tencent-ai/codebuddy-code@*",
        ]
    )
    result.assert_outcomes()  # nothing ran
    assert not workspaces.exists()
    assert not (pytester.path / "local" / "logs").exists()


def test_a_cli_in_the_bin_dir_is_found_and_run(
    pytester: pytest.Pytester, suite: TaskFactory, home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """$COMET_AGENT_BIN_DIR alone (not on PATH) is where the local backend finds and starts the CLI."""
    suite.treatments("common.yaml", {"CONTROL": {"description": "baseline", "skills": []}})
    suite.task("one")
    bin_dir = tmp_path / "agents-bin"
    line = {"type": "result", "subtype": "success", "is_error": False, "result": "ran from the bin dir"}
    executable(bin_dir / "codebuddy", f"#!/bin/sh\necho '{json.dumps(line)}'\n")
    monkeypatch.setenv("COMET_AGENT_BIN_DIR", str(bin_dir))
    monkeypatch.setenv("CODEBUDDY_API_KEY", "x-key-for-codebuddy")
    result = pytester.runpytest(f"--workspace-root={pytester.path / 'ws'}", "--agent=codebuddy", "--experiment-id=e")
    assert result.ret != pytest.ExitCode.USAGE_ERROR, result.stderr.str()
    stream = pytester.path / "local" / "logs" / "experiments" / "e" / "trials" / "one-CONTROL-r1" / "agent.turn-1.jsonl"
    assert "ran from the bin dir" in stream.read_text(), stream.with_name("agent.turn-1.stderr.log").read_text()


def test_lookup_order_bin_dir_then_prefix_then_path(home: Path, tmp_path: Path) -> None:
    on_path = executable(tmp_path / "path-bin" / "claude", "#!/bin/sh\n")
    in_prefix = executable(default_prefix(os.environ) / "node_modules" / ".bin" / "claude", "#!/bin/sh\n")
    in_bin_dir = executable(tmp_path / "given" / "claude", "#!/bin/sh\n")
    env = {"COMET_EVAL_HOME": str(home), "PATH": str(on_path.parent)}
    assert locate("claude", env).found == in_prefix
    assert locate("claude", {**env, "COMET_AGENT_BIN_DIR": str(in_bin_dir.parent)}).found == in_bin_dir
    in_prefix.unlink()
    assert locate("claude", env).found == on_path
    (tmp_path / "not-executable").write_text("")
    assert locate("claude", {**env, "PATH": str(tmp_path)}).found is None


def test_docker_backend_needs_the_agent_layer_or_its_installer(home: Path, tmp_path: Path) -> None:
    agent = create_agent("claude-code", {"ANTHROPIC_API_KEY": "x-key-for-claude", "COMET_EVAL_HOME": str(home)})
    with pytest.raises(AgentError, match=r"not in the docker agent layer .*npm is not on PATH"):
        require_program(agent, "docker", os.environ)
    from scaffold.workspaces.docker.agent_layer import agent_folder

    assert agent.install is not None
    folder = agent_folder(agent.install)
    folder.mkdir(parents=True)
    (folder / ".complete").write_text(agent.install.key + "\n")
    require_program(agent, "docker", os.environ)  # installed in the layer: nothing to ask for


# --- comet agents install -------------------------------------------------------------------------------


def test_install_runs_npm_with_the_pins_into_the_default_prefix_runs_then_find(
    fake_npm: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["agents", "install"]) == 0
    prefix = home / "agents"
    assert npm_calls(fake_npm) == [
        [
            "install",
            "--prefix",
            str(prefix),
            "--save-exact",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            "@anthropic-ai/claude-code@2.1.112",
            "@openai/codex@0.171.0",
            "@qoder-ai/qodercli@1.1.52",
        ]
    ]
    assert locate("claude", os.environ).found == prefix / "node_modules" / ".bin" / "claude"
    agent = create_agent("claude-code", {**os.environ, "ANTHROPIC_API_KEY": "x-key-for-claude"})
    require_program(agent, "local", os.environ)  # the check at collection passes now
    assert "claude-code: " + str(prefix / "node_modules" / ".bin" / "claude") in capsys.readouterr().out
    assert main(["agents", "install", "codex"]) == 0  # already there at the pinned version: npm is not asked
    assert len(npm_calls(fake_npm)) == 1


def test_install_into_another_prefix_says_how_runs_find_it(
    fake_npm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BENCH_CC_VERSION", "2.0.0")
    assert main(["agents", "install", "claude-code", "--prefix", str(tmp_path / "p")]) == 0
    assert npm_calls(fake_npm)[0][-1] == "@anthropic-ai/claude-code@2.0.0"
    assert f"COMET_AGENT_BIN_DIR={tmp_path / 'p' / 'node_modules' / '.bin'}" in capsys.readouterr().out


def test_install_names_unknown_agents_and_a_missing_npm(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["agents", "install", "gpt-9"]) == 2
    assert "comet agents install gpt-9: unknown agent; known: claude-code, codebuddy, codex, qoder" in (
        capsys.readouterr().err
    )
    assert main(["agents", "install", "codex"]) == 2
    assert "npm is not on PATH" in capsys.readouterr().err


def test_ci_installs_through_the_command_so_the_pins_live_in_one_place() -> None:
    from tests.support.factories import REPO

    ci = (REPO / ".ci" / "run").read_text()
    assert "comet agents install --prefix" in ci
    assert "claude-code@" not in ci


# --- comet agents list ------------------------------------------------------------------------------------


def test_list_shows_programs_versions_and_masked_credentials(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bin_dir = tmp_path / "given"
    executable(bin_dir / "claude", "#!/bin/sh\necho '9.9.9 (Fake Code)'\n")
    monkeypatch.setenv("COMET_AGENT_BIN_DIR", str(bin_dir))
    monkeypatch.setenv("ANTHROPIC_API_KEY", PLANTED)
    (home / ".env").write_text(f"OPENAI_API_KEY={FILE_PLANTED}\n")
    assert main(["agents", "list"]) == 0
    out = capsys.readouterr().out
    assert PLANTED not in out
    assert FILE_PLANTED not in out
    assert f"claude: {bin_dir / 'claude'}, version 9.9.9 (Fake Code)" in out
    assert "ANTHROPIC_API_KEY=******** (environment), ANTHROPIC_AUTH_TOKEN not set" in out
    assert f"OPENAI_API_KEY=******** ({home / '.env'})" in out
    assert "codex: not found (comet agents install codex)" in out
    assert "oracle  (built-in; runs no program of its own)" in out
    assert main(["agents", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    claude = next(a for a in listed if a["agent"] == "claude-code")
    assert claude["found"] == str(bin_dir / "claude")
    assert claude["credentials"][0] == {"name": "ANTHROPIC_API_KEY", "set": True, "from": "environment"}
    assert PLANTED not in json.dumps(listed)


def test_list_includes_custom_adapters(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = home / "adapters" / "my-agent"
    folder.mkdir(parents=True)
    (folder / "adapter.yaml").write_text(
        "apiVersion: comet.eval.agent/v1alpha1\nkind: EvalAgentAdapter\nmetadata: {id: my-agent}\n"
        "runtime: {executable: my-agent, install: {kind: pip, package: my-agent, version: 1.0.0}}\n"
        "credentials: [MY_AGENT_API_KEY]\n"
        "capabilities: {singleTurn: true, resume: true, structuredEvents: true, skillInvocationEvidence: true}\n"
    )
    assert main(["agents", "list"]) == 0
    out = capsys.readouterr().out
    assert f"my-agent  (custom ({folder / 'adapter.yaml'}); pip my-agent@1.0.0)" in out
    assert "MY_AGENT_API_KEY not set" in out


def test_a_real_npm_install_into_a_tmp_prefix(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real npm and registry, with a small package behind a custom adapter (the agent CLIs themselves
    are hundreds of megabytes); runs where .ci/run runs, skips without npm elsewhere."""
    import shutil

    npm = shutil.which("npm", path=os.defpath + os.pathsep + "/usr/local/bin")
    if npm is None:
        if os.environ.get("COMET_REQUIRE_AGENT_CLIS") == "1":
            pytest.fail("npm is not installed and COMET_REQUIRE_AGENT_CLIS=1 requires it")
        pytest.skip("npm is not installed")
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(npm).parent), os.environ["PATH"]]))
    folder = home / "adapters" / "semver-agent"
    folder.mkdir(parents=True)
    (folder / "adapter.yaml").write_text(
        "apiVersion: comet.eval.agent/v1alpha1\nkind: EvalAgentAdapter\nmetadata: {id: semver-agent}\n"
        "runtime: {executable: semver, install: {kind: npm, package: semver, version: 7.8.6}}\n"
        "credentials: [SEMVER_AGENT_KEY]\n"
        "capabilities: {singleTurn: true, resume: true, structuredEvents: true, skillInvocationEvidence: true}\n"
    )
    assert main(["agents", "install", "semver-agent"]) == 0
    program = home / "agents" / "node_modules" / ".bin" / "semver"
    assert locate("semver", os.environ).found == program
    assert json.loads((home / "agents" / "package.json").read_text())["dependencies"] == {"semver": "7.8.6"}
    agent = create_agent("semver-agent", {**os.environ, "SEMVER_AGENT_KEY": "x-key-for-semver"})
    require_program(agent, "local", os.environ)

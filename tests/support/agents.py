"""The real agent CLIs in tests: where they are, and the planted credentials the tests look for."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scaffold.agents.locate import locate
from tests.support.factories import REPO

__all__ = ["ANTHROPIC_KEY", "BIN_DIR", "OPENAI_KEY", "SCRIPTS", "require_cli", "scripted_cli_env"]

SCRIPTS = REPO / "tests" / "data" / "e2e"
BIN_DIR = Path(os.environ.get("COMET_AGENT_BIN_DIR", "/opt/comet-agents/node_modules/.bin"))
ANTHROPIC_KEY = "sk-ant-e2e-planted-secret-0123456789"
OPENAI_KEY = "sk-openai-e2e-planted-secret-9876543210"


def scripted_cli_env(home: Path, url: str | None) -> dict[str, str]:
    """The environment that points Claude Code and Codex at a scripted model server at *url* (None: no
    base URL; the caller adds its own), with the planted keys and a HOME of the test's."""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
        "BENCH_CC_MODEL": "claude-sonnet-4-5",
        "OPENAI_API_KEY": OPENAI_KEY,
        "CODEX_MODEL": "gpt-5-codex",
    }
    if url is not None:
        env.update(ANTHROPIC_BASE_URL=url, OPENAI_BASE_URL=url + "/v1")
    return env


def scripted_run_env(tmp_path: Path, url: str, cli_dir: str) -> dict[str, str]:
    """The environment of a whole run (comet eval, or the pytest suite in a subprocess) of a real CLI
    against the scripted model server at *url*: the CLI's folder first on PATH, private TMPDIR and
    comet-eval home under *tmp_path*, and the docker backend's settings and agent cache of this machine."""
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return {
        **scripted_cli_env(tmp_path / "home", url),
        "PATH": cli_dir + os.pathsep + os.environ.get("PATH", os.defpath),
        "TMPDIR": str(tmp_path / "tmp"),
        "COMET_EVAL_HOME": str(tmp_path / "eval-home"),
        "LANG": "C.UTF-8",
        # The docker backend mounts the agent CLIs installed once per machine in this cache.
        "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache"),
        **{k: v for k, v in os.environ.items() if k in ("DOCKER_HOST", "COMET_DOCKER_COPY", "COMET_DOCKER_STANDBY")},
    }


def require_cli(name: str) -> str:
    """The folder of CLI *name*: where a run finds it (scaffold.agents.locate), else .ci/run's folder."""
    found = locate(name, os.environ).found or (BIN_DIR / name if (BIN_DIR / name).exists() else None)
    if found:
        return str(Path(found).parent)
    message = f"the {name} CLI is not installed (.venv/bin/comet agents install NAME; see .ci/run)"
    if os.environ.get("COMET_REQUIRE_AGENT_CLIS") == "1":
        pytest.fail(message + " and COMET_REQUIRE_AGENT_CLIS=1 requires it")
    pytest.skip(message)


FAKE_AGENT = REPO / "tests" / "data" / "fake_agent.py"


def register_fake_agent(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Register tests/data/fake_agent.py as the custom agent ``fake`` for sessions run under *root*: its
    adapter file, the adapters folder and an eval home in the environment, its key set."""
    import yaml

    adapters = root / "adapters"
    (adapters / "fake").mkdir(parents=True)
    adapter = {
        "apiVersion": "comet.eval.agent/v1alpha1",
        "kind": "EvalAgentAdapter",
        "metadata": {"id": "fake", "version": "1.0.0"},
        "runtime": {"executable": str(FAKE_AGENT), "install": {"kind": "none"}},
        "credentials": ["FAKE_API_KEY"],
        "capabilities": {"singleTurn": True, "resume": True, "structuredEvents": True, "skillInvocationEvidence": True},
    }
    (adapters / "fake" / "adapter.yaml").write_text(yaml.safe_dump(adapter))
    monkeypatch.setenv("COMET_EVAL_ADAPTERS_DIR", str(adapters))
    monkeypatch.setenv("COMET_EVAL_HOME", str(root / "home"))
    monkeypatch.setenv("FAKE_API_KEY", "fake-key-0123456789")

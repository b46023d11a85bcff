"""``comet eval`` on a skill of ours without eval.yaml (the markdown-report skill), end to end: the real Claude
Code and Codex CLIs against the scripted model server generate the tasks, CONTROL and the skill run, the
reports are written and the exit status is 0; the second run reuses the cache (the model server's request
log shows no generator call); a generator answer invalid twice exits 3 with the partial report.

``comet`` runs as its own process, as a user starts it. Needs the CLIs; skipped locally when absent.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from scaffold.catalog.builtin import BUILTIN_SKILLS_DIR
from scaffold.modelserver import ScriptedModelServer, load_script
from tests.support.agents import ANTHROPIC_KEY, OPENAI_KEY, SCRIPTS, require_cli, scripted_cli_env

pytestmark = [pytest.mark.agent_cli, pytest.mark.slow]

GENERATOR_TEXT = "You design evaluation tasks"
COMET = str(Path(sys.executable).with_name("comet"))
_PASSED = (
    "DOCKER_HOST",
    "COMET_DOCKER_COPY",
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "COMET_AGENT_BIN_DIR",
)


class Eval:
    def __init__(self, tmp: Path, agent: str, script: str) -> None:
        self.tmp, self.agent, self.script = tmp, agent, script
        self.skill = tmp / "markdown-report"
        shutil.copytree(BUILTIN_SKILLS_DIR / "markdown-report", self.skill)
        self.log = tmp / "model-requests.jsonl"
        # One server for every run of a test: its URL (the port) is part of the cache key, as the base URL.
        self.server = ScriptedModelServer(load_script(SCRIPTS / script), host="0.0.0.0", log_path=self.log)
        self.url = "http://127.0.0.1:" + self.server.__enter__().url.rsplit(":", 1)[1]

    def close(self) -> None:
        self.server.__exit__(None, None, None)

    def run(self, *extra: str) -> tuple[int, str, list[dict[str, Any]]]:
        cli = {"claude-code": "claude", "codex": "codex"}[self.agent]
        before = len(self.log.read_text().splitlines()) if self.log.exists() else 0
        env = {
            **scripted_cli_env(self.tmp / "home", self.url),
            "PATH": require_cli(cli) + os.pathsep + os.environ["PATH"],
            "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
            # The engine, and what npm needs to install the agent CLI for a container (the machine's CA
            # certificates: HOME is this test's, so the user's npm settings are not found there).
            **{k: v for k, v in os.environ.items() if k in _PASSED or k.lower().startswith("npm_config_")},
        }
        proc = subprocess.run(
            [COMET, "eval", str(self.skill), "--agent", self.agent, *extra],
            cwd=self.tmp, env=env, capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip
        lines = self.log.read_text().splitlines()[before:] if self.log.exists() else []
        requests = [json.loads(line) for line in lines]
        for path in self.tmp.rglob("*"):
            if path.is_file() and not path.is_symlink() and path.suffix in (".json", ".jsonl", ".md", ".yaml", ".html"):
                text = path.read_text(errors="replace")
                assert ANTHROPIC_KEY not in text and OPENAI_KEY not in text, f"secret written to {path}"
        return proc.returncode, proc.stdout + proc.stderr, requests


def _generator_calls(requests: list[dict[str, Any]]) -> int:
    return sum(GENERATOR_TEXT in json.dumps(r.get("body")) for r in requests)


def _experiment(out: str) -> Path:
    line = next(line for line in out.splitlines() if line.startswith("summary: "))
    return Path(line.removeprefix("summary: ")).parent


@pytest.fixture
def make_eval(tmp_path: Path) -> Iterator[Callable[[str, str], Eval]]:
    made: list[Eval] = []

    def make(agent: str, script: str) -> Eval:
        made.append(Eval(tmp_path, agent, script))
        return made[-1]

    yield make
    for ev in made:
        ev.close()


@pytest.fixture(params=["local", "docker"])
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "docker":
        request.getfixturevalue("docker_base_image")  # skips without an engine, fails in CI
    return str(request.param)


# Both agents locally, Claude Code on Docker too: generation and reuse are the same code for every agent
# and backend, and the Codex CLI on Docker is proven by tests/scaffold/agents/test_e2e_agents.py (the fourth
# combination cost a minute of CI for nothing new).
@pytest.mark.parametrize(
    "backend,agent,script",
    [
        ("local", "claude-code", "claude-eval-generated.yaml"),
        ("docker", "claude-code", "claude-eval-generated.yaml"),
        ("local", "codex", "codex-eval-generated.yaml"),
    ],
)
def test_generates_runs_and_reuses(
    make_eval: Callable[[str, str], Eval], request: pytest.FixtureRequest, backend: str, agent: str, script: str
) -> None:
    if backend == "docker":
        request.getfixturevalue("docker_base_image")  # skips without an engine, fails in CI
    ev = make_eval(agent, script)
    rc, out, requests = ev.run("--backend", backend, "--count", "1")
    assert rc == 0, out
    assert "Tasks generated: release-summary-report, report-settings-file" in out
    assert _generator_calls(requests) > 0
    experiment = _experiment(out)
    for name in ("summary.md", "comparison_report.md", "results.jsonl"):
        assert (experiment / name).is_file(), name
    results = [json.loads(line) for line in (experiment / "results.jsonl").read_text().splitlines()]
    assert sorted((r["task"], r["treatment"]) for r in results) == [
        ("release-summary-report", "CONTROL"),
        ("release-summary-report", "DYNAMIC_SKILL"),
        ("report-settings-file", "CONTROL"),
        ("report-settings-file", "DYNAMIC_SKILL"),
    ]
    cache = ev.skill / ".comet" / "eval" / "generated" / "markdown-report"
    assert len(list(cache.glob("*/eval.yaml"))) == 1

    rc, out, requests = ev.run("--backend", backend, "--count", "1")
    assert rc == 0, out
    assert "generated cache" in out and "Tasks generated" not in out
    assert requests and _generator_calls(requests) == 0  # the trials ran; the generator was not called


def test_invalid_twice_exits_3_with_the_partial_report(make_eval: Callable[[str, str], Eval]) -> None:
    ev = make_eval("claude-code", "claude-generator-invalid.yaml")
    rc, out, requests = ev.run()
    assert rc == 3, out
    assert _generator_calls(requests) == 2  # the first attempt and the repair
    assert "Partial report: " in out and "expected 2-4 tasks, got 1" in out
    report = Path(out.split("Partial report: ", 1)[1].split()[0])
    assert report.name == "summary.md" and report.is_relative_to(ev.skill / ".comet" / "eval" / "runs")
    assert "Evaluation stopped during task generation" in report.read_text()
    meta = json.loads((report.parent / "metadata.json").read_text())
    assert meta["attribution"] == "task_generation" and meta["attempt_count"] == 2


def test_runs_until_decided_and_passes_its_gate(make_eval: Callable[[str, str], Eval]) -> None:
    """The issue's own example, with the real Claude Code CLI: the skill passes its 2 generated tasks every
    time, CONTROL half the time; `comet eval` runs until decided (its default) and answers "improvement on
    these tasks" within --max-count 10, the gate passes (exit 0), and the reports name the skill and gate."""
    ev = make_eval("claude-code", "claude-eval-until-decided.yaml")
    gate = "DYNAMIC_SKILL better than CONTROL"
    rc, out, _ = ev.run("--backend", "local", "--max-count", "10", "--gate", gate)
    assert rc == 0, out
    assert "until decided, at most 10 per task and treatment" in out
    experiment = _experiment(out)
    summary = (experiment / "summary.md").read_text()
    assert "**DYNAMIC_SKILL** vs CONTROL: **improvement** (on these tasks" in summary, summary
    assert "run until decided, on these tasks: decided at round 7: improvement" in summary
    assert f"| `{gate}` | on these tasks | PASS |" in summary
    assert "- **DYNAMIC_SKILL**: markdown-report from " in summary  # the skill, its source and hash
    assert "skill used in 14 of 14 trials" in summary
    # The real CLI reports the skills it loads, so CONTROL's trials are watched for a leak (none here).
    assert "- **CONTROL** installs no skill, and none was loaded in 14 trial(s) that would show it: no leak" in summary
    gates = json.loads((experiment / "gates.json").read_text())
    assert gates["passed"] is True
    trials = {p.parent.name for p in (experiment / "trials").glob("*/record.json")}
    assert max(int(name.rsplit("-r", 1)[1]) for name in trials) <= 8  # rounds 8-10 not needed (one ahead)


def test_alike_treatments_stop_at_the_cap_without_a_verdict(make_eval: Callable[[str, str], Eval]) -> None:
    ev = make_eval("claude-code", "claude-eval-alike.yaml")
    rc, out, _ = ev.run("--backend", "local", "--max-count", "2", "--gate", "DYNAMIC_SKILL better than CONTROL")
    assert rc == 1, out  # the gate: no improvement claimed
    summary = (_experiment(out) / "summary.md").read_text()
    assert "**DYNAMIC_SKILL** vs CONTROL: **no significant difference**" in summary
    assert "undecided: the run reached --max-count after 2 whole round(s)" in summary

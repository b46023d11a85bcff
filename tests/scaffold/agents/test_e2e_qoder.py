"""The real published Qoder CLI (npm ``@qoder-ai/qodercli``, pinned) under the harness.

What can be proven here, and what cannot: Qoder's CLI signs in to Qoder's own service (it exchanges the
personal access token there) before it sends any model request, and it has no setting that points it at
a standard provider endpoint (custom providers are gated by the account). So the scripted model server
cannot drive a successful Qoder run; its stream is Claude Code's format and is parsed by that parser
(tests/test_streams.py). What the real CLI proves in CI is the rest of the adapter: the command line we
build is accepted (qodercli 1.1.52 refused the ``--verbose`` that Claude Code needs, which this test
caught), the token reaches the CLI and no file the run wrote contains it, and the failure it ends with
here (no route to Qoder's service) is recorded as an excluded infrastructure failure, not a failed trial.

Needs the CLI (on PATH or in $COMET_AGENT_BIN_DIR); skips locally when absent, required in CI.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scaffold.agents import create_agent
from scaffold.catalog.builtin import BUILTIN_TASKS_DIR, BUILTIN_TREATMENTS_DIR
from scaffold.experiment.cases import Case
from tests.support.agents import require_cli
from tests.support.factories import make_runner

pytestmark = [pytest.mark.agent_cli, pytest.mark.slow]

QODER_PAT = "qoder-pat-e2e-planted-secret-24680"


def test_real_qoder_cli_runs_and_its_unreachable_service_is_excluded_noise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", require_cli("qodercli") + os.pathsep + os.environ["PATH"])
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path / "user-home"),
        "QODER_PERSONAL_ACCESS_TOKEN": QODER_PAT,
        "NO_BROWSER": "1",
    }
    runner = make_runner([BUILTIN_TASKS_DIR], [BUILTIN_TREATMENTS_DIR], tmp_path)
    runner.agent = create_agent("qoder", env)
    try:
        record = runner.run(Case("generic-skill-smoke", "SKILL_MARKDOWN_REPORT", 1)).record
    finally:
        runner.backend.close()

    stderr = "".join(p.read_text(errors="replace") for p in tmp_path.rglob("agent.turn-*.stderr.log"))
    assert stderr, "the CLI wrote nothing: it did not run"
    assert "unknown option" not in stderr, stderr  # every flag of our command line is one qodercli knows
    assert record.agent.name == "qoder"
    assert record.agent.version and record.agent.version.startswith("1.1.52"), record.agent
    # Offline the CLI cannot resolve its service; were it reachable, the planted token would be refused.
    assert record.noise.category == "excluded", record.noise
    assert record.noise.reason in ("network_failed", "auth_failed"), record.noise
    assert record.verdict != "passed"
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert QODER_PAT not in path.read_text(errors="replace"), f"secret written to {path}"

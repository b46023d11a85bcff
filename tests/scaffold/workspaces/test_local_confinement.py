"""The local backend's agents run confined where bubblewrap is installed: a spying agent (a CLI of its
own, a script on $COMET_AGENT_BIN_DIR that looks for what it should not see) finds no harness process and
so no credential, no other trial's workspace and none of the experiment's records, and changes none of
them; where bubblewrap is not used, one warning says exactly what is not isolated.

Real pytest sessions of the plugin in a subprocess, holding a planted secret in their environment."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.support.factories import TaskFactory

SECRET = "planted-secret-0f3c9a"


def _require_bwrap() -> None:
    if shutil.which("bwrap") is None:
        message = "bubblewrap (bwrap) is not installed (apt-get install bubblewrap; see .ci/run)"
        if os.environ.get("COMET_REQUIRE_BWRAP") == "1":
            pytest.fail(message + " and COMET_REQUIRE_BWRAP=1 requires it")
        pytest.skip(message)


def spy(logs: Path) -> str:
    """An agent CLI that reports what it can see, tries to change another trial's record, does the task
    and answers as Claude Code's stream does."""
    experiment = logs / "experiments" / "spy"
    result = json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "done"})
    return f"""#!/bin/sh
found=$(grep -l {SECRET} /proc/[0-9]*/environ 2>/dev/null | wc -l)
echo "environ-with-secret: $found"
echo "workspaces: $(ls "$(dirname "$COMET_WORKSPACE")" | wc -l)"
echo "records: $(ls {experiment}/trials 2>/dev/null | wc -l)"
echo "processes: $(ls -d /proc/[0-9]* | wc -l)"
for record in {experiment}/trials/*/record.json; do [ -f "$record" ] && echo tampered >> "$record"; done
echo done > out.txt
echo '{result}'
"""


def _session(project: Path, logs: Path, *, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    bin_dir = project / "agents-bin"
    bin_dir.mkdir(exist_ok=True)
    agent = bin_dir / "codebuddy"
    agent.write_text(spy(logs))
    agent.chmod(0o755)
    env = {**env, "COMET_AGENT_BIN_DIR": str(bin_dir), "CODEBUDDY_API_KEY": "x-key", "COMET_SPY_SECRET": SECRET}
    argv = [sys.executable, "-m", "pytest", "local/tests", "-q", "-p", "no:cacheprovider", "--agent=codebuddy"]
    argv += [f"--logs-dir={logs}", "--experiment-id=spy", "--count=3", "--keep-workspaces=all"]
    return subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, timeout=300, check=False)


def _seen(logs: Path) -> dict[str, dict[str, int]]:
    """What each trial's spy printed, by case id."""
    seen = {}
    for log in sorted((logs / "experiments" / "spy" / "trials").glob("*/agent.turn-1.jsonl")):
        pairs = (line.split(": ") for line in log.read_text().splitlines() if ": " in line and line[0] != "{")
        seen[log.parent.name] = {key: int(value) for key, value in pairs}
    return seen


def test_a_confined_agent_sees_no_secret_no_other_trial_and_no_record(
    suite: TaskFactory, pytester: pytest.Pytester, scratch: Path
) -> None:
    _require_bwrap()
    logs = pytester.path / "logs"
    suite.task("spy")
    run = _session(pytester.path, logs, env=dict(os.environ))
    out = run.stdout + run.stderr
    assert "unconfined" not in out and "trials: 3 passed" in out, out[-3000:]
    seen = _seen(logs)
    assert len(seen) == 3, out[-3000:]
    for case, what in seen.items():
        assert what["environ-with-secret"] == 0, (case, what)
        assert what["workspaces"] == 1, (case, what)  # its own only, though the others are kept
        assert what["records"] == 0, (case, what)
        assert what["processes"] < 10, (case, what)  # its own few: no harness, no other session
    for record in (logs / "experiments" / "spy" / "trials").glob("*/record.json"):
        assert json.loads(record.read_text())["verdict"] == "passed"  # untampered: still whole JSON


def test_unconfined_agents_are_said_to_be_so_once(suite: TaskFactory, pytester: pytest.Pytester, scratch: Path) -> None:
    logs = pytester.path / "logs"
    suite.task("spy")
    run = _session(pytester.path, logs, env={**os.environ, "COMET_LOCAL_CONFINE": "0"})
    out = run.stdout + run.stderr
    warning = (
        "the local backend runs agents unconfined (COMET_LOCAL_CONFINE=0 turns it off): an agent can read and "
        "change other trials' workspaces and this experiment's records, and read the environment "
        "(credentials included) of the harness's processes"
    )
    assert " ".join(out.split()).count(warning) == 1, out[-3000:]
    seen = _seen(logs)
    # What the warning says is so: the later trials saw the kept workspaces and records of the earlier.
    assert max(what["workspaces"] for what in seen.values()) >= 3, seen  # (with the owner marks beside them)
    assert max(what["records"] for what in seen.values()) >= 1, seen
    assert all(what["environ-with-secret"] >= 1 for what in seen.values()), seen


def test_what_a_confined_command_leaves_running_ends_with_it(factory: TaskFactory, tmp_path: Path) -> None:
    """A background job, a child in its own session and one with no environment at all (no marker to be
    found by): confined, none outlives the command that started it."""
    _require_bwrap()
    from scaffold.catalog.tasks import load_catalog
    from scaffold.workspaces.local import LocalBackend
    from tests.support.sessions import gone_within, kill_all, processes, with_token

    factory.task("t")
    task = load_catalog([factory.tasks_dir]).tasks["t"]
    token = f"comet-confined-{uuid.uuid4().hex}"
    sleep = f"python3 -c 'import time; time.sleep(600)' {token}"
    command = f"{sleep} & setsid {sleep} & env -i PATH=/usr/bin:/bin setsid {sleep} & sleep 0.5; echo started"
    backend = LocalBackend(tmp_path / "ws")
    try:
        workspace = backend.create(task, "exp/t-CONTROL-r1")
        result = workspace.exec(
            ["sh", "-c", command], timeout=60, env={}, stdout_path=tmp_path / "out", stderr_path=tmp_path / "err"
        )
        assert result.stdout().strip() == "started", result.stderr()
        assert gone_within(with_token(token), 2.0) == []
    finally:
        kill_all(processes(with_token(token)))
        backend.close()


def test_the_probe_answers_for_the_path_it_is_asked_under(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An answer found while PATH was narrowed (a test, a caller's child environment) does not outlive it:
    a process that later looks with its full PATH finds bwrap again."""
    from scaffold.workspaces.confine import probe

    found = probe()
    monkeypatch.setenv("PATH", str(tmp_path))
    assert probe() == ("", "bubblewrap (bwrap) is not installed")
    monkeypatch.undo()
    assert probe() == found

"""Harbor-format tasks run natively on Docker, end to end through the pytest suite (tests/data/harbor-tasks).

Every example task passes with the oracle and fails with nop; the SkillsBench-style one runs under CONTROL
(no skill anywhere in its image) and TASK_SKILLS with the real Claude Code CLI against the scripted model
server. Base images come through ``--image-alias`` from the offline Debian stand-ins. The verifier's
contract (the same container after the agent, what it left running, the reward files) is checked on
tasks made here for each case.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from scaffold.modelserver import ScriptedModelServer, load_script
from tests.support.agents import ANTHROPIC_KEY, SCRIPTS, require_cli, scripted_run_env
from tests.support.factories import REPO

pytestmark = [pytest.mark.docker, pytest.mark.slow]

HARBOR_TASKS = REPO / "tests" / "data" / "harbor-tasks"
TASKS = sorted(p.name for p in HARBOR_TASKS.iterdir() if (p / "task.toml").is_file())
SKILLS_TASK = "ledger-check-codes"


def _aliases(tag: str) -> list[str]:
    return [f"--image-alias=python:3.13-slim-bookworm={tag}", f"--image-alias=ubuntu:24.04={tag}"]


def _suite(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None, tasks: Path = HARBOR_TASKS
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Run the local suite on Harbor tasks (the docker backend) and return the run and its experiment."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "pytest", str(REPO / "local" / "tests"), f"--tasks-dir={tasks}"]
    argv += ["--backend=docker", "-p", "no:cacheprovider", "-q"]
    argv += [f"--workspace-root={tmp_path / 'ws'}", f"--logs-dir={tmp_path / 'logs'}", *args]
    result = subprocess.run(
        argv, cwd=tmp_path, env=env or dict(os.environ), capture_output=True, text=True, timeout=1200, check=False
    )
    experiments = tmp_path / "logs" / "experiments"
    (experiment,) = experiments.iterdir() if experiments.is_dir() else (tmp_path,)
    return result, experiment


def _records(experiment: Path) -> dict[str, dict[str, Any]]:
    return {
        trial.name: json.loads((trial / "record.json").read_text())
        for trial in sorted((experiment / "trials").iterdir())
        if (trial / "record.json").is_file()
    }


def test_every_example_passes_with_the_oracle_and_fails_with_nop(tmp_path: Path, docker_trixie_image: str) -> None:
    oracle, experiment = _suite(tmp_path / "oracle", "--agent=oracle", *_aliases(docker_trixie_image))
    records = _records(experiment)
    assert sorted({r["task"] for r in records.values()}) == TASKS, oracle.stdout + oracle.stderr
    for name, record in records.items():
        reward = next(c for c in record["checks"] if c["name"] == "reward")
        # The skills task's own oracle imports its skill: under CONTROL it must fail (SkillsBench's
        # 3d-scan-calc does the same), which also proves CONTROL's image holds no skill.
        expected = "failed" if name == f"{SKILLS_TASK}-CONTROL-r1" else "passed"
        assert record["verdict"] == expected, (name, record["checks"], record["errors"])
        assert reward["status"] == expected
        assert record["noise"]["category"] == "included"
    # ctrf.json tests are named checks; reward.json decides where there is no reward.txt.
    access = records["access-log-summary-CONTROL-r1"]
    assert sum(c["source"] == "ctrf" for c in access["checks"]) >= 3
    assert any(c["source"] == "ctrf" and c["status"] == "skipped" for c in access["checks"])
    warehouse = records["warehouse-totals-CONTROL-r1"]
    assert any("reward.json" in c["reason"] for c in warehouse["checks"] if c["name"] == "reward")
    completion = {d["name"]: d["score"] for d in access["dimensions"]}["completion"]
    assert completion == 1.0
    # The verifier's files are kept in the trial's folder, as Harbor keeps verifier/ per trial.
    assert (experiment / "trials" / "kv-http-server-CONTROL-r1" / "verifier" / "reward.txt").is_file()

    nop, experiment = _suite(tmp_path / "nop", "--agent=nop", *_aliases(docker_trixie_image))
    records = _records(experiment)
    assert len(records) == len(TASKS) + 1, nop.stdout + nop.stderr  # the skills task runs twice
    for name, record in records.items():
        assert record["verdict"] == "failed", (name, record["checks"], record["errors"])
        assert record["noise"]["category"] == "included", name  # a reward of 0 is a result, not noise


def test_a_harbor_task_needs_the_docker_backend(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "pytest", str(REPO / "local" / "tests"), f"--tasks-dir={HARBOR_TASKS}"]
    argv += ["--backend=local", "--agent=oracle", "-p", "no:cacheprovider", "-q", f"--logs-dir={tmp_path}"]
    result = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 4, result.stdout + result.stderr
    assert "Harbor-format tasks" in result.stderr and "--backend docker" in result.stderr
    assert "multi-container-api also runs several containers from a docker-compose.yaml" in result.stderr


def test_a_task_image_that_cannot_be_built_is_built_once_and_reported_as_build_failed(
    tmp_path: Path, docker_base_image: str, docker_client: Any
) -> None:
    """A Dockerfile step that fails every time: each trial is a task error (``build_failed``), never noise
    and never retried, with its build log in its folder; two xdist workers build the image once."""
    probe = uuid.uuid4().hex
    task = tmp_path / "tasks" / "unbuildable"
    for sub in ("environment", "tests", "solution"):
        (task / sub).mkdir(parents=True)
    (task / "task.toml").write_text('version = "1.0"\n[agent]\ntimeout_sec = 60\n[verifier]\ntimeout_sec = 30\n')
    (task / "instruction.md").write_text("Nothing to do.\n")
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\ntrue\n")
    (task / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    # The label makes the layer before the failing RUN this test's own: each build attempt starts one
    # container from it, which the engine's events show.
    (task / "environment" / "Dockerfile").write_text(
        f"FROM {docker_base_image}\nLABEL comet-eval-test.probe={probe}\nRUN echo build-marker-{probe} && exit 3\n"
    )
    since = int(time.time()) - 1
    result, experiment = _suite(
        tmp_path / "run", "--count=3", "-n", "2", "--html", "--experiment-id=unbuildable", tasks=tmp_path / "tasks"
    )
    until = int(time.time()) + 1
    output = result.stdout + result.stderr
    records = _records(experiment)
    assert len(records) == 3, output
    for name, record in records.items():
        assert record["verdict"] == "error", (name, output[-3000:])
        assert [e["type"] for e in record["errors"]] == ["ImageBuildError"], record["errors"]
        assert "failed at `RUN echo build-marker-" in record["errors"][0]["message"]
        assert (record["noise"]["category"], record["noise"]["reason"]) == ("excluded", "build_failed")
        assert not record.get("attempts"), name  # --retry-excluded (2 by default) left it alone
        log = (experiment / "trials" / name / "build.log").read_text()
        assert (
            log.startswith("# comet-eval/task-unbuildable-without-skills:")
            and f"RUN echo build-marker-{probe} && exit 3" in log
        )
        assert "returned a non-zero code: 3" in log
    workers = {record["worker"] for record in records.values()}
    assert workers == {"gw0", "gw1"}, workers  # both workers had a trial of the image
    layers = docker_client.images.list(all=True, filters={"label": f"comet-eval-test.probe={probe}"})
    try:
        assert len(layers) == 1
        started = docker_client.events(
            since=since, until=until, decode=True, filters={"type": "container", "event": "create"}
        )
        runs = [e for e in started if e["Actor"]["Attributes"].get("image") == layers[0].id]
        assert len(runs) == 1, runs  # one build attempt for the three trials of the session
    finally:
        for layer in layers:
            docker_client.images.remove(layer.id, force=True)
    summary = (experiment / "summary.md").read_text()
    assert "| CONTROL | 0 | 0 | 0 | 3 (build_failed 3) |" in summary
    comparison = (experiment / "comparison_report.md").read_text()
    assert "| CONTROL | 3 | 0 | 0 | 0 | — | build_failed 3 | 100% |" in comparison
    html = (experiment / "report.html").read_text()
    assert "harness or task errors" in html and "build_failed 3" in html


@pytest.mark.agent_cli
def test_claude_code_under_control_and_the_tasks_skills(tmp_path: Path, docker_trixie_image: str) -> None:
    cli_dir = require_cli("claude")
    log = tmp_path / "model-requests.jsonl"
    with ScriptedModelServer(
        load_script(SCRIPTS / "claude-harbor-skills.yaml"), host="0.0.0.0", log_path=log
    ) as server:
        url = "http://127.0.0.1:" + server.url.rsplit(":", 1)[1]
        env = scripted_run_env(tmp_path, url, cli_dir)
        result, experiment = _suite(
            tmp_path,
            "--agent=claude-code",
            f"--task={SKILLS_TASK}",
            "--count=2",
            *_aliases(docker_trixie_image),
            env=env,
        )
    output = result.stdout + result.stderr
    records = _records(experiment)
    assert len(records) == 4, output
    for name, record in records.items():
        assert record["noise"]["category"] == "included", (name, record["noise"], record["errors"])
        invoked = record["trajectory"]["skills_invoked"]
        dimensions = {d["name"]: d["score"] for d in record["dimensions"]}
        if record["treatment"] == "TASK_SKILLS":
            assert record["verdict"] == "passed", (name, record["checks"], record["errors"])
            assert "zrx7-checksum" in invoked and dimensions["skill_invocation"] == 1.0
        else:
            # No skill in the CONTROL image: the Skill call found nothing and the script was missing.
            assert record["verdict"] == "failed", (name, record["checks"])
            assert "zrx7-checksum" not in invoked
    # The statistics of the project over the pair: pass rates and the verdict of the comparison.
    summary = (experiment / "summary.md").read_text()
    assert "TASK_SKILLS" in summary and "CONTROL" in summary
    assert "TASK_SKILLS vs CONTROL" in result.stdout
    for path in experiment.rglob("*"):
        if path.is_file():
            assert ANTHROPIC_KEY not in path.read_text(errors="replace"), f"a key was written to {path}"


@pytest.mark.agent_cli
def test_claude_code_runs_in_an_image_without_node(tmp_path: Path, docker_base_image: str) -> None:
    # Harbor's images (python:*-slim, ubuntu:*, Terminal-Bench 2's prebuilt ones) have no Node.js: the
    # harness mounts its own beside the CLI.
    cli_dir = require_cli("claude")
    task = tmp_path / "tasks" / "no-node"
    for sub in ("environment", "tests", "solution"):
        (task / sub).mkdir(parents=True)
    (task / "task.toml").write_text('version = "1.0"\n[agent]\ntimeout_sec = 300\n[verifier]\ntimeout_sec = 30\n')
    (task / "instruction.md").write_text("Write /app/greeting.txt with a greeting.\n")
    (task / "environment" / "Dockerfile").write_text(
        f"FROM {docker_base_image}\nRUN rm -f /usr/bin/node /usr/bin/nodejs && ! command -v node\nWORKDIR /app\n"
    )
    (task / "tests" / "test.sh").write_text(
        "#!/bin/bash\nif ! command -v node && grep -q hello /app/greeting.txt\n"
        "then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n"
    )
    with ScriptedModelServer(load_script(SCRIPTS / "claude-harbor-no-node.yaml"), host="0.0.0.0") as server:
        url = "http://127.0.0.1:" + server.url.rsplit(":", 1)[1]
        env = scripted_run_env(tmp_path, url, cli_dir)
        result, experiment = _suite(tmp_path / "run", "--agent=claude-code", env=env, tasks=tmp_path / "tasks")
    (record,) = _records(experiment).values()
    assert record["verdict"] == "passed", (result.stdout + result.stderr)[-3000:]
    assert record["trajectory"]["agent_version"]  # the CLI ran (it reported its version)

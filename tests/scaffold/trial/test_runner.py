"""The trial runner on real folders: skills installed, records written, retention, resume, errors, secrets."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from scaffold.agents.base import AgentTraits
from scaffold.catalog.tasks import render_instruction
from scaffold.errors import RecordError
from scaffold.experiment.cases import Case
from scaffold.records import SCHEMA_VERSION
from scaffold.records.files import read_record
from scaffold.trial.logs import LOG_CAP_BYTES, cap_file
from scaffold.workspaces.base import NO_NETWORK
from tests.support.factories import TaskFactory, make_runner


def runner_for(factory: TaskFactory, tmp_path: Path, **kwargs: object):  # type: ignore[no-untyped-def]
    return make_runner([factory.tasks_dir], [factory.treatments_dir], tmp_path, **kwargs)  # type: ignore[arg-type]


def test_skills_are_installed_as_complete_folders_with_claude_md(factory: TaskFactory, tmp_path: Path) -> None:
    skill = factory.skill("report", extra={"scripts/check.py": "print('hi')\n", "templates/t.md": "# T\n"})
    factory.treatments(
        "t.yaml",
        {
            "WITH_REPORT": {
                "description": "d",
                "skills": [{"name": "report", "path": str(skill)}],
                "claude_md": "Always use the report skill.\n",
            }
        },
    )
    factory.task(
        "t",
        solve="find .claude -type f | sort > installed.txt; cp CLAUDE.md seen-claude.md; echo done > out.txt\n",
        metadata={"default_treatments": ["CONTROL", "WITH_REPORT"]},
    )
    outcome = runner_for(factory, tmp_path, keep_workspaces="all").run(Case("t", "WITH_REPORT", 1))
    ws = Path(outcome.record.workspace.path)
    assert (ws / "installed.txt").read_text().split() == [
        ".claude/skills/report/SKILL.md",
        ".claude/skills/report/scripts/check.py",
        ".claude/skills/report/templates/t.md",
    ]
    assert (ws / "seen-claude.md").read_text() == "Always use the report skill.\n"
    assert outcome.record.config["treatment"]["skills"][0]["name"] == "report"


def test_a_skills_comet_folder_is_neither_installed_nor_hashed(factory: TaskFactory, tmp_path: Path) -> None:
    """comet eval keeps its runs and cache in ``<skill>/.comet/eval``: records written while trials run
    must not be copied into agents' workspaces (a copy racing a rename failed a trial) nor change the skill's
    content hash (which would refuse every resume)."""
    skill = factory.skill("report", extra={"scripts/check.py": "print('hi')\n"})
    runs = skill / ".comet" / "eval" / "runs"
    runs.mkdir(parents=True)
    (runs / "record.json").write_text("{}")
    factory.treatments(
        "t.yaml", {"WITH_REPORT": {"description": "d", "skills": [{"name": "report", "path": str(skill)}]}}
    )
    factory.task("t", solve="find .claude | sort > installed.txt; echo done > out.txt\n")
    first = runner_for(factory, tmp_path, keep_workspaces="all").run(Case("t", "WITH_REPORT", 1))
    ws = Path(first.record.workspace.path)
    assert (ws / "installed.txt").read_text().split() == [
        ".claude",
        ".claude/skills",
        ".claude/skills/report",
        ".claude/skills/report/SKILL.md",
        ".claude/skills/report/scripts",
        ".claude/skills/report/scripts/check.py",
    ]
    (runs / "another-record.json").write_text("{}")
    again = runner_for(factory, tmp_path, experiment_id="exp-2").run(Case("t", "WITH_REPORT", 1))
    hashes = [r.record.config["treatment"]["skills"][0]["content_hash"] for r in (first, again)]
    assert hashes[0] == hashes[1]


def test_record_contents(factory: TaskFactory, tmp_path: Path) -> None:
    factory.task("t", files={"data/input.txt": "x"})
    outcome = runner_for(factory, tmp_path).run(Case("t", "CONTROL", 2))
    data = json.loads(outcome.record_path.read_text())
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["case_id"] == "t-CONTROL-r2" and data["trial"] == 2
    assert data["verdict"] == "passed" and data["weighted_score"] == pytest.approx(1.0)
    assert data["config_hash"].startswith("sha256:") and data["config"]["task"]["content_hash"].startswith("sha256:")
    assert set(data["phases"]) == {"workspace_s", "changes_s", "agent_s", "validation_s", "scoring_s"}
    assert {d["name"] for d in data["dimensions"]} >= {"completion", "safety_boundary"}
    assert data["trajectory"]["commands"] == ["bash $COMET_SOLUTION_DIR/solve.sh"]
    assert (
        outcome.record_path == tmp_path / "logs" / "experiments" / "exp-1" / "trials" / "t-CONTROL-r2" / "record.json"
    )
    assert read_record(outcome.record_path) == outcome.record
    # The agent's raw streams are listed in the record, exactly the agent.* files of the trial folder.
    on_disk = sorted(p.name for p in outcome.record_path.parent.iterdir() if p.name.startswith("agent."))
    assert on_disk and data["streams"] == on_disk


def test_instruction_variables_and_environment(factory: TaskFactory, tmp_path: Path) -> None:
    factory.task(
        "t", instruction="id={run_id} task={task_name} trial={trial} keep {braces}\n", solve="echo done > out.txt\n"
    )
    runner = runner_for(factory, tmp_path)
    task = runner.tasks.tasks["t"]
    text = render_instruction(task.instruction_path.read_text(), {"run_id": "R", "task_name": "t", "trial": "1"})
    assert text == "id=R task=t trial=1 keep {braces}\n"


@pytest.mark.parametrize(
    ("policy", "kept_pass", "kept_fail"), [("failed", False, True), ("all", True, True), ("none", False, False)]
)
def test_workspace_retention(
    factory: TaskFactory, tmp_path: Path, policy: str, kept_pass: bool, kept_fail: bool
) -> None:
    factory.task("good")
    factory.task("bad", solve="echo wrong > out.txt\n")
    runner = runner_for(factory, tmp_path, keep_workspaces=policy)
    good, bad = runner.run(Case("good", "CONTROL", 1)), runner.run(Case("bad", "CONTROL", 1))
    assert (good.record.verdict, bad.record.verdict) == ("passed", "failed")
    runner.backend.drain()  # a workspace not kept is removed in the background (scaffold.workspaces.local)
    for outcome, kept in ((good, kept_pass), (bad, kept_fail)):
        ws = tmp_path / "ws" / runner.experiment.workspace_key(Case(outcome.record.task, "CONTROL", 1))
        assert ws.exists() is kept
        assert outcome.record.workspace.kept is kept
        if kept:  # the trials' folder of the experiment is its owner's alone: other users see no workspace
            assert ws.parent.stat().st_mode & 0o077 == 0
        assert (outcome.record.workspace.path == str(ws)) is kept


def test_resume_skips_trials_with_records(factory: TaskFactory, tmp_path: Path) -> None:
    counter = tmp_path / "runs.txt"
    factory.task("t", solve=f"echo run >> {counter}; echo done > out.txt\n")
    first = runner_for(factory, tmp_path).run(Case("t", "CONTROL", 1))
    again = runner_for(factory, tmp_path).run(Case("t", "CONTROL", 1))
    assert not first.resumed and again.resumed
    assert again.record == first.record
    assert counter.read_text() == "run\n"
    other = runner_for(factory, tmp_path, experiment_id="exp-2").run(Case("t", "CONTROL", 1))
    assert not other.resumed and counter.read_text() == "run\nrun\n"


def test_changed_configuration_is_refused_on_resume(factory: TaskFactory, tmp_path: Path) -> None:
    folder = factory.task("t")
    runner_for(factory, tmp_path).run(Case("t", "CONTROL", 1))
    (folder / "instruction.md").write_text("Something else entirely.\n")
    with pytest.raises(RecordError, match="another configuration"):
        runner_for(factory, tmp_path).run(Case("t", "CONTROL", 1))


def test_refused_resume_names_what_changed_with_old_and_new_values(factory: TaskFactory, tmp_path: Path) -> None:
    skill = factory.skill("helper")
    factory.treatments("t.yaml", {"WITH_HELPER": {"skills": ["../skills/helper"]}})
    factory.task("t", metadata={"default_treatments": ["WITH_HELPER"]})
    first = runner_for(factory, tmp_path).run(Case("t", "WITH_HELPER", 1)).record
    (skill / "SKILL.md").write_text("---\nname: helper\ndescription: changed\n---\nUse it differently.\n")
    factory.task("t", metadata={"default_treatments": ["WITH_HELPER"]}, environment={"timeout_sec": 45})

    with pytest.raises(RecordError) as caught:
        runner_for(factory, tmp_path).run(Case("t", "WITH_HELPER", 1))

    old_task = first.config["task"]["content_hash"]
    old_skill = first.config["treatment"]["skills"][0]["content_hash"]
    message = str(caught.value)
    assert "this trial was recorded with another configuration; changed: " in message
    assert f"task.content_hash: {old_task!r} -> 'sha256:" in message
    assert f"treatment.skills[helper].content_hash: {old_skill!r} -> 'sha256:" in message
    assert "timeouts.agent_s: 30.0 -> 45.0" in message
    assert "profile" not in message and "agent." not in message  # only what changed
    assert message.endswith("Use a new --experiment-id, or delete the record to run it again")


def test_errors_are_recorded_and_rerun_on_request(factory: TaskFactory, tmp_path: Path) -> None:
    factory.task("t")
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the workspace root should be")
    broken = make_runner([factory.tasks_dir], [factory.treatments_dir], tmp_path)
    from scaffold.workspaces.local import LocalBackend

    broken.backend = LocalBackend(blocked / "ws")
    first = broken.run(Case("t", "CONTROL", 1))
    assert first.record.verdict == "error"
    assert first.record.errors[0].type == "WorkspaceError"
    assert "cannot create the workspace" in first.record.errors[0].message
    assert first.record.weighted_score is None

    resumed = runner_for(factory, tmp_path).run(Case("t", "CONTROL", 1))
    assert resumed.resumed and resumed.record.verdict == "error"
    rerun = runner_for(factory, tmp_path, rerun_errors=True).run(Case("t", "CONTROL", 1))
    assert not rerun.resumed and rerun.record.verdict == "passed"


def test_an_image_that_cannot_be_built_keeps_its_log_and_is_not_retried(factory: TaskFactory, tmp_path: Path) -> None:
    from scaffold.errors import ImageBuildError
    from scaffold.workspaces.local import LocalBackend

    class Unbuildable(LocalBackend):
        prepared = 0

        def prepare(self, task: object) -> None:
            Unbuildable.prepared += 1
            raise ImageBuildError(
                "building the image comet-eval/task-t:abc failed at `RUN exit 3`: returned a non-zero code: 3",
                image="comet-eval/task-t:abc",
                step="RUN exit 3",
                log="Step 2/2 : RUN exit 3\nbuild-marker-17\n",
            )

    factory.task("t")
    runner = runner_for(factory, tmp_path, retry_excluded=2)
    runner.backend.close()
    runner.backend = Unbuildable(tmp_path / "ws-unbuildable")
    result = runner.run(Case("t", "CONTROL", 1))
    record = result.record
    assert record.verdict == "error" and record.errors[0].type == "ImageBuildError"
    assert (record.noise.category, record.noise.reason) == ("excluded", "build_failed")
    assert not record.attempts and Unbuildable.prepared == 1  # the same image fails again: no retry
    log = (result.record_path.parent / "build.log").read_text()
    assert log.startswith("# comet-eval/task-t:abc: cannot be built; failing step: RUN exit 3\n")
    assert "build-marker-17" in log
    runner.backend.close()


def test_secrets_in_the_harness_environment_do_not_reach_the_workspace(
    factory: TaskFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-planted-secret-value")
    monkeypatch.setenv("BENCH_API_KEY", "sk-planted-secret-value")
    factory.task("t", solve="env > env.txt; echo done > out.txt\n")
    outcome = runner_for(factory, tmp_path, keep_workspaces="all").run(Case("t", "CONTROL", 1))
    env_dump = (Path(outcome.record.workspace.path) / "env.txt").read_text()
    assert "sk-planted-secret-value" not in env_dump
    assert f"COMET_WORKSPACE={outcome.record.workspace.path}" in env_dump
    for path in (tmp_path / "logs").rglob("*"):
        if path.is_file():
            assert "sk-planted-secret-value" not in path.read_text(errors="replace"), path


def test_oracle_timeout_is_recorded_as_such(factory: TaskFactory, tmp_path: Path) -> None:
    factory.task("t", solve="sleep 30\n", environment={"timeout_sec": 0.5})
    outcome = runner_for(factory, tmp_path).run(Case("t", "CONTROL", 1))
    traj = outcome.record.trajectory
    assert traj is not None and traj.timed_out is True and traj.exit_code is None
    assert outcome.record.verdict == "failed"
    dims = {d.name: d for d in outcome.record.dimensions}
    assert dims["instruction_following"].reason == "exceeded the time budget"


def test_interrupt_leaves_no_workspace_and_no_record(factory: TaskFactory, tmp_path: Path) -> None:
    factory.task("t")
    runner = runner_for(factory, tmp_path)

    class Interrupting:
        name, traits, model, install, network = "int", AgentTraits(invokes_skills=False), None, None, NO_NETWORK

        def run(self, workspace: object, request: object) -> object:
            raise KeyboardInterrupt

    runner.agent = Interrupting()
    with pytest.raises(KeyboardInterrupt):
        runner.run(Case("t", "CONTROL", 1))
    assert not (tmp_path / "ws" / runner.experiment.workspace_key(Case("t", "CONTROL", 1))).exists()
    assert not (tmp_path / "logs" / "experiments" / "exp-1" / "trials" / "t-CONTROL-r1" / "record.json").exists()


def test_workspace_starts_with_the_environment_files_only(factory: TaskFactory, tmp_path: Path) -> None:
    factory.task(
        "t",
        files={"src/app.py": "print(1)\n"},
        solve="find . -type f -not -path './.tmp/*' -not -path './.eval-solution/*' -not -name files.txt"
        " | sort > files.txt\necho done > out.txt\n",
    )
    outcome = runner_for(factory, tmp_path, keep_workspaces="all").run(Case("t", "CONTROL", 1))
    files = (Path(outcome.record.workspace.path) / "files.txt").read_text().split()
    assert files == ["./Dockerfile", "./src/app.py"]
    assert os.environ.get("COMET_WORKSPACE") is None


def test_a_gated_start_is_waited_before_the_trial_and_recorded_apart(factory: TaskFactory, tmp_path: Path) -> None:
    from scaffold.trial.start_gate import StartGate

    factory.task("t")
    now = [100.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    runner = runner_for(factory, tmp_path)
    # crowded=None: the window alone (a loaded machine's wait for a free core: tests/scaffold/trial/test_start_gate.py).
    runner.start_gate = StartGate(tmp_path / "gate", 5.0, clock=lambda: now[0], sleep=sleep, crowded=None)
    cores = runner.backend.start_slots()[1]
    records = [runner.run(Case("t", "CONTROL", i)).record for i in range(1, cores + 2)]
    # This machine's cores start at once; the next start waits out the window (the fake clock's 5 s),
    # before the trial's own clock: its duration is the trial's alone.
    assert slept == [5.0]
    assert [r.phases.get("start_wait_s") for r in records] == [None] * cores + [5.0]
    assert records[-1].duration_s < 5.0 and records[-1].verdict == "passed"


def test_the_backend_is_told_before_each_workspace_which_task_follows(factory: TaskFactory, tmp_path: Path) -> None:
    from scaffold.workspaces.local import LocalBackend

    class Hinted(LocalBackend):
        hints: list[str | None]

        def expect(self, task: str | None) -> None:
            self.hints.append(task)

    factory.task("t")
    factory.task("u")
    runner = runner_for(factory, tmp_path)
    runner.backend.close()
    runner.backend = backend = Hinted(tmp_path / "ws-hinted")
    backend.hints = []
    plan = [Case("t", "CONTROL", 1), Case("t", "CONTROL", 2), Case("u", "CONTROL", 1)]
    upcoming = iter([*plan[1:], None])
    runner.upcoming = lambda: next(upcoming)
    assert [runner.run(case).record.verdict for case in plan] == ["passed"] * 3
    assert backend.hints == ["t", "u", None]  # before each trial's workspace: the task of the one after
    backend.close()


def test_stop_ends_a_trial_in_flight_and_leaves_no_record(factory: TaskFactory, tmp_path: Path) -> None:
    """A trial started ahead of its item, still running when the session ends (pytest_comet.ahead)."""
    import threading
    import time

    from scaffold.trial.runner import TrialStopped

    factory.task("slow", solve="echo started > started.txt; sleep 60; echo done > out.txt\n")
    runner = runner_for(factory, tmp_path, keep_workspaces="all")
    case = Case("slow", "CONTROL", 1)
    raised: list[BaseException] = []

    def run() -> None:
        try:
            runner.run(case)
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 30
    while not list((tmp_path / "ws").glob("**/started.txt")) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert list((tmp_path / "ws").glob("**/started.txt")), "the agent never started"
    began = time.monotonic()
    runner.stop()
    thread.join(30)
    assert not thread.is_alive() and time.monotonic() - began < 10  # not the 60 s the agent would take
    assert len(raised) == 1 and isinstance(raised[0], TrialStopped)
    assert not runner.experiment.record_path(case).exists()  # a resume runs it again
    runner.backend.drain()  # a removal may go on in the background (scaffold.workspaces.local)
    assert not list((tmp_path / "ws").glob("**/started.txt"))  # not kept, although keep_workspaces=all


def test_a_runaway_agents_output_is_capped_with_its_start_and_end_kept(factory: TaskFactory, tmp_path: Path) -> None:
    # About 23 MB on stdout, over the 16 MiB cap: numbered lines, so what was kept can be told exactly.
    factory.task("loud", solve="seq 1 3000000\necho done > out.txt\n")
    outcome = runner_for(factory, tmp_path).run(Case("loud", "CONTROL", 1))
    assert outcome.record.verdict == "passed"
    log = outcome.record_path.parent / "agent.stdout.log"
    assert log.stat().st_size <= LOG_CAP_BYTES + 200
    lines = log.read_text().splitlines()
    cut = [i for i, line in enumerate(lines) if line.startswith("[comet-eval: ")]
    assert len(cut) == 1 and "bytes cut here: the stream had 22,888,896 bytes" in lines[cut[0]]
    head, tail = lines[: cut[0]], lines[cut[0] + 1 :]
    assert head == [str(n) for n in range(1, len(head) + 1)]  # whole lines from the first on
    assert tail == [str(n) for n in range(3000001 - len(tail), 3000001)]  # whole lines to the last


def test_a_capped_stream_still_parses_and_says_what_was_cut(tmp_path: Path) -> None:
    from scaffold.agents.streams.claude import parse_claude_stream

    source = (Path(__file__).parents[2] / "data" / "streams" / "claude-code-basic.jsonl").read_text()
    stream = tmp_path / "agent.turn-1.jsonl"
    lines = source.splitlines()
    stream.write_text(
        "\n".join([*lines[:2], *[json.dumps({"type": "noise", "n": i}) for i in range(5000)], *lines[2:]]) + "\n"
    )
    whole = parse_claude_stream(source.splitlines())
    assert cap_file(stream, 16_384)
    capped = stream.read_text().splitlines()
    assert all(isinstance(json.loads(line), dict) for line in capped)  # every line still JSON
    marker = [json.loads(line) for line in capped if '"comet_log_cut"' in line]
    assert len(marker) == 1 and marker[0]["bytes_cut"] > 0
    assert capped[:2] == lines[:2] and capped[-len(lines[2:]) :] == lines[2:]
    assert parse_claude_stream(capped).final_text == whole.final_text
    assert not cap_file(stream, 1 << 20)  # within the cap: left alone

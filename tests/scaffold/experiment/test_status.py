"""Progress files, the status of an experiment folder, the budget's claims and the live line, on real
files (the end-to-end sessions are in tests/pytest_comet/test_long_runs.py)."""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import pty
import struct
import termios
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from scaffold.experiment import PROGRESS_FILE
from scaffold.experiment import progress as progress_file
from scaffold.experiment.budget import Limits, claim, read_budget
from scaffold.experiment.cases import Case
from scaffold.experiment.live import LiveLine, terminal_width, trial_line
from scaffold.experiment.progress import StreamTurns, TrialProgress, read_progress
from scaffold.experiment.status import finish_plan, read_status, status_json, status_line, status_view, write_plan
from scaffold.records.files import write_record
from scaffold.trajectory import Trajectory
from tests.support.factories import TaskFactory, make_runner
from tests.support.records import rec

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
SECRET = "sk-planted-secret-000111222"


def assistant(message_id: str, text: str = "x") -> str:
    event = {"type": "assistant", "message": {"id": message_id, "content": [{"type": "text", "text": text}]}}
    return json.dumps(event) + "\n"


def test_stream_turns_reads_only_what_was_appended_and_waits_for_whole_lines(tmp_path: Path) -> None:
    stream = tmp_path / "agent.turn-1.jsonl"
    stream.write_text(assistant("m1") + assistant("m1"))  # one message, two content-block events
    turns = StreamTurns(tmp_path)
    assert turns.update() and turns.turns == 1 and turns.conversation_turn == 1
    assert not turns.update()  # nothing new
    half = assistant("m2")
    with stream.open("a") as handle:
        handle.write(half[:10])
    assert not turns.update() and turns.turns == 1  # a line being written is not counted yet
    with stream.open("a") as handle:
        handle.write(half[10:] + json.dumps({"type": "result", "total_cost_usd": 0.25}) + "\n")
    assert turns.update() and turns.turns == 2 and turns.cost_usd == 0.25
    (tmp_path / "agent.turn-2.jsonl").write_text(
        assistant("m1")
        + json.dumps({"type": "turn.completed"})
        + "\n"
        + json.dumps({"type": "result", "total_cost_usd": 0.5})
    )
    (tmp_path / "agent.turn-2.stderr.log").write_text(assistant("not-a-stream"))
    assert turns.update()
    # m1 of the second conversation turn is a new message; the unfinished last line is not read yet.
    assert (turns.turns, turns.conversation_turn, turns.cost_usd) == (4, 2, 0.25)


def test_trial_progress_phases_turns_and_no_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_file, "FIRST_WRITE_S", 0.0)
    clock = iter(T0 + timedelta(seconds=i) for i in range(1000))
    progress = TrialProgress(tmp_path / PROGRESS_FILE, Case("t", "CONTROL", 2), "gw1", lambda: next(clock))
    progress.phase("workspace")
    first = read_progress(tmp_path / PROGRESS_FILE)
    assert first is not None
    assert (first["case_id"], first["phase"], first["trial"], first["worker"], first["turn"]) == (
        "t-CONTROL-r2",
        "workspace",
        2,
        "gw1",
        0,
    )
    progress.phase("agent")
    with progress.watching(tmp_path, interval_s=0.01):
        (tmp_path / "agent.turn-1.jsonl").write_text(assistant("m1", f"the key is {SECRET}"))
        deadline = datetime.now(UTC) + timedelta(seconds=10)
        while (read_progress(tmp_path / PROGRESS_FILE) or {}).get("turn") != 1 and datetime.now(UTC) < deadline:
            threading.Event().wait(0.01)
    data = read_progress(tmp_path / PROGRESS_FILE)
    assert data is not None and data["turn"] == 1 and data["phase"] == "agent"
    assert SECRET not in (tmp_path / PROGRESS_FILE).read_text()
    # No look once watching returned: a turn written now is not counted, however long one waits.
    (tmp_path / "agent.turn-1.jsonl").write_text(assistant("m1", "x") + assistant("m2", "y"))
    threading.Event().wait(0.1)
    assert (read_progress(tmp_path / PROGRESS_FILE) or {}).get("turn") == 1
    progress.remove()
    assert not (tmp_path / PROGRESS_FILE).exists()


def test_trials_watched_at_once_each_get_their_looks_and_a_failing_look_stops_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress_file, "FIRST_WRITE_S", 0.0)
    folders = [tmp_path / f"t{i}" for i in range(3)]
    progresses = []
    for i, folder in enumerate(folders):
        folder.mkdir()
        progresses.append(TrialProgress(folder / PROGRESS_FILE, Case("t", "CONTROL", i + 1), "main", lambda: T0))
    broken = TrialProgress(tmp_path / PROGRESS_FILE, Case("t", "CONTROL", 9), "main", lambda: T0)
    caller, failed = threading.get_ident(), threading.Event()

    def turns(streams: StreamTurns) -> None:
        if threading.get_ident() != caller:  # the watcher's looks fail; the caller's last one does not
            failed.set()
            raise RuntimeError("a look that fails")

    monkeypatch.setattr(broken, "_turns", turns)
    with contextlib.ExitStack() as stack:
        stack.enter_context(broken.watching(tmp_path, interval_s=0.01))
        for progress, folder in zip(progresses, folders, strict=True):
            stack.enter_context(progress.watching(folder, interval_s=0.01))
        for i, folder in enumerate(folders):
            (folder / "agent.turn-1.jsonl").write_text("".join(assistant(f"m{k}", "x") for k in range(i + 1)))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(
            (read_progress(f / PROGRESS_FILE) or {}).get("turn") != i + 1 for i, f in enumerate(folders)
        ):
            time.sleep(0.01)
    assert failed.is_set()
    assert [(read_progress(f / PROGRESS_FILE) or {}).get("turn") for f in folders] == [1, 2, 3]


def test_a_trial_shorter_than_the_first_write_leaves_no_progress_file(tmp_path: Path) -> None:
    progress = TrialProgress(tmp_path / PROGRESS_FILE, Case("t", "CONTROL", 1), "main", lambda: T0)
    progress.phase("workspace")
    progress.phase("agent")
    assert not (tmp_path / PROGRESS_FILE).exists()  # a tenth of a second: nobody watches it
    with progress.watching(tmp_path, interval_s=progress_file.FIRST_WRITE_S + 0.1):
        deadline = time.monotonic() + 10
        while not (tmp_path / PROGRESS_FILE).exists() and time.monotonic() < deadline:
            time.sleep(0.02)
    data = read_progress(tmp_path / PROGRESS_FILE)
    assert data is not None and data["phase"] == "agent"  # the watcher's first look wrote it


def test_the_runner_removes_its_progress_file_once_the_record_is_written(
    factory: TaskFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress_file, "FIRST_WRITE_S", 0.0)
    factory.task("t")
    runner = make_runner([factory.tasks_dir], [factory.treatments_dir], tmp_path)
    seen: list[str] = []
    agent_run = runner.agent.run

    def watched_run(workspace: object, request: object) -> Trajectory:
        data = read_progress(runner.experiment.trial_dir(Case("t", "CONTROL", 1)) / PROGRESS_FILE)
        seen.append(data["phase"] if data else "missing")
        return agent_run(workspace, request)  # type: ignore[arg-type]

    runner.agent.run = watched_run
    result = runner.run(Case("t", "CONTROL", 1))
    assert seen == ["agent"]
    assert result.record.verdict == "passed"
    assert not (result.record_path.parent / PROGRESS_FILE).exists()


def write_progress(root: Path, case_id: str, started: datetime, updated: datetime, turn: int = 0) -> None:
    folder = root / "trials" / case_id
    folder.mkdir(parents=True, exist_ok=True)
    data = {
        "case_id": case_id,
        "phase": "agent",
        "started_at": started.isoformat(),
        "updated_at": updated.isoformat(),
        "turn": turn,
        "conversation_turn": 1,
        "cost_usd": 0.5,
        "worker": "gw0",
    }
    (folder / PROGRESS_FILE).write_text(json.dumps(data))


def add_record(root: Path, case_id: str, *, cost: float | None, duration: float) -> None:
    task, treatment, trial = case_id.split("-")
    trajectory = {"agent": "x", "cost_usd": cost}
    record = rec(task, treatment, int(trial[1:]), duration_s=duration, trajectory=trajectory)
    write_record(root / "trials" / case_id / "record.json", record)


def test_status_counts_done_running_stalled_queued_eta_and_spend(tmp_path: Path) -> None:
    root = tmp_path / "e"
    cases = [f"t{i}-CONTROL-r1" for i in range(6)]
    write_plan(root, cases, session="s1", started_at=T0)
    add_record(root, cases[0], cost=1.0, duration=100)
    add_record(root, cases[1], cost=None, duration=300)
    add_record(root, "other-CONTROL-r1", cost=9.0, duration=1)  # not in this session's plan: not counted
    now = T0 + timedelta(minutes=30)
    write_progress(root, cases[2], T0 + timedelta(minutes=20), now - timedelta(seconds=5), turn=7)
    write_progress(root, cases[3], T0, now - timedelta(minutes=11))  # no update for 11 minutes
    status = read_status([root], now)
    assert (status.planned, status.done, len(status.running), status.stalled, status.queued) == (6, 2, 2, 1, 2)
    assert status.verdicts == {"passed": 2}
    assert status.spent_usd == pytest.approx(2.0)  # 1.0 recorded + 0.5 + 0.5 so far
    assert status.elapsed_s == 1800
    assert status.eta_s == pytest.approx(200 * 4 / 2)  # mean 200 s x (2 queued + 2 running) / 2 running
    line = status_line(status)
    assert line.startswith("done 2/6 | running 2 | stalled 1 | queued 2 | elapsed 30:00 | ETA 6:40 | spent $2.00 | ")
    assert f"{cases[3]} agent 30:00 in trial STALLED" in line and f"{cases[2]} agent t7 10:00 in trial" in line
    view = "\n".join(status_view(status))
    assert f"  {cases[2]}: agent, turn 7, 10:00 in trial [gw0], $0.50 so far" in view
    assert "STALLED: no update for 11:00" in view
    assert "spent: $2.00 (1 of 2 finished trials reported a cost)" in view
    assert status_json(status)["stalled"] == 1

    finish_plan(root, "other-session", now)  # another session's end leaves this plan alone
    assert not read_status([root], now).finished
    (root / "trials" / cases[2] / PROGRESS_FILE).unlink()
    finish_plan(root, "s1", now)
    ended = read_status([root], now + timedelta(hours=1))
    # cases[3]'s worker died: its progress file is left, but the session is over, so it was not run.
    assert ended.finished and not ended.running and ended.not_run == tuple(cases[2:]) and ended.queued == 0
    assert ended.elapsed_s == 1800  # to the session's end, not to now


def test_status_adds_up_shards_and_reads_folders_without_a_plan(tmp_path: Path) -> None:
    write_plan(tmp_path / "s1", ["a-CONTROL-r1", "b-CONTROL-r1"], session="1", started_at=T0)
    write_plan(tmp_path / "s2", ["c-CONTROL-r1"], session="2", started_at=T0 + timedelta(minutes=1))
    add_record(tmp_path / "s2", "c-CONTROL-r1", cost=0.1, duration=5)
    add_record(tmp_path / "old", "a-CONTROL-r1", cost=None, duration=5)
    both = read_status([tmp_path / "s1", tmp_path / "s2"], T0 + timedelta(minutes=2))
    assert (both.planned, both.done, both.queued, both.elapsed_s) == (3, 1, 2, 120)
    old = read_status([tmp_path / "old"], T0)
    assert (old.planned, old.queued, old.done, old.eta_s) == (None, None, 1, None)
    assert "unknown (no plan.json)" in "\n".join(status_view(old))
    empty = read_status([tmp_path / "missing"], T0)
    assert empty.done == 0 and status_line(empty).startswith("done 0 | running 0 |")


def test_max_trials_claims_are_never_exceeded_by_concurrent_workers(tmp_path: Path) -> None:
    answers: list[str | None] = []
    lock = threading.Lock()

    def worker(index: int) -> None:
        for k in range(5):
            answer = claim(tmp_path, "s", f"t{index}-{k}", Limits(max_trials=7))
            with lock:
                answers.append(answer)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers.count(None) == 7
    assert {a for a in answers if a is not None} == {"--max-trials 7 reached (7 trial(s) started)"}
    budget = read_budget(tmp_path)
    assert budget is not None and len(budget["started"]) == 7 and len(budget["refused"]) == 13
    assert claim(tmp_path, "next-session", "t9-9", Limits(max_trials=7)) is None  # a new session, a new count


def test_max_cost_counts_records_and_running_trials(tmp_path: Path) -> None:
    limits = Limits(max_cost_usd=1.0)
    assert claim(tmp_path, "s", "a-CONTROL-r1", limits) is None
    write_progress(tmp_path, "a-CONTROL-r1", T0, T0)  # $0.50 so far
    assert claim(tmp_path, "s", "b-CONTROL-r1", limits) is None
    add_record(tmp_path, "b-CONTROL-r1", cost=0.6, duration=1)
    assert claim(tmp_path, "s", "c-CONTROL-r1", limits) == "--max-cost 1 reached ($1.10 spent)"
    add_record(tmp_path, "a-CONTROL-r1", cost=0.0, duration=1)  # stopped stays stopped
    assert claim(tmp_path, "s", "d-CONTROL-r1", limits) == "--max-cost 1 reached ($1.10 spent)"


def test_a_retry_is_shown_and_every_attempt_is_spent(tmp_path: Path) -> None:
    excluded = {"category": "excluded", "reason": "rate_limited", "source": "structured", "evidence": {}}
    folder = tmp_path / "trials" / "a-CONTROL-r1"
    first = rec("a", "CONTROL", 1, "failed", noise=excluded, trajectory={"agent": "x", "cost_usd": 0.25})
    write_record(folder / "attempts" / "1" / "record.json", first)
    write_progress(tmp_path, "a-CONTROL-r1", T0, T0)  # the retry: $0.50 so far
    progress = json.loads((folder / PROGRESS_FILE).read_text())
    (folder / PROGRESS_FILE).write_text(json.dumps({**progress, "retry": 1, "retries": 2}))
    status = read_status([tmp_path], T0 + timedelta(seconds=5))
    assert status.spent_usd == pytest.approx(0.75)  # the attempt set aside, and the one running
    assert "a-CONTROL-r1 retry 1/2 agent 0:05 in trial" in status_line(status)
    assert "a-CONTROL-r1 (retry 1 of at most 2: earlier attempts excluded as noise): agent" in "\n".join(
        status_view(status)
    )
    limits = Limits(max_cost_usd=0.7)
    assert claim(tmp_path, "s", "a-CONTROL-r1", limits) is None
    assert claim(tmp_path, "s", "b-CONTROL-r1", limits) == "--max-cost 0.7 reached ($0.75 spent)"

    attempt = {"attempt": 1, "folder": "attempts/1", "verdict": "failed", "noise_reason": "rate_limited"}
    final = rec("a", "CONTROL", 1, trajectory={"agent": "x", "cost_usd": 0.5}, attempts=[{**attempt, "cost_usd": 0.25}])
    write_record(folder / "record.json", final)
    (folder / PROGRESS_FILE).unlink()
    assert read_status([tmp_path], T0).spent_usd == pytest.approx(0.75)  # the record counts its attempts
    assert claim(tmp_path, "s2", "a-CONTROL-r1", Limits(max_cost_usd=0.7)) is None  # a new session: a new count
    budget = Limits(max_trials=3)
    assert claim(tmp_path, "s3", "a-CONTROL-r1", budget) is None
    assert claim(tmp_path, "s3", "a-CONTROL-r1", budget) is None  # a's retry is a start too
    assert claim(tmp_path, "s3", "b-CONTROL-r1", budget) is None
    assert (
        claim(tmp_path, "s3", "c-CONTROL-r1", budget)
        == "--max-trials 3 reached (3 trial(s) started, 1 of them a retry)"
    )


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_live_line_draws_after_the_current_text_and_clears_only_itself() -> None:
    out = _Terminal()
    text = ["done 1/4 | running 1"]
    line = LiveLine(out, lambda: text[0], column=lambda: 12, width=lambda: 80)
    line.draw()
    assert out.getvalue() == "\r\x1b[12C\x1b[K done 1/4 | running 1"
    line.pause()
    assert out.getvalue().endswith("\r\x1b[12C\x1b[K")  # back to where pytest's text ends, the rest erased
    line.draw()  # paused: nothing
    before = out.getvalue()
    assert line.draw() is None and out.getvalue() == before
    line.resume()
    text[0] = "x" * 200
    line.draw()
    assert out.getvalue().endswith(" " + "x" * 66)  # cut to the room left on the line
    narrow = LiveLine(_Terminal(), lambda: "text", column=lambda: 70, width=lambda: 80)
    narrow.draw()
    assert narrow._out.getvalue() == ""  # type: ignore[attr-defined]  # no room: not drawn
    line.stop()
    assert out.getvalue().endswith("\r\x1b[12C\x1b[K")


def test_the_live_line_is_as_wide_as_the_terminal_it_is_drawn_on(monkeypatch: pytest.MonkeyPatch) -> None:
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    terminal = io.TextIOWrapper(io.FileIO(secondary, "w"), encoding="utf-8", write_through=True)
    try:
        monkeypatch.delenv("COLUMNS", raising=False)
        # Asked through the line's own terminal: this process's stdout is pytest's capture file here.
        assert terminal_width(terminal) == 160
        monkeypatch.setenv("COLUMNS", "132")  # $COLUMNS wins when set, as in shutil.get_terminal_size
        assert terminal_width(terminal) == 132
        monkeypatch.setenv("COLUMNS", "wide")  # not a number: ignored
        assert terminal_width(terminal) == 160
        monkeypatch.delenv("COLUMNS")
        line = LiveLine(terminal, lambda: "x" * 300, column=lambda: 10)
        line.draw()
        drawn = os.read(primary, 4096).decode()
        assert drawn == "\r\x1b[10C\x1b[K " + "x" * (160 - 10 - 2)
    finally:
        terminal.close()
        os.close(primary)


def test_trial_lines() -> None:
    props = {"comet_verdict": "failed", "comet_weighted_score": 0.5, "comet_resumed": True}
    assert (
        trial_line(3, 10, "a-CONTROL-r1", props, 12.4)
        == "[3/10] a-CONTROL-r1: failed  score 0.50  12 s in trial  (from an earlier run)"
    )
    assert (
        trial_line(1, None, "b", {"comet_not_run": "--max-trials 1 reached"}, 0)
        == "[1/?] b: not run: --max-trials 1 reached"
    )
    retried = {"comet_verdict": "passed", "comet_weighted_score": 1.0, "comet_attempts": 3}
    assert trial_line(2, 2, "c", retried, 40) == "[2/2] c: passed  score 1.00  40 s in trial  (after 2 retries)"


def test_comet_status_reads_a_folder_or_an_id_and_names_what_it_cannot_find(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from scaffold.cli.main import main

    root = tmp_path / "logs" / "experiments" / "e1"
    write_plan(root, ["a-CONTROL-r1", "b-CONTROL-r1"], session="s", started_at=datetime.now(UTC))
    add_record(root, "a-CONTROL-r1", cost=0.25, duration=3)
    assert main(["status", str(root)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("done 1/2 | running 0 | queued 1 | elapsed ")
    assert f"experiment: {root} (running)" in out and "spent: $0.25 (1 of 1 finished trials reported a cost)" in out
    assert main(["status", "e1", "--logs-dir", str(tmp_path / "logs"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["planned"], data["done"], data["queued"], data["spent_usd"]) == (2, 1, 1, 0.25)
    assert main(["status", "nope", "--logs-dir", str(tmp_path / "logs")]) == 2
    assert "nope: neither an experiment folder nor an experiment id under" in capsys.readouterr().err


def test_a_watch_due_before_the_watchers_sleep_ends_wakes_it() -> None:
    """The watcher is not woken for a watch due after its sleep ends, but is for one due before."""
    slow_looks: list[float] = []
    quick = threading.Event()
    slow = progress_file._WATCHER.add(lambda: slow_looks.append(time.monotonic()), 60.0)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # until the watcher sleeps until the slow watch, a minute away
            wakes_at = progress_file._WATCHER._wakes_at
            if wakes_at is not None and wakes_at > time.monotonic() + 30:
                break
            time.sleep(0.01)
        watch = progress_file._WATCHER.add(quick.set, 0.05)
        try:
            assert quick.wait(10)  # looked at within its interval, not after the minute
        finally:
            progress_file._WATCHER.remove(watch)
    finally:
        progress_file._WATCHER.remove(slow)
    assert slow_looks == []

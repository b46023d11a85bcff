"""The start gate: at most `slots` starts per machine in any `window` seconds, as early as that allows,
across processes (real ones, sharing the gate's folder), and never an obstacle when it cannot work."""

from __future__ import annotations

import itertools
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaffold.trial.start_gate import DEFAULT_WINDOW_S, StartGate, crowded_here


class FakeTime:
    """A clock that only the gate's sleeps (and the test) move."""

    def __init__(self) -> None:
        self.now = 1000.0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds > 0
        self.now += seconds


def _gate(folder: Path, fake: FakeTime, window: float) -> StartGate:
    return StartGate(folder, window, clock=fake.clock, sleep=fake.sleep, crowded=lambda: False)


@settings(max_examples=60, deadline=None)
@given(
    gaps=st.lists(st.floats(min_value=0, max_value=2, allow_nan=False), min_size=1, max_size=25),
    slots=st.integers(min_value=1, max_value=4),
    window=st.floats(min_value=0.05, max_value=2, allow_nan=False),
)
def test_no_window_holds_more_than_slots_starts_and_none_waits_needlessly(
    tmp_path_factory: object, gaps: list[float], slots: int, window: float
) -> None:
    folder = tmp_path_factory.mktemp("gate")  # type: ignore[attr-defined]
    fake = FakeTime()
    gate = _gate(folder, fake, window)
    admitted: list[float] = []
    for gap in gaps:  # one caller after another, each arriving `gap` after the previous was admitted
        fake.now += gap
        arrival = fake.now
        admission = gate.admit("local", slots)
        assert admission.at == fake.now >= arrival
        assert abs(admission.waited - (admission.at - arrival)) < 1e-9
        # As early as the rule allows: a caller waits only when `slots` starts fell in the window before it.
        recent = [t for t in admitted if arrival - window < t]
        if len(recent) < slots:
            assert admission.waited == 0
        else:
            assert abs(admission.at - (sorted(recent)[-slots] + window)) < 1e-5
        admitted.append(admission.at)
    for i, start in enumerate(admitted):
        within = [t for t in admitted[i:] if t < start + window - 1e-5]
        assert len(within) <= slots


def test_machines_are_spaced_apart_from_each_other(tmp_path: Path) -> None:
    fake = FakeTime()
    gate = _gate(tmp_path, fake, 1.0)
    assert [gate.admit("local", 1).waited for _ in range(2)] == [0.0, 1.0]
    # Another engine's cores are its own: its first start does not wait for this machine's.
    assert gate.admit("tcp://10.0.0.2:2376", 1).waited == 0.0


def test_off_without_window_or_slots_and_open_when_its_folder_cannot_be_made(tmp_path: Path) -> None:
    fake = FakeTime()
    assert [_gate(tmp_path, fake, 0).admit("local", 1).waited for _ in range(3)] == [0.0] * 3
    assert [_gate(tmp_path, fake, 1).admit("local", 0).waited for _ in range(3)] == [0.0] * 3
    (tmp_path / "file").write_text("not a folder")
    blocked = _gate(tmp_path / "file" / "gate", fake, 1)
    assert [blocked.admit("local", 1).waited for _ in range(3)] == [0.0] * 3


def test_a_start_from_before_a_reboot_is_ignored(tmp_path: Path) -> None:
    fake = FakeTime()
    gate = _gate(tmp_path, fake, 1.0)
    gate.admit("local", 1)
    fake.now = 5.0  # the monotonic clock started again: the file's time lies in its future
    assert gate.admit("local", 1).waited == 0.0


def test_a_start_here_waits_for_a_free_core_for_at_most_three_windows(tmp_path: Path) -> None:
    fake = FakeTime()
    readings = iter([True, True, True, False, True])  # whether every core is taken, read before each poll
    gate = StartGate(tmp_path, 1.0, clock=fake.clock, sleep=fake.sleep, crowded=lambda: next(readings))
    # Three readings of full cores: three polls of 50 ms; then a core is free.
    assert abs(gate.admit("local", 2).waited - 0.15) < 1e-9
    # A machine whose cores stay full slows the starts; it never stalls them.
    full = StartGate(tmp_path / "full", 1.0, clock=fake.clock, sleep=fake.sleep, crowded=lambda: True)
    assert 3.0 <= full.admit("unix:///run/docker.sock", 2).waited < 3.0 + 0.05 + 1e-9


def test_no_wait_for_a_core_elsewhere_or_unknown(tmp_path: Path) -> None:
    fake = FakeTime()
    full = StartGate(tmp_path, 1.0, clock=fake.clock, sleep=fake.sleep, crowded=lambda: True)
    # An engine on another host: this machine's load says nothing of its cores.
    assert full.admit("tcp://10.0.0.2:2376", 2).waited == 0.0
    assert full.admit("ssh://builder", 2).waited == 0.0
    unknown = StartGate(tmp_path / "u", 1.0, clock=fake.clock, sleep=fake.sleep, crowded=lambda: None)
    assert unknown.admit("local", 2).waited == 0.0
    off = StartGate(tmp_path / "off", 1.0, clock=fake.clock, sleep=fake.sleep, crowded=None)
    assert off.admit("local", 2).waited == 0.0


def test_this_machines_load_is_read_from_the_kernel() -> None:
    if not Path("/proc/loadavg").exists():
        pytest.skip("no /proc/loadavg: not Linux")
    assert crowded_here() in (True, False)


ADMIT = """
import sys
from pathlib import Path
from scaffold.trial.start_gate import StartGate
print(repr(StartGate(Path(sys.argv[1]), 0.2).admit("local", 1).at))
"""


def test_processes_sharing_the_folder_are_admitted_one_window_apart(tmp_path: Path) -> None:
    # Fresh interpreters, as xdist's workers and other sessions are, all started before any is admitted.
    procs = [
        subprocess.Popen([sys.executable, "-c", ADMIT, str(tmp_path)], stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    outputs = [proc.communicate(timeout=60)[0] for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * 4
    times = sorted(float(out) for out in outputs)
    # time.monotonic is one clock for every process of the machine: the admissions are ordered on it.
    assert all(b - a >= 0.2 - 1e-5 for a, b in itertools.pairwise(times)), times
    assert times[-1] <= time.monotonic()


def test_the_session_spaces_agents_that_call_a_model_and_no_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scaffold.session import HarnessSession, Options

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text("#!/bin/sh\n")
    (bin_dir / "claude").chmod(0o755)
    monkeypatch.setenv("COMET_AGENT_BIN_DIR", str(bin_dir))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "x-test-key")
    monkeypatch.setenv("COMET_EVAL_HOME", str(tmp_path / "home"))
    gate = HarnessSession(Options(root=tmp_path, agent="claude-code")).start_gate()
    assert gate is not None and gate.window == DEFAULT_WINDOW_S and gate.crowded is not None
    monkeypatch.setenv("COMET_START_GATE_LOAD", "0")
    windowed = HarnessSession(Options(root=tmp_path, agent="claude-code")).start_gate()
    assert windowed is not None and windowed.crowded is None  # the window alone
    monkeypatch.delenv("COMET_START_GATE_LOAD")
    assert HarnessSession(Options(root=tmp_path, agent="claude-code", start_window=0)).start_gate() is None
    assert (
        HarnessSession(Options(root=tmp_path, agent="oracle")).start_gate() is None
    )  # milliseconds: nothing to overlap

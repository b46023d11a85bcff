"""Two trials in flight in one pytest process: the next item's trial starts in a thread while this one runs.

A machine whose cores are the limit pays for every pytest-xdist worker it starts (about 0.4 CPU s each
before its first trial, and xdist gives no worker a trial before all have collected: docs/scale.md). So a
session asked for more trials at once than 2 workers per core runs half as many workers, each with two
trials in flight (:func:`plan`): ``-n 8`` on 2 cores is 4 workers, ``-n 16`` 8, two trials each.

How a worker holds two: when an item's ``comet_trial`` fixture runs, it starts the trial of the process's
next item (pytest's ``nextitem``; xdist holds one back, so it is known) in a thread, then runs or waits for
its own. When the next item's fixture runs, its trial is already going: it takes that one and starts the
one after. Trials are started only where pytest will run their items, and exactly once:

* only an item whose trial is all there is to set up may be started ahead (:func:`may_start_ahead`): its
  fixtures are the plugin's own, no mark skips it, its case can run. A trial started ahead runs before its
  item's fixtures are set up, so any other fixture (a user's, a tracing suite's) could change what the
  trial sees after it started;
* nothing is started ahead where pytest might not run the next item, or might run it elsewhere: with
  ``-x``/``--maxfail`` (the current item may stop the session), ``--max-trials``/``--max-cost`` (the
  budget is claimed when the item runs), ``--pdb``, or xdist's ``worksteal`` (a queued item may move to
  another worker);
* a trial still running ahead when the session ends without its item (Ctrl-C, a stopped worker) is
  stopped (``Runner.stop``): its agent ends and it leaves no record, so a resume runs it.
"""

from __future__ import annotations

import math
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

import pytest

if TYPE_CHECKING:
    from scaffold.experiment.cases import Case
    from scaffold.trial.runner import Runner, TrialResult

__all__ = ["IN_FLIGHT_KEY", "WORKERS_PER_CORE", "Ahead", "WorkerPlan", "may_start_ahead", "plan"]

IN_FLIGHT_KEY: Final = "comet_in_flight"
"""workerinput: the trials this worker may hold in flight (1 or 2)."""
WORKERS_PER_CORE: Final = 2
"""Worker processes per core beyond which two trials in a process do better than a process each: measured
on 2 cores with the real Claude Code CLI, 32 trials, side by side twice, ``-n 8`` as 4 workers with two
in flight took 24.3-24.4 s (local) and 29.2-29.7 s (docker) against 25.7-25.9 s and 29.2-29.7 s as 8
workers, with 2-3 CPU s less (docs/scale.md). 4 per core was the cap before the compile cache made the
CLI cheaper to start."""
OWN_FIXTURES: Final = frozenset({"comet_case", "comet_trial", "comet_runner", "request"})
"""The fixtures an item started ahead may use: the plugin's own (and pytest's ``request``)."""
STOP_WAIT_S: Final = 30.0
"""How long the session's end waits for a stopped trial to leave: its agent is ended at once, so this is
its workspace's removal; past it the process ends anyway, and the supervisor sweeps what is left."""
InFlight = Literal["auto", "1", "2"]


@dataclass(frozen=True, slots=True)
class WorkerPlan:
    """How a session's trials at once (``-n``) are held: *workers* processes, *doubled* of them with two
    trials in flight (the first ones: gw0 .. gw{doubled-1}), the others with one."""

    asked: int
    workers: int
    doubled: int
    cores: int

    def in_flight(self, worker: str) -> int:
        index = int(worker.removeprefix("gw")) if worker.startswith("gw") else 0
        return 2 if index < self.doubled else 1

    def describe(self) -> str:
        at_once, cores = self.workers + self.doubled, self.cores
        why = (
            "--in-flight 2"
            if self.workers == self.asked
            else f"more than {WORKERS_PER_CORE} workers per core cost more than they give on {cores} "
            f"core{'s' if cores != 1 else ''}; --in-flight 1 runs one process per trial"
        )
        return (
            f"-n {self.asked}: {at_once} trials at once in {self.workers} worker processes, {self.doubled} "
            f"of them with two in flight ({why})"
        )


def plan(asked: int, cores: int, in_flight: InFlight) -> WorkerPlan:
    """The processes for *asked* trials at once on *cores*: one per trial up to WORKERS_PER_CORE per core
    (or whatever ``--in-flight`` says), beyond it half as many processes, none fewer than that cap."""
    if in_flight == "2":
        return WorkerPlan(asked, asked, asked, cores)
    if in_flight == "1" or asked <= WORKERS_PER_CORE * cores:
        return WorkerPlan(asked, asked, 0, cores)
    workers = max(WORKERS_PER_CORE * cores, math.ceil(asked / 2))
    return WorkerPlan(asked, workers, asked - workers, cores)


def may_start_ahead(item: pytest.Item | None, case: object) -> bool:
    """Whether *item*'s trial (of *case*) may start before its item runs (see the module docstring)."""
    from scaffold.experiment.cases import Case

    if item is None or not isinstance(case, Case):
        return False
    fixtures = set(getattr(item, "fixturenames", ()))
    if "comet_trial" not in fixtures or not fixtures <= OWN_FIXTURES:
        return False
    return all(mark.name == "parametrize" for mark in item.iter_markers())


def session_allows(config: pytest.Config) -> bool:
    """Whether this session may start any trial ahead: pytest runs every item it was given, here."""
    if config.getoption("maxfail", 0) or config.getoption("usepdb", False):
        return False
    if config.getoption("dist", "no") == "worksteal":
        return False
    return config.getoption("comet_max_trials") is None and config.getoption("comet_max_cost") is None


class Ahead:
    """The trials of a process started ahead of their items, by case id, until their items take them."""

    def __init__(self) -> None:
        self._started: dict[str, tuple[Future[TrialResult], threading.Thread]] = {}

    def __contains__(self, case: Case) -> bool:
        return case.id in self._started

    def start(self, runner: Runner, case: Case) -> None:
        """Start *case*'s trial in a thread (nothing when it was started already)."""
        if case.id in self._started:
            return
        future: Future[TrialResult] = Future()

        def work() -> None:
            future.set_running_or_notify_cancel()
            try:
                future.set_result(runner.run(case))
            except BaseException as exc:  # handed to the item's fixture, which raises it there
                future.set_exception(exc)

        # A daemon: a process ending under Ctrl-C must not wait for an agent (Runner.stop ends it first).
        thread = threading.Thread(target=work, name=f"comet-ahead {case.id}", daemon=True)
        self._started[case.id] = (future, thread)
        thread.start()

    def result(self, case: Case) -> TrialResult:
        """Wait for the trial of *case* started ahead. Interrupted (Ctrl-C), it stays known, so that
        :meth:`stop` ends it."""
        future, _ = self._started[case.id]
        try:
            return future.result()  # raises what the trial raised, as Runner.run would have
        finally:
            if future.done():
                del self._started[case.id]

    def stop(self, runner: Runner) -> None:
        """At the session's end: stop the trials whose items never took them, and wait for them to leave."""
        running = [thread for _, thread in self._started.values() if thread.is_alive()]
        self._started.clear()
        if not running:
            return
        runner.stop()
        deadline = time.monotonic() + STOP_WAIT_S
        for thread in running:
            thread.join(max(0.0, deadline - time.monotonic()))

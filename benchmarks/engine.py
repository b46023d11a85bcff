"""Engine benchmark: steps per second of a 200-step linear workflow on the memory, file and SQLite stores.

One step is what a runner does per action: ``Runtime.claim`` (a durable commit: the claim must be on disk
before the work starts, so a crash leaves it flagged as in flight) then ``Runtime.record_outcome`` (a
second durable commit). Finding the next pending action is not timed. Each store runs ``--rounds`` runs
of the workflow after one discarded warm-up run; the figures are steps/s over all timed steps and the
p50 and p99 of one step.

The durable stores are only as fast as the disk's flushes, so the raw latencies of ``fdatasync`` and of
a directory ``fsync`` are measured on the same file system first and printed with the ceiling they set.
SQLite runs with ``synchronous=FULL`` (the store's default); the file store fsyncs events, the state's
temp file and the directory on every commit.

Then each store alone: commits per second of a small runtime-shaped state, to tell the store's share
from the runtime's.

Informational: exits 0 whatever the figures (goals are printed as PASS/MISS).

    .venv/bin/python benchmarks/engine.py [--steps 200] [--rounds 3] [--stores memory,file,sqlite]
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from comet_engine import Guardrails, Outcome, Runtime, define_workflow, skill  # noqa: E402
from comet_engine.definitions import Workflow  # noqa: E402
from comet_engine.stores import FileStore, MemoryStore, SQLiteStore, Store  # noqa: E402

GOALS = {"memory": 10_000.0, "sqlite": 1_000.0, "file": 500.0}
LABELS = {"memory": "memory", "file": "file (fsync)", "sqlite": "SQLite (WAL, FULL)"}


def linear_workflow(steps: int) -> Workflow:
    names = [f"s{i:03d}" for i in range(steps)]
    return define_workflow(
        "bench-linear",
        "1",
        entry=names[0],
        steps={name: skill("work") for name in names},
        transitions=list(itertools.pairwise(names)),
        guardrails=Guardrails(max_iterations=steps + 1),  # the default budget (50) would stop a long chain
    )


def one_run(runtime: Runtime, workflow: Workflow, run_id: str) -> list[float]:
    """Drive one run to completion; the duration of claim + record for each step."""
    runtime.start(workflow, run_id)
    durations = []
    while True:
        pending = runtime.inspect(run_id).open_actions()
        if not pending:
            break
        action_id = pending[0].id
        start = time.perf_counter()
        claim = runtime.claim(run_id, action_id)
        runtime.record_outcome(
            run_id, action_id, attempt=claim.attempt, token=claim.token, outcome=Outcome.succeeded({"ok": True})
        )
        durations.append(time.perf_counter() - start)
    status = runtime.inspect(run_id).status
    if status != "completed":
        raise SystemExit(f"run {run_id} ended {status!r}, expected completed")
    return durations


def bench_store(name: str, make: Callable[[Path], Store], steps: int, rounds: int) -> list[float]:
    workflow = linear_workflow(steps)
    with tempfile.TemporaryDirectory(prefix=f"comet-bench-{name}-") as tmp:
        store = make(Path(tmp))
        runtime = Runtime(store)
        runtime.register(workflow)
        one_run(runtime, workflow, "warm-up")
        durations: list[float] = []
        for index in range(rounds):
            durations += one_run(runtime, workflow, f"run-{index}")
            if len(durations) != steps * (index + 1):
                raise SystemExit(f"{name}: {len(durations)} steps timed, expected {steps * (index + 1)}")
        close = getattr(store, "close", None)
        if close is not None:
            close()
    return durations


def raw_commits(name: str, make: Callable[[Path], Store], commits: int) -> float:
    """Commits per second of the store alone: one run, a state shaped like a runtime's, one event each."""
    state = {
        "status": "running",
        "currentStep": "s042",
        "iteration": 42,
        "actions": {f"{i:016x}": {"step": f"s{i:03d}", "status": "claimed", "attempt": 1} for i in range(3)},
        "outputs": {"s041": {"ok": True}},
    }
    with tempfile.TemporaryDirectory(prefix=f"comet-bench-raw-{name}-") as tmp:
        store = make(Path(tmp))
        store.create("raw", state, [{"type": "run_started"}])
        start = time.perf_counter()
        for revision in range(1, commits + 1):
            store.commit("raw", revision, {**state, "iteration": revision}, [{"type": "action_claimed", "n": revision}])
        elapsed = time.perf_counter() - start
        close = getattr(store, "close", None)
        if close is not None:
            close()
    return commits / elapsed


def flush_latencies(directory: Path, n: int = 50) -> tuple[float, float]:
    """Median seconds of an overwrite + fdatasync and of a directory fsync on this file system."""
    path = directory / "probe"
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    data, datasync, dirsync = b"x" * 512, [], []
    try:
        for i in range(n):
            start = time.perf_counter()
            os.pwrite(fd, data, (i % 8) * 512)
            os.fdatasync(fd)
            datasync.append(time.perf_counter() - start)
            start = time.perf_counter()
            os.fsync(dir_fd)
            dirsync.append(time.perf_counter() - start)
    finally:
        os.close(fd)
        os.close(dir_fd)
    return statistics.median(datasync), statistics.median(dirsync)


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--stores", default="memory,file,sqlite")
    args = parser.parse_args()
    makers: dict[str, Callable[[Path], Store]] = {
        "memory": lambda tmp: MemoryStore(),
        "file": lambda tmp: FileStore(tmp / "runs"),
        "sqlite": lambda tmp: SQLiteStore(tmp / "runs.db", synchronous="FULL"),
    }
    chosen = [name.strip() for name in args.stores.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in makers]
    if unknown:
        parser.error(f"unknown store {unknown[0]!r}; choose from {', '.join(makers)}")

    with tempfile.TemporaryDirectory(prefix="comet-bench-probe-") as tmp:
        datasync, dirsync = flush_latencies(Path(tmp))
    print(f"disk: fdatasync {datasync * 1e3:.2f} ms, directory fsync {dirsync * 1e3:.2f} ms (median of 50)")
    print(f"workflow: {args.steps} linear steps x {args.rounds} runs; one step = claim + record (two commits)\n")
    print(f"{'store':<20} {'steps/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'goal':>9}  verdict")
    for name in chosen:
        durations = bench_store(name, makers[name], args.steps, args.rounds)
        rate = len(durations) / sum(durations)
        goal = GOALS[name]
        verdict = "PASS" if rate >= goal else "MISS"
        print(
            f"{LABELS[name]:<20} {rate:>9,.0f} {quantile(durations, 0.5) * 1e3:>8.3f} "
            f"{quantile(durations, 0.99) * 1e3:>8.3f} {f'>= {goal:,.0f}':>9}  {verdict}"
        )
    print(f"\n{'store alone':<20} {'commits/s':>9}  (a step needs two)")
    for name in chosen:
        count = 20_000 if name == "memory" else 400
        print(f"{LABELS[name]:<20} {raw_commits(name, makers[name], count):>9,.0f}")
    # Each durable commit waits for at least one flush of the disk, and a step makes two commits.
    print(
        f"\nceiling from the disk alone: SQLite (1 WAL fdatasync per commit) ~{1 / (2 * datasync):,.0f} steps/s; "
        f"file (fdatasync + state fsync + directory fsync per commit) "
        f"~{1 / (2 * (datasync + 2 * dirsync)):,.0f} steps/s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""How close the harness runs real agent trials to their floor, at several concurrencies.

TRIALS trials of the real Claude Code CLI (generic-skill-smoke under CONTROL: one Write call, then
"Done.") against the scripted model server, which waits LATENCY seconds before answering each model
call, as a provider would. Each backend runs the same suite at each ``-n`` in a fresh pytest process:

    pytest local/tests --agent claude-code --task generic-skill-smoke --treatment CONTROL --count TRIALS -n N

and the script reports, per run:

- wall time, and the speedup against ``-n 1`` of the same backend;
- CPU seconds: the machine's busy CPU time over the run (/proc/stat: every process involved, the
  harness, its workers, the agents, the engine and the containers), and the part the benchmark's own
  process tree accounts for (getrusage of the waited-for children: the harness, workers and, on the
  local backend, the agents);
- peak memory per concurrent trial: the peak of the machine's used memory (MemTotal - MemAvailable,
  sampled every 0.1 s) above its level before the run, divided by the concurrency;
- the floor: the larger of the latency floor (model calls per trial x LATENCY x TRIALS / concurrency,
  the calls counted in the server's log) and the CPU floor (busy CPU seconds / cores);
- where the time goes: the median trial's phases from the trial records, the time before the first
  trial starts (start-up: pytest, the plugin, xdist's workers) and after the last one ends (reports).

The last lines are one per backend and ``-n``, in the form a script reads:

    local -n 16: wall 31.4 s, speedup 3.6x, floor 12.0 s, ratio 2.62

Goal: ratio (wall / floor) at most 1.5 at every ``-n``, and ``-n 16`` never slower than ``-n 8``.

The optional pytest plugins this environment has for the repository's own tests (langsmith's, hypothesis's
and anyio's, which comes with the tracing suites' httpx: none installed by ``pip install comet-eval``) are
blocked in the runs, as overhead.py's start-up does: each xdist worker loads every installed plugin, and
langsmith's and hypothesis's alone double a worker's start (measured: 0.84 CPU s a worker without them,
1.64 s with). ``--as-installed`` keeps them.

    .venv/bin/python benchmarks/concurrency.py [--trials 32] [--latency 2] [--levels 1,4,8,16]
                                               [--backend local|docker|both] [--as-installed]
                                               [--start-window SECONDS]

Needs the claude CLI (``comet agents install claude-code``, or ``$COMET_AGENT_BIN_DIR``) and, for the
docker backend, a reachable engine with the base image (the test suite builds it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from scaffold.catalog.builtin import BUILTIN_TASKS_DIR

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.overhead import blocking_args, installed_optional_plugins  # noqa: E402
from scaffold.agents.locate import locate  # noqa: E402
from scaffold.modelserver import ScriptedModelServer, load_script  # noqa: E402
from tests.support.agents import scripted_run_env  # noqa: E402  (the environment of the e2e tests' runs)

SCRIPT = REPO / "tests" / "data" / "e2e" / "claude-skill-smoke-control.yaml"
RATIO_GOAL = 1.5
TASK = "generic-skill-smoke"
CLOCK = os.sysconf("SC_CLK_TCK")


def busy_cpu_seconds() -> float:
    """Busy CPU seconds of the whole machine since boot (user, nice, system, irq, softirq, steal)."""
    with Path("/proc/stat").open() as fh:
        fields = [int(x) for x in fh.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / CLOCK


def used_memory_bytes() -> int:
    values: dict[str, int] = {}
    with Path("/proc/meminfo").open() as fh:
        for line in fh:
            name, _, rest = line.partition(":")
            values[name] = int(rest.split()[0]) * 1024
    return values["MemTotal"] - values["MemAvailable"]


class MemorySampler:
    """The peak of the machine's used memory while running, sampled every *interval* seconds."""

    def __init__(self, interval: float = 0.1) -> None:
        self.interval = interval
        self.peak = used_memory_bytes()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, used_memory_bytes())

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@dataclass
class Run:
    backend: str
    n: int
    wall: float
    busy_cpu: float
    tree_cpu: float
    memory_per_trial: float
    calls_per_trial: float
    floor_latency: float
    floor_cpu: float
    startup: float
    tail: float
    phases: dict[str, float] = field(default_factory=dict)

    @property
    def floor(self) -> float:
        return max(self.floor_latency, self.floor_cpu)

    @property
    def ratio(self) -> float:
        return self.wall / self.floor if self.floor > 0 else float("inf")


def trial_phases(experiment: Path) -> tuple[dict[str, float], float, float, int, list[str]]:
    """Median phase seconds, the earliest start and latest end (epoch seconds), the trial count, and
    the verdicts that were not "passed"."""
    records = [json.loads(p.read_text()) for p in experiment.glob("trials/*/record.json")]
    phases: dict[str, list[float]] = {}
    for record in records:
        for name, seconds in record.get("phases", {}).items():
            phases.setdefault(name, []).append(seconds)
    starts = [datetime.fromisoformat(r["started_at"]).timestamp() for r in records if r.get("started_at")]
    ends = [datetime.fromisoformat(r["finished_at"]).timestamp() for r in records if r.get("finished_at")]
    failed = [f"{r['case_id']}: {r['verdict']}" for r in records if r["verdict"] != "passed"]
    medians = {name: statistics.median(values) for name, values in phases.items()}
    return medians, min(starts, default=0.0), max(ends, default=0.0), len(records), failed


def one_run(
    backend: str, n: int, trials: int, latency: float, root: Path, cli_dir: str, extra: Sequence[str] = ()
) -> Run:
    work = root / f"{backend}-n{n}"
    work.mkdir(parents=True)
    log = work / "model-requests.jsonl"
    script = load_script(SCRIPT).model_copy(update={"latency": latency})
    # Every address: a container reaches this machine at its network's gateway.
    with ScriptedModelServer(script, host="0.0.0.0", log_path=log) as server:
        url = "http://127.0.0.1:" + server.url.rsplit(":", 1)[1]
        argv = [sys.executable, "-m", "pytest", str(REPO / "local" / "tests"), "-q", "-p", "no:cacheprovider"]
        argv += ["--agent", "claude-code", "--task", TASK, "--treatment", "CONTROL"]
        argv += ["--count", str(trials), "--backend", backend, "--logs-dir", str(work / "logs")]
        argv += ["--experiment-id", f"concurrency-{backend}-{n}", *extra]
        if n > 1:
            argv += ["-n", str(n)]
        before_children = resource.getrusage(resource.RUSAGE_CHILDREN)
        before_self = resource.getrusage(resource.RUSAGE_SELF)
        base_memory = used_memory_bytes()
        busy = busy_cpu_seconds()
        started = time.time()
        with MemorySampler() as memory:
            proc = subprocess.run(
                argv, check=False, cwd=work, env=scripted_run_env(work, url, cli_dir), capture_output=True, text=True
            )
        ended = time.time()
        busy = busy_cpu_seconds() - busy
        after_children = resource.getrusage(resource.RUSAGE_CHILDREN)
        after_self = resource.getrusage(resource.RUSAGE_SELF)
        calls = sum(1 for r in server.requests if (r.get("answer") or {}).get("kind") not in (None, "side"))
    tree = (after_children.ru_utime + after_children.ru_stime - before_children.ru_utime - before_children.ru_stime) + (
        after_self.ru_utime + after_self.ru_stime - before_self.ru_utime - before_self.ru_stime
    )
    experiment = work / "logs" / "experiments" / f"concurrency-{backend}-{n}"
    phases, first, last, count, failed = trial_phases(experiment)
    if proc.returncode != 0 or count != trials or failed:
        tail_out = (proc.stdout + proc.stderr)[-3000:]
        raise RuntimeError(f"{backend} -n {n}: exit {proc.returncode}, {count} records, {failed[:5]}\n{tail_out}")
    calls_per_trial = calls / trials
    cores = os.cpu_count() or 1
    return Run(
        backend=backend,
        n=n,
        wall=ended - started,
        busy_cpu=busy,
        tree_cpu=tree,
        memory_per_trial=max(0, memory.peak - base_memory) / n,
        calls_per_trial=calls_per_trial,
        floor_latency=calls_per_trial * latency * trials / n,
        floor_cpu=busy / cores,
        startup=first - started if first else float("nan"),
        tail=ended - last if last else float("nan"),
        phases=phases,
    )


def describe(run: Run, base: Run | None) -> str:
    speedup = base.wall / run.wall if base else 1.0
    phases = ", ".join(f"{k} {v:.2f}" for k, v in sorted(run.phases.items(), key=lambda kv: -kv[1])[:5])
    return (
        f"  -n {run.n:>2}: wall {run.wall:6.1f} s  speedup {speedup:4.1f}x  busy CPU {run.busy_cpu:6.1f} s"
        f" (process tree {run.tree_cpu:6.1f} s)  memory/trial {run.memory_per_trial / 2**20:5.0f} MB\n"
        f"         floor {run.floor:5.1f} s (latency {run.floor_latency:.1f} s: {run.calls_per_trial:.1f} calls per"
        f" trial; CPU {run.floor_cpu:.1f} s)  ratio {run.ratio:.2f}\n"
        f"         before the first trial {run.startup:.1f} s, after the last {run.tail:.1f} s;"
        f" median trial phases (s): {phases}"
    )


def bare_cli(cli: str, latency: float, root: Path, runs: int = 3) -> tuple[float, float]:
    """Median wall and CPU seconds of the same trial without the harness: the CLI in a fresh folder,
    the same prompt and script, one process (its own floor: no harness can run a trial in less)."""
    script = load_script(SCRIPT).model_copy(update={"latency": latency})
    walls, cpus = [], []
    (root / "bare").mkdir(parents=True)
    with ScriptedModelServer(script, host="127.0.0.1") as server:
        env = scripted_run_env(root / "bare", server.url, str(Path(cli).parent))
        env["IS_SANDBOX"] = "1"  # as the adapter does: Claude Code refuses to skip permissions as root otherwise
        for i in range(runs):
            folder = root / "bare" / f"ws{i}"
            folder.mkdir(parents=True)
            argv = [cli, "-p", "Write result.md as the instruction says.", "--output-format", "stream-json"]
            argv += ["--verbose", "--model", "claude-sonnet-4-5", "--dangerously-skip-permissions"]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            proc = subprocess.run(argv, check=False, cwd=folder, env=env, capture_output=True, text=True)
            walls.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            if proc.returncode != 0 or not (folder / "result.md").exists():
                raise RuntimeError(f"the bare CLI run failed ({proc.returncode}): {proc.stderr[-1000:]}")
    shutil.rmtree(root / "bare", ignore_errors=True)
    return statistics.median(walls), statistics.median(cpus)


def cpu_limit_note(backend: str) -> str:
    """What the docker backend holds each trial's CLI to and the local backend does not: the task's CPU
    limit (Harbor's default of 1 core unless its task.toml says). A CLI's start is CPU-bound on several
    threads, so under that limit it runs slower than the same CLI on the local backend (measured with
    latency 0: an agent phase of 0.85-0.88 s at 1 core, 0.71-0.80 s at 2, 0.62 s locally), which neither
    floor counts."""
    if backend != "docker":
        return ""
    from scaffold.catalog.tasks import load_catalog

    cpus = load_catalog([BUILTIN_TASKS_DIR]).tasks[TASK].spec.environment.cpus
    return f" each container holds its trial to {cpus:g} CPU (the task's limit, Harbor's default); local: no limit"


def docker_ready() -> str | None:
    """None when the docker backend can run here, else why not."""
    try:
        from scaffold.workspaces.docker.base_image import BASE_TAG
        from scaffold.workspaces.docker.engine import connect

        client = connect()
        client.images.get(BASE_TAG)
        client.close()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def summarize(runs: list[Run], backends: list[str]) -> None:
    """The goal's verdict, then one line per backend and -n, for scripts."""
    print()
    ok = True
    for backend in backends:
        mine = [r for r in runs if r.backend == backend]
        by_n = {r.n: r for r in mine}
        if 8 in by_n and 16 in by_n and by_n[16].wall > by_n[8].wall:
            ok = False
            print(f"{backend}: -n 16 ({by_n[16].wall:.1f} s) slower than -n 8 ({by_n[8].wall:.1f} s): MISS")
        ok = ok and all(r.ratio <= RATIO_GOAL for r in mine)
    print(f"goal: every ratio <= {RATIO_GOAL}, -n 16 never slower than -n 8: {'PASS' if ok else 'MISS'}")
    for run in runs:
        base = next(r for r in runs if r.backend == run.backend)
        print(
            f"{run.backend} -n {run.n}: wall {run.wall:.1f} s, speedup {base.wall / run.wall:.1f}x,"
            f" floor {run.floor:.1f} s, ratio {run.ratio:.2f}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=32)
    parser.add_argument("--latency", type=float, default=2.0, help="seconds per model call (default 2)")
    parser.add_argument("--levels", default="1,4,8,16", help="the -n values (default 1,4,8,16)")
    parser.add_argument("--backend", choices=("local", "docker", "both"), default="both")
    parser.add_argument("--as-installed", action="store_true", help="keep the optional pytest plugins loaded")
    parser.add_argument("--start-window", type=float, help="the runs' --start-window (default: the harness's, 0.7 s)")
    parser.add_argument("--keep", type=Path, help="keep each run's logs (trial records) under this folder")
    args = parser.parse_args(argv)
    extra = () if args.as_installed else blocking_args(installed_optional_plugins())
    if args.start_window is not None:
        extra = (*extra, f"--start-window={args.start_window:g}")
    levels = [int(x) for x in args.levels.split(",")]
    cli = locate("claude", os.environ).found
    bin_dir = Path(os.environ.get("COMET_AGENT_BIN_DIR", "/opt/comet-agents/node_modules/.bin"))
    if cli is None and (bin_dir / "claude").exists():
        cli = bin_dir / "claude"
    if cli is None:
        print("the claude CLI is not installed: .venv/bin/comet agents install claude-code", file=sys.stderr)
        return 2
    backends = ["local", "docker"] if args.backend == "both" else [args.backend]
    if "docker" in backends and (why := docker_ready()):
        print(f"docker backend left out: {why}", file=sys.stderr)
        backends.remove("docker")
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} cores; {args.trials} trials of Claude Code"
        f" ({Path(cli).resolve().parent.parent.name or cli}), {args.latency:g} s per model call;"
        f" optional plugins: {'as installed' if args.as_installed else ' '.join(extra) or 'none installed'}"
    )
    runs: list[Run] = []
    with contextlib.ExitStack() as stack:
        tmp = (
            str(args.keep)
            if args.keep
            else stack.enter_context(tempfile.TemporaryDirectory(prefix="comet-bench-concurrency-"))
        )
        bare_wall, bare_cpu = bare_cli(str(cli), args.latency, Path(tmp))
        cores = os.cpu_count() or 1
        print(
            f"the CLI alone, one trial without the harness (median of 3): wall {bare_wall:.2f} s, CPU {bare_cpu:.2f} s"
            f" (of which the model's latency: {bare_wall - bare_cpu if bare_wall > bare_cpu else 0:.1f} s or so)"
        )
        for backend in backends:
            print(f"{backend} backend:{cpu_limit_note(backend)}", flush=True)
            base: Run | None = None
            for n in levels:
                run = one_run(backend, n, args.trials, args.latency, Path(tmp), str(Path(cli).parent), extra)
                base = base or run
                runs.append(run)
                print(describe(run, base), flush=True)
                cli_floor = max(args.trials * bare_wall / n, args.trials * bare_cpu / cores)
                print(
                    f"         against the CLI alone: floor {cli_floor:.1f} s (its wall x trials / n, or its CPU x"
                    f" trials / cores), ratio {run.wall / cli_floor:.2f}; the harness's CPU beyond the CLI's:"
                    f" {(run.busy_cpu - args.trials * bare_cpu) / args.trials:.2f} s per trial",
                    flush=True,
                )
                if not args.keep:
                    shutil.rmtree(Path(tmp) / f"{backend}-n{n}", ignore_errors=True)
    summarize(runs, backends)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

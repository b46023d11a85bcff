"""Harness overhead per trial with the oracle agent, measured side by side in one run.

local:  the Runner (fresh workspace, oracle solve.sh, validation script, rubric, atomic record) against
        the same commands run by bare subprocess in fresh directories, one trial of each back to back
        (trials x rounds pairs), each harness trial waiting for the work it left in the background (the
        folder's removal): everything a trial costs, in series. Goal: at most 10 ms added per trial (median
        of the pair differences): the trial that matters waits seconds on a model, so the harness stays
        plain rather than tuned (it was tuned to about 3 ms; STYLE.md 19).
docker: the Runner on the docker backend against a bare ``docker run`` of the same commands on the same
        image (through the SDK). Goal: ratio at most 1.1. Skipped when no engine is reachable.
start-up: a whole 1-trial run, ``pytest <suite> --task bench --count 1`` with the oracle in a fresh
        process, against a fresh ``bash`` running the same commands (the fixed cost a user waits for), and
        with ``--inspect-python`` against Inspect AI's ``inspect eval`` of the same task on its local
        sandbox (benchmarks/inspect_side.py). Goal: at most 1.0 s.
marginal: whole runs of 1 and ``--marginal-trials`` trials of each of the three, one after another in
        one process each (``pytest --count N``, the optional plugins off; ``inspect eval`` with
        ``--max-samples 1``; one ``bash`` running the commands N times): (wall of N - wall of 1) / (N - 1),
        the cost of one more trial in a run, which is what a user waits for (the background work of one
        trial overlaps the next one's commands); the added cost is the median of the rounds' differences.
        Goal: at most 10 ms over bare, as for the pairs. Whole runs seconds apart swing by a few ms, so take
        several rounds (``--rounds``).

    .venv/bin/python benchmarks/overhead.py [--trials 40] [--rounds 5] [--backend local|docker|both|startup]
                                            [--inspect-python /opt/inspect/bin/python] [--marginal-trials 101]
                                            [--dir FOLDER]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import inspect_side  # noqa: E402
from benchmarks.collection import clean_env  # noqa: E402  (the same environment as collection's runs)
from scaffold.agents import create_agent  # noqa: E402
from scaffold.catalog.builtin import SUITES  # noqa: E402
from scaffold.catalog.tasks import load_catalog  # noqa: E402
from scaffold.catalog.treatments import load_treatments  # noqa: E402
from scaffold.experiment import Experiment  # noqa: E402
from scaffold.experiment.cases import Case  # noqa: E402
from scaffold.trial.runner import Runner, Settings  # noqa: E402
from scaffold.workspaces.backends import create_backend  # noqa: E402
from scaffold.workspaces.local import LocalBackend  # noqa: E402

CHECK = """\
from pathlib import Path
from scaffold.python.validation.core import write_test_results
ok = Path("out.txt").read_text().strip() == "done" if Path("out.txt").exists() else False
write_test_results({"passed": ["out.txt says done"]} if ok else {"failed": ["out.txt says done"]})
"""
SOLVE = "set -eu\necho done > out.txt\n"


def make_task(root: Path) -> Path:
    tasks = root / "tasks"
    task = tasks / "bench"
    for sub in ("environment/src", "validation", "solution"):
        (task / sub).mkdir(parents=True)
    (task / "task.toml").write_text(
        '[metadata]\nname = "bench"\ndescription = "overhead"\n\n[validation]\ntest_scripts = ["check.py"]\n'
    )
    (tasks / "index.yaml").write_text('tasks:\n  - name: bench\n    description: "overhead"\n')
    (task / "instruction.md").write_text("Write done into out.txt.\n")
    (task / "environment" / "Dockerfile").write_text(
        "ARG BASE_IMAGE=comet-eval/base:bookworm\nFROM ${BASE_IMAGE}\nWORKDIR /workspace\n"
    )
    for i in range(5):
        (task / "environment" / "src" / f"mod{i}.py").write_text(f"VALUE = {i}\n" * 20)
    (task / "validation" / "check.py").write_text(CHECK)
    (task / "solution" / "solve.sh").write_text(SOLVE)
    (root / "treatments").mkdir()
    return tasks


def make_runner(tasks: Path, root: Path, backend: str, tag: str) -> Runner:
    runner = Runner(
        load_catalog([tasks]),
        load_treatments([root / "treatments"]),
        Experiment.under(root / "logs", f"bench-{tag}"),
        Settings(backend=backend, agent="oracle", keep_workspaces="none"),
        create_backend(backend, workspace_root=root / "ws"),
        create_agent("oracle"),
    )
    runner.run(Case("bench", "CONTROL", 10_000))  # warm-up: hashes, image build, imports
    return runner


def harness(tasks: Path, root: Path, backend: str, trials: int, tag: str) -> float:
    runner = make_runner(tasks, root, backend, tag)
    start = time.perf_counter()
    for trial in range(1, trials + 1):
        record = runner.run(Case("bench", "CONTROL", trial)).record
        assert record.verdict == "passed", record
    runner.backend.drain()  # the folders and containers still being removed are these trials' cost
    elapsed = time.perf_counter() - start
    runner.backend.close()
    return elapsed / trials


def bare_local_env(root: Path) -> dict[str, str]:
    shim = root / "shim"
    if not shim.exists():
        (shim / "scaffold" / "python" / "validation").mkdir(parents=True)
        for pkg in ("scaffold", "scaffold/python", "scaffold/python/validation"):
            (shim / pkg / "__init__.py").write_text("")
        shutil.copy(ROOT / "scaffold/python/validation/core.py", shim / "scaffold/python/validation/core.py")
    return {"PATH": os.environ["PATH"], "PYTHONPATH": str(shim), "HOME": str(root)}


def bare_local_trial(task: Path, root: Path, env: dict[str, str]) -> None:
    ws = Path(tempfile.mkdtemp(dir=root))
    shutil.copytree(task / "environment", ws, dirs_exist_ok=True)
    subprocess.run(["bash", str(task / "solution" / "solve.sh")], cwd=ws, env=env, check=True)
    shutil.copytree(task / "validation", ws / ".eval-validation")
    subprocess.run([sys.executable, ".eval-validation/check.py"], cwd=ws, env=env, check=True)
    results = json.loads((ws / "_test_results.json").read_text())
    assert results == {"passed": ["out.txt says done"]}, results
    shutil.rmtree(ws)


def _cpu() -> float:
    """CPU seconds used so far by this process and its finished children."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def paired_local(tasks: Path, root: Path, trials: int) -> dict[str, list[float]]:
    """One harness trial and one bare trial back to back, in alternating order, *trials* times.

    Pairs close in time see the same machine load, so the median of the per-pair differences is a
    steady estimate of the added cost even while other work comes and goes on the machine. CPU time
    (this process and its children) is recorded too: it hardly moves with load, wall time does.
    """
    runner = make_runner(tasks, root, "local", "paired")
    assert isinstance(runner.backend, LocalBackend)
    backend = runner.backend

    def drain() -> None:  # the folder removed in the background: the trial's cost
        backend.drain()

    env = bare_local_env(root)
    bare_local_trial(tasks / "bench", root, env)  # warm-up
    out: dict[str, list[float]] = {"h": [], "b": [], "h_cpu": [], "b_cpu": []}
    for trial in range(1, trials + 1):
        for which in "hb" if trial % 2 else "bh":
            start, cpu = time.perf_counter(), _cpu()
            if which == "h":
                assert runner.run(Case("bench", "CONTROL", trial)).record.verdict == "passed"
                drain()  # work the trial left in the background is its cost, not the next bare trial's
            else:
                bare_local_trial(tasks / "bench", root, env)
            out[which].append(time.perf_counter() - start)
            out[f"{which}_cpu"].append(_cpu() - cpu)
    runner.backend.close()
    return out


def bare_docker(tasks: Path, root: Path, trials: int, image: str) -> float:
    import docker

    client = docker.from_env()
    task = tasks / "bench"
    start = time.perf_counter()
    for _ in range(trials):
        ws = Path(tempfile.mkdtemp(dir=root))
        shutil.copytree(task / "environment", ws, dirs_exist_ok=True)
        shutil.copytree(task / "validation", ws / ".eval-validation")
        shutil.copytree(task / "solution", ws / ".eval-solution")
        (ws / "_lib/scaffold/python/validation").mkdir(parents=True)
        for pkg in ("scaffold", "scaffold/python", "scaffold/python/validation"):
            (ws / "_lib" / pkg / "__init__.py").write_text("")
        shutil.copy(ROOT / "scaffold/python/validation/core.py", ws / "_lib/scaffold/python/validation/core.py")
        client.containers.run(
            image,
            ["bash", "-c", "bash .eval-solution/solve.sh && PYTHONPATH=_lib python3 .eval-validation/check.py"],
            volumes={str(ws): {"bind": "/workspace", "mode": "rw"}},
            working_dir="/workspace",
            network_mode="none",
            remove=True,
        )
        results = json.loads((ws / "_test_results.json").read_text())
        assert results == {"passed": ["out.txt says done"]}, results
        shutil.rmtree(ws)
    return (time.perf_counter() - start) / trials


STARTUP_GOAL = 1.0
DOCKER_GOAL = 1.1
"""The most a docker trial may take against a bare ``docker run`` of the same commands."""
ADDED_GOAL_MS = 10.0
"""Wall milliseconds a local trial may add over the same commands run bare, in pairs and as the marginal
trial of a run."""


def installed_optional_plugins() -> tuple[str, ...]:
    """The pytest plugins (pytest11 entry points) installed in this environment that ``pip install
    comet-eval`` does not bring: their distribution is neither comet-eval nor one it requires, following
    its requirements without extras. Here: the repository's own test tools and the tracing suites' SDKs
    (langsmith's plugin alone costs about 0.8 s; anyio's, which comes with their httpx, 0.13 s), which load
    in every pytest session of this environment, ours or not."""
    from importlib.metadata import PackageNotFoundError, distribution, entry_points

    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    needed: set[str] = set()
    pending = ["comet-eval"]
    while pending:
        name = canonicalize_name(pending.pop())
        if name in needed:
            continue
        needed.add(name)
        try:
            requires = distribution(name).requires or []
        except PackageNotFoundError:
            continue
        for line in requires:
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                pending.append(req.name)
    optional = {
        ep.name for ep in entry_points(group="pytest11") if ep.dist and canonicalize_name(ep.dist.name) not in needed
    }
    return tuple(sorted(optional))


def blocking_args(names: tuple[str, ...]) -> tuple[str, ...]:
    """pytest's ``-p no:NAME`` for each of *names*."""
    return tuple(arg for name in names for arg in ("-p", f"no:{name}"))


def startup_project(root: Path, tasks: Path) -> Path:
    """The suite of a 1-trial run: the local suite's entry (scaffold.catalog.builtin) and a pytest.ini of its own."""
    project = root / "startup"
    (project / "tests").mkdir(parents=True)
    (project / "pytest.ini").write_text("[pytest]\n")
    shutil.copy(SUITES["local"], project / "tests" / "test_tasks.py")
    return project


def startup_run(project: Path, tasks: Path, n: int, extra: tuple[str, ...], count: int = 1) -> float:
    """Wall seconds of one whole `pytest` process running *count* oracle trials of the bench task."""
    pytest_bin = Path(sys.executable).parent / "pytest"
    command = [str(pytest_bin)] if pytest_bin.exists() else [sys.executable, "-m", "pytest"]
    command += ["tests", "-q", "-p", "no:cacheprovider", "-c", str(project / "pytest.ini"), "--rootdir", str(project)]
    command += ["--tasks-dir", str(tasks), "--task", "bench", "--count", str(count), "--agent", "oracle"]
    command += ["--logs-dir", str(project / "logs"), "--workspace-root", str(project / "ws")]
    command += ["--experiment-id", f"startup-{n}-{count}", *extra]
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=project, env=clean_env(), capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0 or f"{count} passed" not in proc.stdout:
        raise RuntimeError(f"{count}-trial run failed ({proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return wall


def startup_bare(task: Path, root: Path, n: int, count: int = 1) -> float:
    """Wall seconds of a fresh bash copying the environment, running solve.sh and the check in a new
    folder, *count* times."""
    env = bare_local_env(root)
    base = root / f"startup-bare-{n}-{count}"
    base.mkdir()
    script = (
        f'set -eu; for i in $(seq {count}); do ws={base}/$i; mkdir "$ws"; cp -r {task}/environment/. "$ws";'
        f' cd "$ws"; bash {task}/solution/solve.sh; cp -r {task}/validation .eval-validation;'
        f" {sys.executable} .eval-validation/check.py; grep -q passed _test_results.json; done"
    )
    start = time.perf_counter()
    subprocess.run(["bash", "-c", script], env=env, check=True)
    wall = time.perf_counter() - start
    shutil.rmtree(base)
    return wall


@dataclass
class Inspect:
    """Inspect AI's side (benchmarks/inspect_side.py): its interpreter and the task file written for it."""

    python: str
    task_file: Path
    env: dict[str, str]

    @classmethod
    def make(cls, python: str, tasks: Path, root: Path) -> Inspect:
        shim = Path(bare_local_env(root)["PYTHONPATH"])  # the validation helper's shim, which the check imports
        env = {"PATH": os.environ["PATH"], "HOME": str(root / "inspect-home"), "LANG": "C.UTF-8"}
        return cls(python, inspect_side.write_task(root, tasks / "bench", shim), env)

    def run(self, n: int, count: int = 1) -> float:
        return inspect_side.run(
            self.python, self.task_file, count, self.task_file.parent / f"inspect-logs-{n}", self.env
        )


def startup(tasks: Path, root: Path, rounds: int, inspect: Inspect | None) -> None:
    project = startup_project(root, tasks)
    blocked = installed_optional_plugins()
    runs: list[tuple[str, Callable[[int], float]]] = [
        ("comet, as installed", lambda n: startup_run(project, tasks, n, ())),
        ("bare bash", lambda n: startup_bare(tasks / "bench", root, n)),
    ]
    if blocked:
        extra = blocking_args(blocked)
        runs.insert(1, ("comet, optional plugins off", lambda n: startup_run(project, tasks, n, extra)))
    if inspect is not None:
        runs.insert(-1, ("Inspect AI, local sandbox", inspect.run))
    for _, run in runs:
        run(0)  # warm-up: bytecode, assertion rewriting, the templates' bytecode cache, the disk cache
    times: dict[str, list[float]] = {label: [] for label, _ in runs}
    for r in range(1, rounds + 1):
        for label, run in runs:
            times[label].append(run(r))
        print("  round " + str(r) + ": " + "   ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()), flush=True)
    med = {label: statistics.median(values) for label, values in times.items()}
    main_label = "comet, optional plugins off" if blocked else "comet, as installed"
    verdict = "PASS" if med[main_label] <= STARTUP_GOAL else "MISS"
    print(
        "start-up, 1-trial run (medians): "
        + ", ".join(f"{label} {value:.2f} s" for label, value in med.items())
        + f"; {main_label} against the goal <= {STARTUP_GOAL:.1f} s: {verdict}"
    )
    if blocked:
        print(
            f"  (optional plugins: {', '.join(blocked)}: installed for the repository's own tests, not by comet-eval)"
        )
    if inspect is None:
        print("  Inspect AI (local sandbox): not compared (give --inspect-python)")


def marginal(tasks: Path, root: Path, count: int, rounds: int, inspect: Inspect | None) -> None:
    """The cost of one more trial, from whole runs of 1 and *count* trials (see the module docstring)."""
    project = startup_project(root / "marginal", tasks)
    extra = blocking_args(installed_optional_plugins())
    tools: list[tuple[str, Callable[[int, int], float]]] = [
        ("comet", lambda n, k: startup_run(project, tasks, n, extra, count=k)),
        ("bare bash", lambda n, k: startup_bare(tasks / "bench", root, n, count=k)),
    ]
    if inspect is not None:
        tools.insert(1, ("Inspect AI, local sandbox", inspect.run))
    costs: dict[str, list[float]] = {label: [] for label, _ in tools}
    cpu: dict[str, list[float]] = {label: [] for label, _ in tools}
    for r in range(1, rounds + 1):
        for label, run in tools:
            (one, one_cpu), (many, many_cpu) = _timed(run, 100 + r, 1), _timed(run, 200 + r, count)
            costs[label].append((many - one) / (count - 1))
            cpu[label].append((many_cpu - one_cpu) / (count - 1))
        print(
            "  round " + str(r) + ": " + "   ".join(f"{k} {v[-1] * 1000:.1f} ms" for k, v in costs.items()), flush=True
        )
    med = {label: statistics.median(values) * 1000 for label, values in costs.items()}
    med_cpu = {label: statistics.median(values) * 1000 for label, values in cpu.items()}
    # The difference within each round, then their median: a round's runs follow one another within
    # seconds, so they share the machine's mood; the medians of each tool's rounds need not.
    added = statistics.median(c - b for c, b in zip(costs["comet"], costs["bare bash"], strict=True)) * 1000
    added_cpu = statistics.median(c - b for c, b in zip(cpu["comet"], cpu["bare bash"], strict=True)) * 1000
    print(
        f"marginal trial, whole runs of 1 and {count} trials (medians): "
        + ", ".join(f"{label} {value:.1f} ms" for label, value in med.items())
        + f"; comet adds {added:.1f} ms over bare, median of the rounds' differences"
        + f" (goal <= {ADDED_GOAL_MS:g} ms: {'PASS' if added <= ADDED_GOAL_MS else 'MISS'})"
    )
    print(
        "  its CPU (the process tree's, which load moves far less than wall time): "
        + ", ".join(f"{label} {value:.1f} ms" for label, value in med_cpu.items())
        + f"; comet adds {added_cpu:.1f} ms"
    )


def _timed(run: Callable[[int, int], float], n: int, count: int) -> tuple[float, float]:
    """The wall seconds *run* returns, and the CPU seconds of the processes it started and waited for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = run(n, count)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def _file_system(path: Path) -> str:
    """The type of the file system *path* is on, from /proc/mounts (the longest mount point above it)."""
    best, kind = "", "unknown"
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return kind
    resolved = str(path.resolve())
    for line in mounts:
        fields = line.split()
        under = len(fields) > 2 and (resolved == fields[1] or resolved.startswith(fields[1].rstrip("/") + "/"))
        if under and len(fields[1]) >= len(best):
            best, kind = fields[1], fields[2]
    return kind


def alternate(rounds: int, a: Callable[[int], float], b: Callable[[int], float]) -> tuple[list[float], list[float]]:
    xs, ys = [], []
    for r in range(rounds):
        xs.append(a(r))
        ys.append(b(r))
        print(
            f"  round {r + 1}: harness {xs[-1] * 1000:8.1f} ms/trial   bare {ys[-1] * 1000:8.1f} ms/trial", flush=True
        )
    return xs, ys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=40, help="trials per measurement (default 40)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (default 5)")
    parser.add_argument("--backend", choices=("local", "docker", "both", "startup"), default="both")
    parser.add_argument("--startup-rounds", type=int, default=5, help="rounds of the 1-trial run (default 5)")
    parser.add_argument("--inspect-python", metavar="PYTHON", help="an interpreter with inspect-ai, to compare")
    parser.add_argument("--marginal-trials", type=int, default=101, help="trials of the long whole runs (default 101)")
    parser.add_argument(
        "--dir",
        type=Path,
        help="the folder every run's files go in, both sides alike (default: the system's temporary folder); "
        "e.g. /dev/shm, to leave the disk out of the comparison",
    )
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="comet-bench-overhead-", dir=args.dir) as tmp:
        root = Path(tmp)
        tasks = make_task(root)
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, {args.trials} trials x {args.rounds} rounds")
        print(f"files in {root} ({_file_system(root)})")
        inspect = None
        if args.inspect_python:
            inspect = Inspect.make(args.inspect_python, tasks, root)
            print(f"Inspect AI {inspect_side.version(args.inspect_python)} ({args.inspect_python})")
        print(f"start-up: {args.startup_rounds} rounds of alternating 1-trial runs after 1 warm-up each:")
        startup(tasks, root, args.startup_rounds, inspect)
        print(f"marginal: {args.rounds} rounds of whole runs of 1 and {args.marginal_trials} trials:")
        marginal(tasks, root, args.marginal_trials, args.rounds, inspect)
        if args.backend == "startup":
            return 0
        if args.backend in ("local", "both"):
            n = args.trials * args.rounds
            print(f"local backend (oracle) vs bare subprocess in fresh directories, {n} interleaved pairs:")
            pairs = paired_local(tasks, root, n)
            h, b = pairs["h"], pairs["b"]
            added = statistics.median(x - y for x, y in zip(h, b, strict=True)) * 1000
            added_cpu = statistics.median(x - y for x, y in zip(pairs["h_cpu"], pairs["b_cpu"], strict=True)) * 1000
            verdict = "PASS" if added <= ADDED_GOAL_MS else "MISS"
            print(
                f"local: harness {statistics.median(h) * 1000:.1f} ms, bare {statistics.median(b) * 1000:.1f} ms per"
                f" trial (medians); added {added:.1f} ms per trial, median of pair differences"
                f" (goal, all of a trial in series, <= {ADDED_GOAL_MS:g} ms: {verdict});"
                f" ratio {statistics.median(h) / statistics.median(b):.2f}"
            )
            print(
                f"local: added CPU {added_cpu:.1f} ms per trial (harness and bare, process and children;"
                f" load-independent lower bound of the added wall time)"
            )
        if args.backend in ("docker", "both"):
            try:
                import docker

                docker.from_env().ping()
            except Exception as exc:
                print(f"docker: skipped, no engine reachable ({type(exc).__name__}: {exc})")
                return 0
            print("docker backend (oracle) vs bare docker run of the same commands on the same image:")
            from scaffold.catalog.tasks import load_task
            from scaffold.workspaces.docker import DockerBackend

            probe = DockerBackend(root / "ws-probe")
            bench_task = load_task(tasks / "bench")
            probe.prepare(bench_task)
            image = probe.image_tag(bench_task)
            probe.close()
            h, b = alternate(
                args.rounds,
                lambda r: harness(tasks, root, "docker", args.trials, f"d{r}"),
                lambda r: bare_docker(tasks, root, args.trials, image),
            )
            ratio = statistics.median(h) / statistics.median(b)
            print(
                f"docker: harness {statistics.median(h) * 1000:.1f} ms, bare {statistics.median(b) * 1000:.1f} ms per"
                f" trial; ratio {ratio:.2f} (goal <= {DOCKER_GOAL:g}: {'PASS' if ratio <= DOCKER_GOAL else 'MISS'})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Collection benchmark: how long pytest takes to collect a large comet-eval suite, against plain pytest.

Builds two throw-away projects in a temporary folder:

* ``comet/``: ``--tasks`` task folders (laid out as ``tests/conftest.py``'s TaskFactory writes them) and
  ``--treatments`` treatments (CONTROL plus others holding one small skill each), every task listing
  them all in ``default_treatments``, and the local suite's entry;
* ``plain/``: one test function with a plain ``@pytest.mark.parametrize`` over the same number of ids,
  of the same shape (``<task>-<treatment>-r<trial>``).

Each project is collected in a subprocess with ``pytest --collect-only -q --count=<trials>
-p no:cacheprovider -c <its own pytest.ini>``, alternating comet and plain for ``--repeat`` rounds after
one discarded warm-up each. The comet plugin is installed, so it is loaded in both: in the plain project it
must cost nothing. pytest-repeat (also installed) owns ``--count`` and would multiply the plain test by it,
so the plain test carries ``@pytest.mark.repeat(1)``, as the comet plugin does for its own test.

Informational: exits 0 whatever the ratio (the goal is printed as PASS/MISS); exits 1 only when a run
fails or collects the wrong number of items.

    .venv/bin/python benchmarks/collection.py [--tasks 100] [--treatments 10] [--trials 10] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scaffold.catalog.builtin import SUITES

REPO = Path(__file__).resolve().parent.parent
TEST_FILE = SUITES["local"]
GOAL = 1.2
BLOCKED = "plain, plugin blocked"
INI = "[pytest]\n"
COLLECTED = re.compile(r"^(\d+) tests? collected in ([0-9.]+)s", re.MULTILINE)


# --- projects ---------------------------------------------------------------------------------------------


def task_names(n: int) -> list[str]:
    return [f"task-{i:03d}" for i in range(n)]


def treatment_names(n: int) -> list[str]:
    return ["CONTROL", *(f"SKILL_{i:02d}" for i in range(1, n))]


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def quoted(values: list[str]) -> str:
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def build_comet(root: Path, tasks: list[str], treatments: list[str]) -> None:
    """A project laid out like the repository: local/tasks, local/treatments, local/skills, local/tests."""
    local = root / "local"
    write(root / "pytest.ini", INI)
    write(local / "tests" / "test_tasks.py", TEST_FILE.read_text(encoding="utf-8"))

    yaml_lines = ["CONTROL:", "  description: No skills (baseline)", "  skills: []"]
    for name in treatments[1:]:
        skill = name.lower().replace("_", "-")
        write(
            local / "skills" / skill / "SKILL.md",
            f"---\nname: {skill}\ndescription: benchmark skill {skill}\n---\nUse it.\n",
        )
        yaml_lines += [f"{name}:", f"  description: benchmark treatment {name}", "  skills:"]
        yaml_lines += [f"    - ../skills/{skill}"]
    write(local / "treatments" / "bench.yaml", "\n".join(yaml_lines) + "\n")

    defaults = quoted(treatments)
    index = ["tasks:"]
    for name in tasks:
        folder = local / "tasks" / name
        write(
            folder / "task.toml",
            "[metadata]\n"
            f'name = "{name}"\n'
            f'description = "benchmark task {name}"\n'
            'category = "generic"\n'
            f"default_treatments = {defaults}\n\n"
            "[environment]\ntimeout_sec = 30\n\n"
            '[validation]\ntest_scripts = ["check.py"]\ntimeout = 30\n',
        )
        write(folder / "instruction.md", "Write done into out.txt. Run id: {run_id}\n")
        write(folder / "environment" / "Dockerfile", "ARG BASE_IMAGE=comet-eval/base:bookworm\nFROM ${BASE_IMAGE}\n")
        write(folder / "validation" / "check.py", "print('check')\n")
        write(folder / "solution" / "solve.sh", "set -eu\necho done > out.txt\n")
        index += [
            f"  - name: {name}",
            "    category: generic",
            f"    default_treatments: {defaults}",
            f'    description: "benchmark task {name}"',
        ]
    write(local / "tasks" / "index.yaml", "\n".join(index) + "\n")


def build_plain(root: Path, tasks: list[str], treatments: list[str], trials: int) -> None:
    """One test function, plainly parametrized over the same ids (built by comprehension, like a real suite)."""
    write(root / "pytest.ini", INI)
    write(
        root / "local" / "tests" / "test_tasks.py",
        '"""Plain-pytest baseline of the collection benchmark."""\n\n'
        "import pytest\n\n"
        f"TASKS = {tasks!r}\n"
        f"TREATMENTS = {treatments!r}\n"
        f"CASES = [(t, s, r) for t in TASKS for s in TREATMENTS for r in range(1, {trials} + 1)]\n\n\n"
        "@pytest.mark.repeat(1)  # pytest-repeat owns --count; the comet plugin neutralises it the same way\n"
        '@pytest.mark.parametrize("case", CASES, ids=[f"{t}-{s}-r{r}" for t, s, r in CASES])\n'
        "def test_task(case):\n"
        "    assert case\n",
    )


# --- runs -------------------------------------------------------------------------------------------------


def pytest_command(project: Path, trials: int, extra: tuple[str, ...] = ()) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest",
        "--collect-only",
        "-q",
        f"--count={trials}",
        "-p",
        "no:cacheprovider",
        "-c",
        str(project / "pytest.ini"),
        "--rootdir",
        str(project),
        *extra,
        "local/tests",
    ]


def clean_env() -> dict[str, str]:
    env = dict(os.environ)
    # PYTHONDONTWRITEBYTECODE (set in this machine's sessions) would make every run compile the plugin's
    # modules again whenever their .pyc files are older than the sources: not a user's collection.
    for key in ("PYTHONDONTWRITEBYTECODE", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        env.pop(key, None)
    return env


class RunError(Exception):
    pass


def collect(project: Path, trials: int, expected: int, extra: tuple[str, ...] = ()) -> tuple[float, float]:
    """Collect *project* once; return (wall seconds, pytest's own "collected in" seconds)."""
    start = time.perf_counter()
    proc = subprocess.run(
        pytest_command(project, trials, extra),
        cwd=project,
        env=clean_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
    if proc.returncode != 0:
        raise RunError(f"{project.name}: pytest exited {proc.returncode}\n{tail}")
    found = COLLECTED.search(proc.stdout)
    if not found:
        raise RunError(f"{project.name}: no 'N tests collected' line in the output\n{tail}")
    count = int(found.group(1))
    if count != expected:
        raise RunError(f"{project.name}: collected {count} items, expected {expected}\n{tail}")
    if "-INVALID" in proc.stdout:
        raise RunError(f"{project.name}: some items are INVALID (broken generated tasks or treatments)\n{tail}")
    return wall, float(found.group(2))


BREAKDOWN = """
import json, sys, time
from pathlib import Path
t0 = time.perf_counter()
import pytest_comet.plugin
t1 = time.perf_counter()
from scaffold.experiment.cases import select_cases
from scaffold.catalog.tasks import load_catalog
from scaffold.catalog.treatments import load_treatments
local = Path(sys.argv[1]) / "local"
tasks = load_catalog([local / "tasks"])
t2 = time.perf_counter()
treatments = load_treatments([local / "treatments"])
t3 = time.perf_counter()
cases = select_cases(tasks, treatments, count=int(sys.argv[2]))
ids = [case.id for case in cases]
t4 = time.perf_counter()
print(json.dumps({"import pytest_comet.plugin": t1 - t0, "load_catalog (tasks)": t2 - t1,
                  "load_treatments": t3 - t2, "select_cases + ids": t4 - t3, "cases": len(cases)}))
"""


def breakdown(project: Path, trials: int) -> dict[str, float] | None:
    """The plugin's own share of a comet collection, timed in a fresh interpreter (median of 3)."""
    samples: list[dict[str, float]] = []
    for _ in range(3):
        proc = subprocess.run(
            [sys.executable, "-c", BREAKDOWN, str(project), str(trials)],
            env=clean_env(),
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            print(f"(breakdown skipped: {proc.stderr.strip().splitlines()[-1:]})")
            return None
        samples.append(json.loads(proc.stdout))
    return {key: statistics.median(s[key] for s in samples) for key in samples[0]}


# --- main -------------------------------------------------------------------------------------------------

Run = tuple[str, Path, tuple[str, ...]]  # label, project, extra pytest arguments


def measure(runs: list[Run], trials: int, expected: int, repeat: int) -> tuple[dict[str, list[float]], ...]:
    """One discarded warm-up of each run, then *repeat* rounds of all runs in turn (A B C A B C ...)."""
    walls: dict[str, list[float]] = {label: [] for label, _, _ in runs}
    inner: dict[str, list[float]] = {label: [] for label, _, _ in runs}
    for _, project, extra in runs:
        collect(project, trials, expected, extra)  # warm-up: bytecode, assertion rewriting, disk cache
    for i in range(repeat):
        for label, project, extra in runs:
            wall, reported = collect(project, trials, expected, extra)
            walls[label].append(wall)
            inner[label].append(reported)
        times = "  ".join(f"{label} {walls[label][-1]:.2f}s" for label, _, _ in runs)
        print(f"  round {i + 1}: {times}", flush=True)
    return walls, inner


def report(walls: dict[str, list[float]], inner: dict[str, list[float]]) -> None:
    med = {label: statistics.median(values) for label, values in walls.items()}
    med_inner = {label: statistics.median(values) for label, values in inner.items()}
    print()
    print(f"{'run':<22} {'wall s (median)':>16} {'min':>7} {'max':>7} {'pytest-reported s':>18}")
    for label, values in walls.items():
        print(f"{label:<22} {med[label]:>16.2f} {min(values):>7.2f} {max(values):>7.2f} {med_inner[label]:>18.2f}")
    ratio = med["comet"] / med["plain"]
    verdict = "PASS" if ratio <= GOAL else "MISS"
    print(f"\nratio comet/plain (wall): {ratio:.2f}  goal <= {GOAL}: {verdict}")
    print(
        "ratio comet/plain (pytest-reported, excludes interpreter start-up):"
        f" {med_inner['comet'] / med_inner['plain']:.2f}"
    )
    blocked = med[BLOCKED]
    print(
        f"plugin cost to a plain project (wall, plain - blocked): {med['plain'] - blocked:+.2f}s"
        f" ({med['plain'] / blocked:.2f}x)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=100, help="task folders (default 100)")
    parser.add_argument("--treatments", type=int, default=10, help="treatments incl. CONTROL (default 10)")
    parser.add_argument("--trials", type=int, default=10, help="--count passed to pytest (default 10)")
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds (default 5)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary projects and print where")
    args = parser.parse_args(argv)
    if min(args.tasks, args.treatments, args.trials, args.repeat) < 1:
        parser.error("--tasks, --treatments, --trials and --repeat must be at least 1")

    tasks, treatments = task_names(args.tasks), treatment_names(args.treatments)
    expected = args.tasks * args.treatments * args.trials
    tmp = Path(tempfile.mkdtemp(prefix="comet-bench-collection-"))
    comet, plain = tmp / "comet", tmp / "plain"
    try:
        build_comet(comet, tasks, treatments)
        build_plain(plain, tasks, treatments, args.trials)
        # The third run is informational: what the plugin costs a plain project that does not use it (it is
        # always installed, so every pytest session imports it).
        runs: list[Run] = [("comet", comet, ()), ("plain", plain, ()), (BLOCKED, plain, ("-p", "no:pytest_comet"))]
        print(
            f"collection: {args.tasks} tasks x {args.treatments} treatments x {args.trials} trials"
            f" = {expected} items; {args.repeat} rounds of {len(runs)} alternating runs after 1 warm-up each"
        )
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, projects in {tmp}")
        try:
            walls, inner = measure(runs, args.trials, expected, args.repeat)
        except RunError as exc:
            print(f"FAILED: {exc}", file=sys.stderr)
            return 1
        report(walls, inner)

        parts = breakdown(comet, args.trials)
        if parts:
            print("\ncomet plugin's own work, in a fresh interpreter (median of 3):")
            for key, value in parts.items():
                if key != "cases":
                    print(f"  {key:<28} {value:6.3f}s")
            print(f"  ({int(parts['cases'])} cases; the rest of the comet run is pytest's own per-item work)")
        return 0
    finally:
        if args.keep:
            print(f"\nkept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

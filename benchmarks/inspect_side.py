"""Inspect AI's side of overhead.py: overhead.py's bench task as an Inspect task on its local sandbox.

The same work per sample as our oracle trial: the task's environment files written into the sample's
sandbox, solve.sh run there, then the check script with the validation helper on its path, its
``_test_results.json`` read back. The model is Inspect's ``mockllm/model`` (no call is made: the solver
never generates). Samples run one at a time (``--max-samples 1``), as our trials do in one process.

Inspect AI is not a dependency of comet-eval: give overhead.py ``--inspect-python`` the interpreter of an
environment that has it (``python -m venv /opt/inspect && /opt/inspect/bin/pip install inspect-ai``).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

TASK_FILE = """\
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import CORRECT, INCORRECT, Score, accuracy, scorer
from inspect_ai.solver import solver
from inspect_ai.util import sandbox

ENV = Path({env!r})
SOLVE = {solve!r}
CHECK = {check!r}
SHIM = {shim!r}


@solver
def oracle():
    async def solve(state, generate):
        box = sandbox()
        for path in sorted(ENV.rglob("*")):
            if path.is_file():
                await box.write_file(str(path.relative_to(ENV)), path.read_text())
        result = await box.exec(["bash", "-c", SOLVE])
        assert result.success, result.stderr
        return state

    return solve


@scorer(metrics=[accuracy()])
def check():
    async def score(state, target):
        box = sandbox()
        await box.write_file(".eval-validation/check.py", CHECK)
        result = await box.exec(["python3", ".eval-validation/check.py"], env={{"PYTHONPATH": SHIM}})
        ok = result.success and "passed" in await box.read_file("_test_results.json")
        assert ok, result.stderr  # a sample error fails the eval (exit status 1): no silent failure
        return Score(value=CORRECT if ok else INCORRECT)

    return score


@task
def bench(n: int = 1):
    samples = [Sample(input="Write done into out.txt.", target="done", id=i) for i in range(1, n + 1)]
    return Task(dataset=samples, solver=oracle(), scorer=check(), sandbox="local")
"""


def write_task(root: Path, task: Path, shim: Path) -> Path:
    """The Inspect task file for overhead.py's bench task folder *task*."""
    path = root / "inspect_bench.py"
    path.write_text(
        TASK_FILE.format(
            env=str(task / "environment"),
            solve=(task / "solution" / "solve.sh").read_text(),
            check=(task / "validation" / "check.py").read_text(),
            shim=str(shim),
        )
    )
    return path


def version(python: str) -> str:
    proc = subprocess.run(
        [python, "-c", "import inspect_ai; print(inspect_ai.__version__)"], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{python} cannot import inspect_ai: {proc.stderr.strip()[-300:]}")
    return proc.stdout.strip()


def run(python: str, task_file: Path, samples: int, log_dir: Path, env: dict[str, str]) -> float:
    """Wall seconds of one whole ``inspect eval`` process of *samples* samples; raises unless all pass."""
    command = [python, "-m", "inspect_ai", "eval", f"{task_file}@bench", "-T", f"n={samples}"]
    command += ["--model", "mockllm/model", "--max-samples", "1", "--log-dir", str(log_dir), "--display", "none"]
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=task_file.parent, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"inspect eval failed ({proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return wall

"""Running a task's validation in a workspace, after the agent, with the scripts copied in only then."""

from __future__ import annotations

import compileall
from importlib import resources
from pathlib import Path, PurePosixPath

from scaffold.procs import ProcessResult
from scaffold.tasks import Task
from scaffold.validation.results import Check, ValidationOutcome, parse_results
from scaffold.workspaces import Workspace

__all__ = ["RESULTS_FILE", "VALIDATION_DIR", "validate", "write_shim"]

VALIDATION_DIR = ".eval-validation"
RESULTS_FILE = "_test_results.json"
_SHIM_DIR = f"{VALIDATION_DIR}/_lib"


def validate(task: Task, workspace: Workspace, log_dir: Path) -> ValidationOutcome:
    """Artifact checks, then each test script with the validation timeout.

    A script that crashes or times out is a failed check with its reason, never a harness error.
    """
    spec = task.spec.validation
    checks: list[Check] = []
    for pattern in spec.target_artifacts:
        matches = workspace.glob(pattern)
        checks.append(
            Check(
                f"artifact {pattern}",
                "passed" if matches else "failed",
                "artifact",
                f"found {', '.join(matches[:3])}" if matches else "no file matches",
            )
        )
    expected = {g: tuple(workspace.glob(g)) for g in task.spec.evaluation.expected_artifacts}

    shared = getattr(workspace, "validation_pythonpath", None)
    if spec.test_scripts:
        workspace.put(task.validation_dir, VALIDATION_DIR)
        if not shared:
            _install_shim(workspace)
    env = {"PYTHONPATH": shared or f"{workspace.root}/{_SHIM_DIR}"}
    for script in spec.test_scripts:
        workspace.remove(RESULTS_FILE)
        stem = PurePosixPath(script).as_posix().replace("/", "__")
        result = workspace.exec(
            [*_interpreter(script, workspace), f"{VALIDATION_DIR}/{script}"],
            timeout=spec.timeout,
            env=env,
            stdout_path=log_dir / "validation" / f"{stem}.stdout.log",
            stderr_path=log_dir / "validation" / f"{stem}.stderr.log",
        )
        checks.extend(_script_checks(script, result, workspace.read_text(RESULTS_FILE), spec.timeout))
    return ValidationOutcome(tuple(checks), expected)


def _interpreter(script: str, workspace: Workspace) -> list[str]:
    if script.endswith(".py"):
        return [workspace.python]
    if script.endswith(".sh"):
        return ["bash"]
    return []


_SHIM_PACKAGES = ("scaffold", "scaffold/python", "scaffold/python/validation")


def _core_source() -> str:
    return resources.files("scaffold.python.validation").joinpath("core.py").read_text(encoding="utf-8")


def _install_shim(workspace: Workspace) -> None:
    """Make ``scaffold.python.validation.core`` importable whatever Python runs the scripts, from a
    standard-library-only copy inside the workspace (containers do not have comet-eval installed)."""
    for package in _SHIM_PACKAGES:
        workspace.write_text(f"{_SHIM_DIR}/{package}/__init__.py", "")
    workspace.write_text(f"{_SHIM_DIR}/scaffold/python/validation/core.py", _core_source())


def write_shim(folder: Path) -> None:
    """The same shim in a host folder, for backends whose trials can share one."""
    for package in _SHIM_PACKAGES:
        (folder / package).mkdir(parents=True, exist_ok=True)
        (folder / package / "__init__.py").write_text("")
    (folder / "scaffold/python/validation/core.py").write_text(_core_source(), encoding="utf-8")
    # Compiled once here: validation runs with PYTHONDONTWRITEBYTECODE (nothing written into the
    # workspace), so without a ready .pyc every script would compile the shim again, about a
    # millisecond per trial. Same interpreter as the local backend's commands, so the .pyc is valid.
    compileall.compile_dir(folder, quiet=1)


def _script_checks(script: str, result: ProcessResult, results_json: str | None, timeout: float) -> list[Check]:
    source = f"script:{script}"
    if result.timed_out:
        return [Check(script, "failed", source, f"timed out after {timeout:g}s")]
    checks = parse_results(results_json, result.stdout(), source)
    if checks is None:
        if result.exit_code == 0:
            return [Check(script, "passed", source, "exited 0 without a results file")]
        return [Check(script, "failed", source, _exit_reason(result))]
    if not checks:
        return [Check(script, "failed", source, "reported no checks")]
    if result.exit_code != 0 and all(c.status != "failed" for c in checks):
        checks.append(Check(script, "failed", source, _exit_reason(result) + " after reporting no failure"))
    return checks


def _exit_reason(result: ProcessResult) -> str:
    stderr = result.stderr(800).strip()
    last = stderr.splitlines()[-1] if stderr else ""
    return f"exited with code {result.exit_code}" + (f": {last}" if last else "")

"""Running a task's validation in a workspace, after the agent, with the scripts copied in only then."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from scaffold.process_output import ProcessResult
from scaffold.tasks import Task
from scaffold.validation.results import ValidationCheck, ValidationOutcome, parse_results
from scaffold.workspaces.base import Workspace
from scaffold.workspaces.layout import RESULTS_FILE, SHIM_DIR, VALIDATION_DIR, shim_files

__all__ = ["validate"]


def validate(task: Task, workspace: Workspace, log_dir: Path) -> ValidationOutcome:
    """Artifact checks, then each test script with the validation timeout.

    The caller has begun the validation phase (``Workspace.begin_validation``): the agent is done.
    A script that crashes or times out is a failed check with its reason, never a harness error.
    """
    spec = task.spec.validation
    checks: list[ValidationCheck] = []
    for pattern in spec.target_artifacts:
        matches = workspace.glob(pattern)
        checks.append(
            ValidationCheck(
                f"artifact {pattern}",
                "passed" if matches else "failed",
                "artifact",
                f"found {', '.join(matches[:3])}" if matches else "no file matches",
            )
        )
    expected = {g: tuple(workspace.glob(g)) for g in task.spec.evaluation.expected_artifacts}

    shared = workspace.validation_pythonpath
    if spec.test_scripts:
        workspace.put(task.validation_dir, VALIDATION_DIR)
        if not shared:
            for rel, text in shim_files():
                workspace.write_text(f"{SHIM_DIR}/{rel}", text)
    env = {"PYTHONPATH": shared or f"{workspace.root}/{SHIM_DIR}"}
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


def _script_checks(
    script: str, result: ProcessResult, results_json: str | None, timeout: float
) -> list[ValidationCheck]:
    source = f"script:{script}"
    if result.timed_out:
        return [ValidationCheck(script, "failed", source, f"timed out after {timeout:g}s")]
    checks = parse_results(results_json, result.stdout(), source)
    if checks is None:
        if result.exit_code == 0:
            return [ValidationCheck(script, "passed", source, "exited 0 without a results file")]
        return [ValidationCheck(script, "failed", source, _exit_reason(result))]
    if not checks:
        return [ValidationCheck(script, "failed", source, "reported no checks")]
    if result.exit_code != 0 and all(c.status != "failed" for c in checks):
        checks.append(ValidationCheck(script, "failed", source, _exit_reason(result) + " after reporting no failure"))
    return checks


def _exit_reason(result: ProcessResult) -> str:
    stderr = result.stderr(800).strip()
    last = stderr.splitlines()[-1] if stderr else ""
    return f"exited with code {result.exit_code}" + (f": {last}" if last else "")

"""Running a task's validation in a workspace, after the agent, with the scripts copied in only then."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from scaffold.catalog.tasks import Task
from scaffold.util.atomic import json_bytes
from scaffold.util.process_result import ProcessResult
from scaffold.validation.results import ValidationCheck, ValidationOutcome, parse_outputs, parse_results
from scaffold.workspaces.base import Workspace
from scaffold.workspaces.layout import CONTEXT_FILE, RESULTS_FILE, SHIM_DIR, VALIDATION_DIR, shim_files

__all__ = ["validate"]


def validate(
    task: Task, workspace: Workspace, log_dir: Path, context: Mapping[str, object] | None = None
) -> ValidationOutcome:
    """Artifact checks, then each test script with the validation timeout.

    The caller has begun the validation phase (``Workspace.begin_validation``): the agent is done.
    A script that crashes or times out is a failed check with its reason, never a harness error.
    *context* (task, treatment, trial, run_id) is written, with the task's outputs, to
    ``_test_context.json`` before the first check, for scripts that read it (``load_test_context``).
    """
    spec = task.spec.validation
    outputs = dict(task.spec.evaluation.outputs)
    if spec.test_scripts:
        # Written here, where the scripts are copied in: after begin_validation, so whatever the agent
        # left under this name is replaced, and before any check; never an artifact (filtered below).
        workspace.write_text(CONTEXT_FILE, json_bytes({**(context or {}), "outputs": outputs}).decode("utf-8"))
    checks: list[ValidationCheck] = []
    for pattern in spec.target_artifacts:
        matches = _artifacts(workspace, pattern)
        checks.append(
            ValidationCheck(
                f"artifact {pattern}",
                "passed" if matches else "failed",
                "artifact",
                f"found {', '.join(matches[:3])}" if matches else "no file matches",
            )
        )
    expected = {g: tuple(_artifacts(workspace, g)) for g in task.spec.evaluation.expected_artifacts}

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
        results_json = workspace.read_text(RESULTS_FILE)
        checks.extend(_script_checks(script, result, results_json, spec.timeout))
        if not result.timed_out:
            reported, problems = parse_outputs(results_json, result.stdout(), f"script:{script}")
            outputs.update({k: _workspace_relative(v, workspace.root) for k, v in reported.items()})
            checks.extend(problems)
    return ValidationOutcome(tuple(checks), expected, outputs)


def _artifacts(workspace: Workspace, pattern: str) -> list[str]:
    """What *pattern* matches, without the harness's context file: it is no artifact of the agent's."""
    return [m for m in workspace.glob(pattern) if m != CONTEXT_FILE]


def _workspace_relative(value: str, root: str) -> str:
    """An absolute path inside the workspace as a workspace-relative one, so a validator that reports
    ``Path.cwd() / "pkg"`` gives the same output on every backend (rubrics read files by relative path)."""
    prefix = root.rstrip("/") + "/"
    if value.startswith(prefix):
        return value[len(prefix) :].rstrip("/") or "."
    return value


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

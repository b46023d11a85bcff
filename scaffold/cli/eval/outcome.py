"""How a ``comet eval`` run ends: its exit status, and the lines after the pytest session
(from pytest's status, the progress plugin and what the controller's reporter decided).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, TextIO

from scaffold.cli.eval.plan import EvalPlan, has_gates
from scaffold.cli.eval.progress import Progress
from scaffold.errors import ExitStatus

__all__ = ["EVAL_STATUSES", "finish"]

EVAL_STATUSES: Final = (
    ExitStatus.OK,
    ExitStatus.FAILED,
    ExitStatus.USAGE,
    ExitStatus.NO_ANSWER,
    ExitStatus.REPORTING,
    ExitStatus.INTERRUPTED,
)
"""The statuses ``comet eval`` ends with (scaffold.errors.ExitStatus: one table for every command).
REPORTING is the same number from pytest and from ``comet eval``; a gate failure wins over it."""


def finish(plan: EvalPlan, code: int, progress: Progress, reporter: Any, out: TextIO, tracing: Any = None) -> int:
    """The lines after the run and the exit status, from pytest's status and what the reporter decided;
    *tracing*, a tracing suite's plugin (``--suite langsmith|langfuse``): its ``lines``, and ``failed``
    when the upload failed (the session's status is then ExitStatus.REPORTING unless a gate failed)."""
    reporting_failed = code == ExitStatus.REPORTING
    if reporting_failed:
        code = 0  # the trials ran and the gates passed: answered below like a clean run, then status 6
    for message in progress.collect_errors:
        print(f"comet eval: {message}", file=sys.stderr)
    if code == 4:  # pytest's usage error: already printed by pytest (a credential, a manifest, a gate)
        return ExitStatus.USAGE
    if code == 2:
        print("comet eval: interrupted", file=sys.stderr)
        return ExitStatus.INTERRUPTED
    if code not in (0, 1):
        print(f"comet eval: the pytest session ended with status {code} (no trial could run)", file=sys.stderr)
        return ExitStatus.NO_ANSWER
    if reporter is not None:
        for line in reporter.identities:
            print(f"treatment {line}", file=out)
        for line in reporter.verdicts:
            print(f"verdict: {line}", file=out)
        for path in reporter.paths:
            print(f"{path.stem.replace('_', ' ')}: {path}", file=out)
        if reporter.report_error:
            print(f"reports not written: {reporter.report_error}", file=out)
        for result in reporter.gate_results:
            print(f"gate {'PASS' if result.passed else 'FAIL'}: {result.gate.expression}: {result.message}", file=out)
        for line in reporter.quality:
            print(line, file=out)
        for line in reporter.budget_lines():
            print(line, file=out)
    for line in getattr(tracing, "lines", ()):
        print(line, file=out)
    answered = _answered(progress.records)
    if not answered:
        print(
            "comet eval: no answer: every trial was excluded as environment noise or ended in a harness error "
            f"(see {plan.experiment_dir})",
            file=sys.stderr,
        )
        return ExitStatus.NO_ANSWER
    if has_gates(plan) and code != 0:
        return ExitStatus.FAILED
    if not has_gates(plan) and progress.invalid:
        print(f"comet eval: {progress.invalid} item(s) could not run (invalid tasks)", file=sys.stderr)
        return ExitStatus.FAILED
    if reporting_failed or bool(getattr(tracing, "failed", False)):
        print(
            f"comet eval: reporting to {plan.suite} failed (see above); the local results are complete", file=sys.stderr
        )
        return ExitStatus.REPORTING
    return ExitStatus.OK


def _answered(records: Sequence[Path]) -> bool:
    """Whether any trial counts: scored (not a harness error) and not excluded as noise."""
    from scaffold.errors import RecordError
    from scaffold.records.files import read_record

    for path in records:
        try:
            record = read_record(path)
        except (RecordError, OSError):
            continue
        if record.verdict != "error" and record.noise.category != "excluded":
            return True
    return False

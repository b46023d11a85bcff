"""How a ``comet eval`` run ends: its exit status, and the lines after the pytest session
(from pytest's status, the progress plugin and what the controller's reporter decided).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final, TextIO

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
    ExitStatus.TERMINATED,
)
"""The statuses ``comet eval`` ends with (scaffold.errors.ExitStatus: one table for every command).
REPORTING is the same number from pytest and from ``comet eval``; a gate failure wins over it."""


_PYTEST_INTERRUPTED = 2  # pytest.ExitCode.INTERRUPTED
_PYTEST_USAGE_ERROR = 4  # pytest.ExitCode.USAGE_ERROR


def finish(plan: EvalPlan, code: int, progress: Progress, out: TextIO) -> int:
    """The lines after the run and the exit status, from pytest's status and what the session concluded
    (the outcomes the progress plugin was handed through the plugin's hooks: the controller's, and a
    tracing suite's under ``--suite langsmith|langfuse``, whose failed upload makes the status REPORTING
    unless a gate failed)."""
    reporting_failed = code == ExitStatus.REPORTING
    if reporting_failed:
        code = 0  # the trials ran and the gates passed: answered below like a clean run, then status 6
    for message in progress.collect_errors:
        print(f"comet eval: {message}", file=sys.stderr)
    if code == _PYTEST_USAGE_ERROR:  # already printed by pytest (a credential, a manifest, a gate)
        return ExitStatus.USAGE
    if code == _PYTEST_INTERRUPTED:
        print(
            f"comet eval: interrupted; the finished trials' records and reports are in {plan.experiment_dir}",
            file=sys.stderr,
        )
        return ExitStatus.INTERRUPTED
    if code == ExitStatus.TERMINATED:
        print(
            f"comet eval: stopped by SIGTERM; the finished trials' records and reports are in {plan.experiment_dir}",
            file=sys.stderr,
        )
        return ExitStatus.TERMINATED
    if code not in (0, 1):
        print(f"comet eval: the pytest session ended with status {code} (no trial could run)", file=sys.stderr)
        return ExitStatus.NO_ANSWER
    outcome = progress.outcome
    if outcome is not None:
        for line in outcome.identities:
            print(f"treatment {line}", file=out)
        for line in outcome.verdicts:
            print(f"verdict: {line}", file=out)
        for path in outcome.report_paths:
            print(f"{path.stem.replace('_', ' ')}: {path}", file=out)
        if outcome.report_error:
            print(f"reports not written: {outcome.report_error}", file=out)
        for result in outcome.gate_results:
            print(f"gate {'PASS' if result.passed else 'FAIL'}: {result.gate.expression}: {result.message}", file=out)
        for line in (*outcome.quality, *outcome.budget):
            print(line, file=out)
    tracing = progress.tracing
    for line in tracing.lines if tracing is not None else ():
        print(line, file=out)
    answered = _answered(progress.records)
    if not answered and progress.invalid and not progress.records:
        # Not noise, nor the harness: the inputs. Each item's reason was printed under its progress line.
        print(f"comet eval: no trial could run: {progress.invalid} item(s) are invalid (see above)", file=sys.stderr)
        return ExitStatus.FAILED
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
    if reporting_failed or (tracing is not None and tracing.failed):
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

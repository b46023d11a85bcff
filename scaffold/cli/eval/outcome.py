"""How a ``comet eval`` run ends: its exit codes, and the lines and status after the pytest session
(from pytest's status, the progress plugin and what the controller's reporter decided).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, TextIO

from scaffold.cli.eval.plan import EvalPlan, has_gates
from scaffold.cli.eval.progress import Progress

__all__ = [
    "EXIT_CODES_HELP",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_NO_ANSWER",
    "EXIT_OK",
    "EXIT_REPORTING",
    "EXIT_USAGE",
    "finish",
]

EXIT_OK: Final = 0
"""Every gate and quality gate passed (or there were none and the run produced an answer)."""
EXIT_FAILED: Final = 1
"""A gate or quality gate failed (listed), or a task could not run."""
EXIT_USAGE: Final = 2
"""A usage or configuration error: nothing ran."""
EXIT_NO_ANSWER: Final = 3
"""The run could not produce an answer: task generation failed, or every trial was excluded or errored."""
EXIT_REPORTING: Final = 6
"""The trials and local reports are complete and every gate passed, but reporting to the tracing service
(``--suite langsmith|langfuse``) failed: the same number from pytest and from ``comet eval``, distinct
from pytest's own statuses (0-5) and from a gate failure (which wins when both happen)."""
EXIT_INTERRUPTED: Final = 130

EXIT_CODES_HELP: Final = """\
exit status:
  0  every gate and quality gate passed (without any gate: the run produced an answer)
  1  a gate or quality gate failed (each is listed), or a task could not run
  2  usage or configuration error (a bad target, option, manifest, agent or credential): nothing ran
  3  the run could not produce an answer: task generation failed (a partial report is written), or every
     trial was excluded as noise or ended in a harness error
  6  the trials and local reports are complete and every gate passed, but reporting to the tracing
     service (--suite langsmith|langfuse) failed; `comet report --suite NAME DIR` uploads them again
"""


def finish(plan: EvalPlan, code: int, progress: Progress, reporter: Any, out: TextIO, tracing: Any = None) -> int:
    """The lines after the run and the exit status, from pytest's status and what the reporter decided;
    *tracing*, a tracing suite's plugin (``--suite langsmith|langfuse``): its ``lines``, and ``failed``
    when the upload failed (the session's status is then EXIT_REPORTING unless a gate failed)."""
    reporting_failed = code == EXIT_REPORTING
    if reporting_failed:
        code = 0  # the trials ran and the gates passed: answered below like a clean run, then status 6
    for message in progress.collect_errors:
        print(f"comet eval: {message}", file=sys.stderr)
    if code == 4:  # pytest's usage error: already printed by pytest (a credential, a manifest, a gate)
        return EXIT_USAGE
    if code == 2:
        print("comet eval: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    if code not in (0, 1):
        print(f"comet eval: the pytest session ended with status {code} (no trial could run)", file=sys.stderr)
        return EXIT_NO_ANSWER
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
        return EXIT_NO_ANSWER
    if has_gates(plan) and code != 0:
        return EXIT_FAILED
    if not has_gates(plan) and progress.invalid:
        print(f"comet eval: {progress.invalid} item(s) could not run (invalid tasks)", file=sys.stderr)
        return EXIT_FAILED
    if reporting_failed or bool(getattr(tracing, "failed", False)):
        print(
            f"comet eval: reporting to {plan.suite} failed (see above); the local results are complete", file=sys.stderr
        )
        return EXIT_REPORTING
    return EXIT_OK


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

"""What the ``comet_trial`` fixture gives a test: the finished trial, and an assertion on its verdict."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from scaffold.experiment import TRANSCRIPT_FILE
from scaffold.experiment.cases import Broken

if TYPE_CHECKING:
    from scaffold.experiment.cases import Case
    from scaffold.trial.runner import TrialResult

__all__ = ["Trial"]


@dataclass(frozen=True, slots=True)
class Trial:
    case: Case | Broken
    outcome: TrialResult | None = None
    error: str = ""
    observational: bool = False
    """A trial of the baseline in a session without ``--gate``: the baseline is measured, not tested, so
    its failures are reported as expected failures (xfail) and do not fail the session. Only a measured
    failure (verdict ``failed``) is expected: a trial with verdict ``error`` measured nothing (the agent
    could not start, the workspace broke), so it fails the test even for the baseline."""

    @property
    def passed(self) -> bool:
        return self.outcome is not None and self.outcome.record.verdict == "passed"

    def assert_passed(self) -> None:
        """Fail the test, with a readable account, unless the trial's verdict is ``passed``."""
        if self.passed:
            return
        if self.observational and self.outcome is not None and self.outcome.record.verdict == "failed":
            pytest.xfail(f"baseline trial, observed only (no --gate): {self.explain()}")
        pytest.fail(self.explain(), pytrace=False)

    def explain(self) -> str:
        if isinstance(self.case, Broken):
            return f"{self.case.name} cannot run:\n" + self.case.message()
        if self.outcome is None:
            return f"{self.case.id}: {self.error}"
        record = self.outcome.record
        score = "n/a" if record.weighted_score is None else f"{record.weighted_score:.3f}"
        head = f"trial {record.case_id}: verdict {record.verdict} (weighted score {score})"
        if self.outcome.resumed:
            head += " [from an earlier run of this experiment; not re-run]"
        lines = [head]
        lines += [f"  error ({e.type}): {e.message}" for e in record.errors]
        lines += [f"  hard failure: {h}" for h in record.hard_failures]
        for check in record.checks:
            if check.status == "failed":
                lines.append(f"  failed check [{check.source}] {check.name}: {check.reason}")
        if record.trajectory is not None:
            lines += [f"  agent error: {e}" for e in record.trajectory.errors]
        lines.append(f"  record: {self.outcome.record_path}")
        transcript = self.outcome.record_path.parent / TRANSCRIPT_FILE
        if record.verdict != "passed" and transcript.is_file():  # trials resumed from before transcripts have none
            lines.append(f"  transcript: {transcript}")
        if record.workspace.path:
            lines.append(f"  workspace kept: {record.workspace.path}")
        return "\n".join(lines)

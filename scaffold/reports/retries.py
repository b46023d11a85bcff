"""The retries of each treatment (``--retry-excluded``), tallied in the analysis's one pass over the records.

A trial counts once, as its final attempt (the record); its earlier attempts (``TrialRecord.attempts``)
say that it was retried. First-try trials are those of the analysis set with no earlier attempt; recovered
ones were retried and are in the analysis set; the others retried are still excluded. Pure.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from scaffold.records import TrialRecord
from scaffold.reports.model import Retries
from scaffold.stats.exclusions import fisher_exact

__all__ = ["RetryTally"]


@dataclass
class _Counts:
    trials: int = 0
    retried: int = 0
    recovered: int = 0
    still_excluded: int = 0
    attempts: int = 0
    first: list[int] = field(default_factory=lambda: [0, 0])  # passed, scored
    again: list[int] = field(default_factory=lambda: [0, 0])
    costs: list[float] = field(default_factory=list)


@dataclass
class RetryTally:
    """Per treatment: trials retried, recovered, still excluded, and the pass rates of first-try and
    recovered trials."""

    _by: dict[str, _Counts] = field(default_factory=lambda: defaultdict(_Counts))
    recovered: Counter[tuple[str, str]] = field(default_factory=Counter)
    """Per (task, treatment): trials whose first attempt was excluded and a retry was not."""

    def add(self, record: TrialRecord) -> None:
        counts = self._by[record.treatment]
        counts.trials += 1
        counts.attempts += 1 + len(record.attempts)
        excluded = record.noise.category == "excluded"
        if record.attempts:
            counts.retried += 1
            counts.recovered += not excluded
            self.recovered[(record.task, record.treatment)] += not excluded
            counts.still_excluded += excluded
            counts.costs += [a.cost_usd for a in record.attempts if a.cost_usd is not None]
        if excluded or record.verdict == "error":
            return
        side = counts.again if record.attempts else counts.first
        side[0] += record.verdict == "passed"
        side[1] += 1

    def report(self, treatment: str) -> Retries:
        c = self._by.get(treatment)
        if c is None:
            return Retries()
        (first_passed, first_scored), (again_passed, again_scored) = c.first, c.again
        p_value = (
            fisher_exact(first_passed, first_scored - first_passed, again_passed, again_scored - again_passed)
            if first_scored and again_scored
            else None
        )
        return Retries(
            trials=c.trials,
            retried=c.retried,
            recovered=c.recovered,
            still_excluded=c.still_excluded,
            attempts=c.attempts,
            first_passed=first_passed,
            first_scored=first_scored,
            retried_passed=again_passed,
            retried_scored=again_scored,
            p_value=p_value,
            earlier_cost_usd=sum(c.costs) if c.costs else None,
        )

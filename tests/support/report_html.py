"""Trial sets with known outcomes for the report.html tests (page content and the browser test)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from scaffold.records import TrialRecord
from scaffold.reports.analysis import build_analysis
from scaffold.reports.model import Analysis, TrialFiles
from scaffold.util.plain import plain
from tests.support.records import changed, dims, rec
from tests.support.synthetic import STREAM_FILE, synthetic_records, task_names

INCLUDED: dict[str, Any] = {"category": "included", "reason": "", "source": "structured", "evidence": {}}
EXCLUDED: dict[str, Any] = {"category": "excluded", "reason": "rate_limited", "source": "structured", "evidence": {}}

# outcome(task index, treatment, trial) -> "passed" | "failed" | "excluded"
Outcome = Callable[[int, str, int], str]


def trial_set(tasks: int, treatments: Sequence[str], trials: int, outcome: Outcome) -> list[TrialRecord]:
    """Synthetic records (realistic fields) whose verdicts are exactly *outcome*'s."""
    names = task_names(tasks)
    records = []
    for record in synthetic_records(names, treatments, trials, excluded_share=0.0, flagged_share=0.0):
        result = outcome(names.index(record.task), record.treatment, record.trial)
        if result == "excluded":
            record = changed(record, verdict="error", noise=EXCLUDED, weighted_score=None, dimensions=())
        else:
            score = 1.0 if result == "passed" else 0.2
            dims = [{**plain(d), "score": score if d.score is not None else None} for d in record.dimensions]
            record = changed(record, verdict=result, noise=INCLUDED, weighted_score=score, dimensions=dims)
        records.append(record)
    return records


def rename(records: Sequence[TrialRecord], tasks: dict[str, str], treatments: dict[str, str]) -> list[TrialRecord]:
    """The same trials under other task and treatment names (case ids follow, as the runner makes them)."""
    out = []
    for r in records:
        task, treatment = tasks.get(r.task, r.task), treatments.get(r.treatment, r.treatment)
        out.append(changed(r, task=task, treatment=treatment, case_id=f"{task}-{treatment}-r{r.trial}"))
    return out


def files_of(
    records: Sequence[TrialRecord], prefix: str = "exp/trials", streams: Sequence[str] = (STREAM_FILE,)
) -> dict[tuple[str, str], TrialFiles]:
    """Links as the report writer makes them: relative to the report's folder."""
    return {
        (r.experiment_id, r.case_id): TrialFiles(
            f"{prefix}/{r.case_id}/record.json", tuple(f"{prefix}/{r.case_id}/{name}" for name in streams)
        )
        for r in records
    }


def analysis_of(
    records: Sequence[TrialRecord], baseline: str = "CONTROL", streams: Sequence[str] = (STREAM_FILE,)
) -> Analysis:
    return build_analysis(records, baseline=baseline, files=files_of(records, streams=streams))


def first_look(tasks: int = 3) -> list[TrialRecord]:
    """A first small run as a new user makes one: CONTROL and SKILL, 3 trials per task, an agent
    that reports no cost, no task requiring a skill (skill_invocation N/A everywhere), failures by a
    failed check and one errored trial (a timeout)."""
    records = []
    for i in range(tasks):
        for treatment in ("CONTROL", "SKILL"):
            for trial in (1, 2, 3):
                task = f"task-{i}"
                if (i, treatment, trial) == (0, "CONTROL", 3):
                    error = [{"type": "AgentTimeout", "message": "no answer in 600 s"}]
                    records.append(rec(task, treatment, trial, "error", errors=error, dimensions=dims(None, None)))
                    continue
                passed = (trial + i + (treatment == "SKILL")) % 2 == 0
                verdict = "passed" if passed else "failed"
                check = {"name": "tests pass", "status": verdict, "source": "script:check.py", "reason": ""}
                records.append(
                    rec(task, treatment, trial, verdict, dimensions=dims(1.0 if passed else 0.0, None), checks=[check])
                )
    return records


def layout_outcome(task: int, treatment: str, trial: int) -> str:
    """CONTROL fails everything, SKILL_A passes everything, SKILL_B passes a different share per task
    (0 to 4 of 4 trials), so its intervals have a width; task 11 of SKILL_B is all excluded (N/A)."""
    if treatment == "CONTROL":
        return "failed"
    if treatment == "SKILL_A":
        return "passed"
    if task == 11:
        return "excluded"
    return "passed" if trial <= task % 5 else "failed"


LAYOUT_TREATMENTS = ("CONTROL", "SKILL_A", "SKILL_B")

"""``--until-decided``: trials run in rounds until an anytime-valid test decides, shared by every worker.

The design (alpha, the planned effect, the equivalence margin, ``--max-count``, the baseline) and every
finished trial's outcome are kept in ``sequential.json`` (SEQUENTIAL_FILE) beside the records, updated
under an exclusive lock of the experiment folder by whichever process finished the trial (the only
one, or a pytest-xdist worker), as ``budget.json`` is. After each update the decision of every
treatment against the baseline is worked out again from the whole rounds
(:func:`sequential_verdicts`: scaffold.stats.sequential, each treatment at alpha divided by the number
of treatments compared, Bonferroni's bound, so the family stays at alpha under any monitoring). Before
a trial starts, :func:`refusal` says whether it is still needed: a trial of round r of a treatment
decided at an earlier round is not, nor one of the baseline once every treatment is decided. Those
show as "not run" with the reason, as the budget's refusals do.

Resume: the outcomes are rebuilt from the records in the folder whenever the design changes or the
file is missing (:func:`prepare`), so a stopped session picks up where it was.

Excluded trials: a decision stands only when it is also reached with the excluded trials (those still
excluded after their retries) counted as failures of the treatment and passes of the baseline, and
the other way round, as the fixed-design verdict's bounds ask (scaffold.reports.verdicts).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from scaffold.errors import RecordError
from scaffold.experiment import RECORD_FILE
from scaffold.records import TrialRecord
from scaffold.records.files import read_record
from scaffold.stats.sequential import Round, SequentialResult, decide_sequence, track
from scaffold.util.atomic import locked, write_json_atomic

__all__ = [
    "SEQUENTIAL_FILE",
    "Design",
    "SequentialVerdict",
    "not_needed_markdown",
    "outcome_code",
    "outcomes_of",
    "prepare",
    "read_design",
    "record_outcome",
    "refusal",
    "sequential_verdicts",
    "unneeded_cases",
]

SEQUENTIAL_FILE: Final = "sequential.json"
_LOCK: Final = ".sequential.lock"


@dataclass(frozen=True, slots=True)
class Design:
    """What a run until decided was asked for."""

    baseline: str
    max_count: int
    alpha: float = 0.05
    effect: float = 0.10
    margin: float = 0.10

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Design:
        return cls(
            baseline=str(data["baseline"]),
            max_count=int(data["max_count"]),
            alpha=float(data["alpha"]),
            effect=float(data["effect"]),
            margin=float(data["margin"]),
        )


@dataclass(frozen=True, slots=True)
class SequentialVerdict:
    """One treatment against the baseline: the e-processes on the analysis set, and at both extremes of
    the excluded trials; ``decision`` and ``decided_at`` are the combined rule's (the module docstring)."""

    treatment: str
    analysis: SequentialResult
    worst: SequentialResult
    best: SequentialResult
    decision: str
    decided_at: int | None
    rounds: int
    """Whole rounds run (all of them, also those after the decision)."""
    alpha: float
    """The level this comparison was held to (alpha over the treatments compared)."""

    @property
    def low(self) -> float:
        """The lowest lower bound of the confidence sequence of the three sets."""
        return min(self.analysis.low, self.worst.low, self.best.low)


def outcome_code(record: TrialRecord) -> str:
    """P passed, F failed, X excluded as noise (whatever it recorded), E unscored."""
    if record.noise.category == "excluded":
        return "X"
    return {"passed": "P", "failed": "F"}.get(record.verdict, "E")


def _key(task: str, treatment: str, trial: int) -> str:
    return f"{task}\t{treatment}\t{trial}"


def _rounds(
    outcomes: Mapping[str, str],
    tasks: Sequence[str],
    baseline: str,
    treatment: str,
    excluded_as: tuple[bool, bool] | None,
) -> list[Round]:
    """The whole rounds of *treatment* against *baseline*, in order, up to the first one missing a trial.
    *excluded_as*: what an excluded trial counts as (the treatment's, the baseline's); None: unscored."""
    rounds: list[Round] = []
    trial = 1
    while True:
        pairs = []
        for task in tasks:
            found = [outcomes.get(_key(task, side, trial)) for side in (treatment, baseline)]
            if None in found:
                return rounds
            pairs.append(tuple(_passed(code, excluded_as, i) for i, code in enumerate(found)))
        rounds.append(Round(tuple(pairs)))  # type: ignore[arg-type]
        trial += 1


def _passed(code: str | None, excluded_as: tuple[bool, bool] | None, side: int) -> bool | None:
    if code == "X":
        return None if excluded_as is None else excluded_as[side]
    return {"P": True, "F": False}.get(code or "")


def sequential_verdicts(
    design: Design, outcomes: Mapping[str, str], tasks: Sequence[str], treatments: Sequence[str]
) -> dict[str, SequentialVerdict]:
    """Every treatment but the baseline against it (the module docstring), from *outcomes* keyed
    ``task<TAB>treatment<TAB>trial``."""
    others = [t for t in treatments if t != design.baseline]
    alpha = design.alpha / max(len(others), 1)
    found = {}
    for treatment in others:
        sets = [
            _rounds(outcomes, tasks, design.baseline, treatment, None),
            _rounds(outcomes, tasks, design.baseline, treatment, (False, True)),
            _rounds(outcomes, tasks, design.baseline, treatment, (True, False)),
        ]
        tracks = [track(s, alpha=alpha, effect=design.effect, margin=design.margin) for s in sets]
        decision, at = "", None
        for r in range(len(tracks[0])):
            labels = {t[r].decision for t in tracks}
            if len(labels) == 1 and tracks[0][r].decision:
                decision, at = tracks[0][r].decision, r + 1
                break
        empty = decide_sequence([], alpha=alpha, effect=design.effect, margin=design.margin)
        # What each set says at the round the run was decided (or at its last whole round).
        results = [t[(at or len(t)) - 1] if t else empty for t in tracks]
        found[treatment] = SequentialVerdict(
            treatment, results[0], results[1], results[2], decision, at, len(sets[0]), alpha
        )
    return found


# --- the shared file ----------------------------------------------------------------------------------


def read_design(root: Path) -> Design | None:
    """The design of the run until decided in *root*, or None when it did not run that way."""
    data = _read(root)
    try:
        return Design.from_dict(data["design"]) if data else None
    except (KeyError, TypeError, ValueError):
        return None


def _read(root: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((root / SEQUENTIAL_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _from_records(root: Path) -> dict[str, str]:
    outcomes = {}
    for path in sorted((root / "trials").glob(f"*/{RECORD_FILE}")):
        try:
            record = read_record(path)
        except RecordError:
            continue
        outcomes[_key(record.task, record.treatment, record.trial)] = outcome_code(record)
    return outcomes


def prepare(root: Path, design: Design, tasks: Sequence[str], treatments: Sequence[str]) -> None:
    """Make ``sequential.json`` hold *design* and the outcomes of the records already in *root* (a
    resumed run goes on from them), and the decisions they give."""
    with locked(root / _LOCK):
        data = _read(root)
        if data is None or data.get("design") != design.to_dict():
            data = {"design": design.to_dict(), "outcomes": _from_records(root)}
        _write(root, design, data, tasks, treatments)


def record_outcome(
    root: Path, design: Design, tasks: Sequence[str], treatments: Sequence[str], record: TrialRecord
) -> None:
    """Add one finished trial's outcome and decide again."""
    with locked(root / _LOCK):
        data = _read(root)
        if data is None or data.get("design") != design.to_dict():
            data = {"design": design.to_dict(), "outcomes": _from_records(root)}
        data["outcomes"][_key(record.task, record.treatment, record.trial)] = outcome_code(record)
        _write(root, design, data, tasks, treatments)


def _write(root: Path, design: Design, data: dict[str, Any], tasks: Sequence[str], treatments: Sequence[str]) -> None:
    verdicts = sequential_verdicts(design, data["outcomes"], tasks, treatments)
    data["tasks"] = list(tasks)
    data["treatments"] = list(treatments)
    data["decisions"] = {
        t: {"decision": v.decision, "decided_at": v.decided_at, "rounds": v.rounds} for t, v in verdicts.items()
    }
    write_json_atomic(root / SEQUENTIAL_FILE, data)


def refusal(root: Path, task: str, treatment: str, trial: int) -> str | None:
    """Why trial *trial* of (*task*, *treatment*) is no longer needed, or None when it is."""
    return _refusal(_read(root), task, treatment, trial)


def _refusal(data: Mapping[str, Any] | None, task: str, treatment: str, trial: int) -> str | None:
    if not data or not isinstance(data.get("decisions"), dict):
        return None
    decisions: dict[str, Any] = data["decisions"]
    baseline = data.get("design", {}).get("baseline")
    if treatment == baseline:
        needed = [d for d in decisions.values() if not _done(d, trial)]
        if needed or not decisions:
            return None
        return f"decided before round {trial}: every treatment compared with {baseline} has its answer"
    d = decisions.get(treatment)
    if d is None or not _done(d, trial):
        return None
    return f"decided at round {d['decided_at']}: {d['decision']} (run until decided)"


def unneeded_cases(root: Path, case_ids: Iterable[str]) -> set[str]:
    """Which of *case_ids* (``task-treatment-rN``) a run until decided in *root* no longer needs (for
    ``comet status``: neither queued nor missing). Empty when the run is not one."""
    data = _read(root)
    if not data or not isinstance(data.get("decisions"), dict):
        return set()
    treatments = sorted((str(t) for t in data.get("treatments", ())), key=len, reverse=True)
    tasks = {str(t) for t in data.get("tasks", ())}
    found = set()
    for case in case_ids:
        head, _, trial = case.rpartition("-r")
        for treatment in treatments:  # the longest first: a treatment name may end another
            task = head.removesuffix(f"-{treatment}")
            if task != head and task in tasks and trial.isdigit():
                if _refusal(data, task, treatment, int(trial)) is not None:
                    found.add(case)
                break
    return found


def _done(decision: Mapping[str, Any], trial: int) -> bool:
    at = decision.get("decided_at")
    return isinstance(at, int) and at < trial


def outcomes_of(records: Iterable[TrialRecord]) -> dict[str, str]:
    """The outcomes keyed as the file keeps them, from records (the reports' side)."""
    return {_key(r.task, r.treatment, r.trial): outcome_code(r) for r in records}


def not_needed_markdown(cases: Sequence[str]) -> str:
    """The summary.md section listing the trials a run until decided did not need."""
    lines = [
        "## Not needed (run until decided)",
        "",
        f"{len(cases)} trial(s) were not started: the comparisons they belong to were decided before their "
        "round (the verdict says when and how). They are not missing data: the anytime-valid tests hold at the "
        "round the run stopped.",
        "",
    ]
    return "\n".join(lines + [f"- {case}" for case in cases]) + "\n"

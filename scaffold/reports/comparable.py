"""Are two treatments comparable? Only when everything but the treatment is the same.

A verdict credits the treatment with the difference it measures, which is honest only when the trials of
both treatments were produced alike: the same agent, agent version, model, model endpoint (``none``,
``local`` or ``remote``: scaffold.records.Endpoint), backend, harness version, and the same content of
every task both ran. Each treatment's :class:`~scaffold.reports.model.TreatmentIdentity` holds every value
its records show; :func:`mismatch` names the first field where two treatments differ.

Unknown is not a difference. A record that does not say (an older record without ``harness_version`` or
``agent.endpoint``, a trial that errored before its agent reported a version) is left out of that field's
comparison: otherwise an old experiment would be "mismatched" against itself, and every errored trial
would make its treatment incomparable. The reports show "unknown" beside the treatment, so a reader sees
what could not be checked. A model of None is not unknown: it is the agent's default model, a value.

Pure: records in, identities and mismatches out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from scaffold.errors import MixedError
from scaffold.records import TrialRecord
from scaffold.reports.model import Mismatch, TreatmentIdentity, shown_values

__all__ = ["FIELDS", "Identities", "identity_line", "mismatch", "refuse_mixed", "shown"]

FIELDS: Final = ("agent", "agent version", "model", "endpoint", "backend", "harness version", "task content")
"""What must agree, in the order differences are reported (the first that differs names the verdict)."""
_UNKNOWN_IS_A_VALUE: Final = frozenset({"model"})  # None: the agent's default model


def _order(value: str | None) -> tuple[bool, str]:
    return (value is None, value or "")


@dataclass
class Identities:
    """Accumulates, record by record, what produced each treatment's trials (one pass, with the analysis)."""

    # Per record: one tuple into a set (what produced it), and its task's content hash once per
    # configuration hash (the loader holds one configuration per (task, treatment)): at 100,000 records
    # this is a few hundredths of a second, not the tenths that six separate sets cost.
    _seen: dict[str, set[tuple[str | None, ...]]] = field(default_factory=lambda: defaultdict(set))
    _tasks: dict[str, dict[str, set[str | None]]] = field(default_factory=lambda: defaultdict(dict))
    _configs: set[tuple[str, str, str]] = field(default_factory=set)

    def add(self, record: TrialRecord) -> None:
        agent = record.agent
        treatment = record.treatment
        # backend "": a record from before the backend was recorded
        self._seen[treatment].add(
            (
                agent.name,
                agent.version,
                agent.model,
                agent.endpoint,
                record.workspace.backend or None,
                record.harness_version,
            )
        )
        config = (treatment, record.task, record.config_hash)
        if config not in self._configs:
            self._configs.add(config)
            self._tasks[treatment].setdefault(record.task, set()).add(_task_hash(record.config))

    @classmethod
    def of(cls, records: Iterable[TrialRecord]) -> Identities:
        identities = cls()
        for record in records:
            identities.add(record)
        return identities

    def treatments(self) -> tuple[str, ...]:
        return tuple(sorted(self._seen))

    def mismatches(self, baseline: str) -> tuple[Mismatch, ...]:
        """What differs between *baseline* and each other treatment (the pairs verdicts are made of)."""
        if baseline not in self._seen:
            return ()
        base = self.identity(baseline)
        found = (mismatch(baseline, base, t, self.identity(t)) for t in self.treatments() if t != baseline)
        return tuple(m for m in found if m is not None)

    def identity(self, treatment: str) -> TreatmentIdentity:
        seen = self._seen.get(treatment, set())
        ordered = [tuple(sorted({row[i] for row in seen}, key=_order)) for i in range(6)]
        tasks = self._tasks.get(treatment, {})
        pairs = tuple(
            sorted(((t, h) for t, hashes in tasks.items() for h in hashes), key=lambda p: (p[0], _order(p[1])))
        )
        agent, version, model, endpoint, backend, harness = ordered
        return TreatmentIdentity(agent, version, model, endpoint, backend, harness, pairs)


def _task_hash(config: Mapping[str, object]) -> str | None:
    task = config.get("task")
    value = task.get("content_hash") if isinstance(task, Mapping) else None
    return value if isinstance(value, str) else None


def _fields(identity: TreatmentIdentity) -> tuple[tuple[str | None, ...], ...]:
    return (
        identity.agent,
        identity.agent_version,
        identity.model,
        identity.endpoint,
        identity.backend,
        identity.harness_version,
    )


def shown(values: Iterable[str | None], name: str = "") -> str:
    """Values as reports show them (scaffold.reports.model.shown_values); *name*: the field's."""
    return shown_values(values, default=name in _UNKNOWN_IS_A_VALUE)


def mismatch(baseline: str, b: TreatmentIdentity, treatment: str, t: TreatmentIdentity) -> Mismatch | None:
    """The first field (in FIELDS order) where *b* and *t* differ, or None when they are comparable.

    Differ: the known values of both together are more than one (a treatment whose own trials disagree
    is not comparable with anything either).
    """
    for name, bv, tv in zip(FIELDS, _fields(b), _fields(t), strict=False):
        keep_none = name in _UNKNOWN_IS_A_VALUE
        known = {v for v in (*bv, *tv) if keep_none or v is not None}
        if len(known) > 1:
            return Mismatch(name, baseline, treatment, shown(bv, name), shown(tv, name))
    base_tasks: dict[str, set[str]] = defaultdict(set)
    treat_tasks: dict[str, set[str]] = defaultdict(set)
    for task, digest in b.task_hashes:
        if digest is not None:
            base_tasks[task].add(digest)
    for task, digest in t.task_hashes:
        if digest is not None:
            treat_tasks[task].add(digest)
    for task in sorted(base_tasks.keys() | treat_tasks.keys()):
        # Only tasks both ran are paired; a task's own trials must agree under either treatment.
        both = base_tasks[task] | treat_tasks[task]
        paired = task in base_tasks and task in treat_tasks
        if len(both) > 1 and (paired or len(base_tasks[task]) > 1 or len(treat_tasks[task]) > 1):
            return Mismatch(
                "task content",
                baseline,
                treatment,
                f"task {task!r} at {shown(sorted(base_tasks[task])) if base_tasks[task] else 'nothing'}",
                f"task {task!r} at {shown(sorted(treat_tasks[task])) if treat_tasks[task] else 'nothing'}",
            )
    return None


def refuse_mixed(identities: Identities, baseline: str) -> None:
    """MixedError naming every pair of treatments that differ in more than the treatment, if any does."""
    found = identities.mismatches(baseline)
    if found:
        pairs = "; ".join(f"{m.treatment} vs {m.baseline}: {m.describe()}" for m in found)
        raise MixedError(
            f"treatments are not comparable ({pairs}): only the treatment may differ between them. Report "
            f"them separately, re-run one the way the other ran, or pass --allow-mixed to report anyway "
            f"(the verdicts then say 'not comparable' and claim no improvement or regression)"
        )


def identity_line(identity: TreatmentIdentity) -> str:
    """One line naming what produced a treatment: "agent nop (version unknown), model default, ..."."""
    return (
        f"agent {identity.text('agent')} (version {identity.text('agent_version')}), "
        f"model {identity.text('model')}, endpoint {identity.text('endpoint')}, "
        f"backend {identity.text('backend')}, harness {identity.text('harness_version')}"
    )

"""The skills each treatment installed (name, source, content hash) and "skill used in x of y trials".

Gathered in the analysis's one pass over the records (``SkillTally.add``), read back per treatment
(``SkillTally.report``). Each trial's use is :func:`trial_skill_use`, which results.jsonl shows too: one
answer per trial for every report.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from scaffold.records import TrialRecord
from scaffold.reports.model import EvaluatedSkill, SkillLeaks, SkillUse, TreatmentSkills
from scaffold.rubrics.expected import matching, skill_key

__all__ = ["Category", "SkillTally", "TrialSkillUse", "trial_skill_use"]


Category = Literal["all", "some", "wrong", "failed", "none", "leak"]
"""What one trial did with skills, in this order of precedence: loaded every expected skill (``all``),
some of them (``some``), none of them but another skill (``wrong``), tried an expected one and the call
failed (``failed``), nothing (``none``); under a treatment that installs no skill, loading any is a
``leak``."""


@dataclass(frozen=True, slots=True)
class TrialSkillUse:
    """One trial's use of skills: of those it was expected to invoke, or, under a treatment that installs
    none (CONTROL), of any (a leak)."""

    expected: tuple[str, ...]
    invoked: tuple[str, ...]
    """The expected skills the trajectory invoked (the call succeeded)."""
    failed: tuple[str, ...]
    """The expected skills whose call failed (``skills_attempted``) and that were not invoked."""
    others: tuple[str, ...] = ()
    """Skills the trajectory invoked that it was not expected to: a wrong choice, or a leak without skills."""

    @property
    def used(self) -> bool:
        return bool(self.invoked)

    @property
    def category(self) -> Category:
        if not self.expected:
            return "leak" if self.others else "none"
        if self.invoked:
            return "all" if len(self.invoked) == len(self.expected) else "some"
        if self.others:
            return "wrong"
        return "failed" if self.failed else "none"


def trial_skill_use(record: TrialRecord) -> TrialSkillUse | None:
    """How *record*'s trial used skills; None when nothing can be said: it was expected to invoke none
    and its treatment installed some (a skill may be used or not), or its agent cannot report skill use
    (unscored trials, an agent that cannot invoke skills, records written before it was recorded)."""
    expected = record.expected_skills
    traj = record.trajectory
    invoked_all = traj.skills_invoked if traj is not None else ()
    if not expected:
        if not record.skill_evidence or traj is None or _installed(record.config):
            return None
        return TrialSkillUse((), (), (), tuple(dict.fromkeys(invoked_all)))
    invoked = matching(expected, invoked_all)
    attempted = matching(expected, traj.skills_attempted) if traj is not None else ()
    wanted = {skill_key(s) for s in expected}
    others = tuple(dict.fromkeys(n for n in invoked_all if skill_key(n) not in wanted))
    return TrialSkillUse(expected, invoked, tuple(s for s in attempted if s not in invoked), others)


def _installed(config: Mapping[str, Any]) -> list[tuple[str, str | None]]:
    """(name, content hash) of the skills in a record's configuration; none when it has no such part."""
    treatment = config.get("treatment")
    skills = treatment.get("skills") if isinstance(treatment, Mapping) else None
    if not isinstance(skills, list | tuple):
        return []
    found = []
    for skill in skills:
        if isinstance(skill, Mapping) and isinstance(skill.get("name"), str):
            digest = skill.get("content_hash")
            found.append((skill["name"], digest if isinstance(digest, str) else None))
    return found


_FIELDS = ("trials", "used", "failed", "partial", "wrong", "used_passed", "unused_passed")


@dataclass
class SkillTally:
    """Mutable counts of one pass over the records."""

    # treatment -> (name, content hash, source) -> trials
    skills: dict[str, Counter[tuple[str, str | None, str | None]]] = field(default_factory=lambda: defaultdict(Counter))
    # treatment -> task -> Counter of _FIELDS
    use: dict[str, dict[str, Counter[str]]] = field(default_factory=lambda: defaultdict(dict))
    # treatment -> [trials observed, trials that leaked], and the skills they loaded
    leaks: dict[str, list[int]] = field(default_factory=dict)
    leaked: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))

    def add(self, record: TrialRecord, *, analysed: bool) -> None:
        """Count *record*: its skills always (raw set), its use when it is in the analysis set (*analysed*)."""
        sources = record.skill_sources
        seen = self.skills[record.treatment]
        for name, digest in _installed(record.config):
            seen[(name, digest, sources.get(name))] += 1
        use = trial_skill_use(record) if analysed and record.verdict != "error" else None
        if use is None:
            return
        if not use.expected:
            counts = self.leaks.setdefault(record.treatment, [0, 0])
            counts[0] += 1
            counts[1] += bool(use.others)
            self.leaked[record.treatment].update(use.others)
            return
        tally = self.use[record.treatment].setdefault(record.task, Counter())
        category = use.category
        passed = record.verdict == "passed"
        tally["trials"] += 1
        tally["used"] += use.used
        tally["partial"] += category == "some"
        tally["wrong"] += category == "wrong"
        tally["failed"] += category == "failed"
        tally["used_passed" if use.used else "unused_passed"] += passed

    def report(self, treatment: str) -> TreatmentSkills | None:
        """The skills of *treatment* and their use; None when none of its trials installed a skill and
        none was seen to load one where none was installed."""
        seen = self.skills.get(treatment)
        leaks = self.leaks.get(treatment)
        if not seen and not leaks:
            return None
        skills = tuple(
            EvaluatedSkill(name, digest, source, trials)
            for (name, digest, source), trials in sorted(
                (seen or {}).items(), key=lambda kv: (kv[0][0], str(kv[0][2]), str(kv[0][1]))
            )
        )
        tasks = self.use.get(treatment, {})
        by_task = {task: _use(tasks[task]) for task in sorted(tasks)}
        total: Counter[str] = Counter()
        for counts in tasks.values():
            total.update(counts)
        leak = None
        if leaks:
            names = tuple(name for name, _ in sorted(self.leaked[treatment].items(), key=lambda kv: (-kv[1], kv[0])))
            leak = SkillLeaks(leaks[0], leaks[1], names)
        return TreatmentSkills(skills, _use(total), by_task, leak)


def _use(counts: Counter[str]) -> SkillUse:
    return SkillUse(*(counts[f] for f in _FIELDS))

"""The skills each treatment installed (name, source, content hash) and "skill used in x of y trials".

Gathered in the analysis's one pass over the records (``SkillTally.add``), read back per treatment
(``SkillTally.report``). Each trial's use is :func:`trial_skill_use`, which results.jsonl shows too: one
answer per trial for every report.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scaffold.records import TrialRecord
from scaffold.reports.model import EvaluatedSkill, SkillUse, TreatmentSkills
from scaffold.rubrics.expected import matching

__all__ = ["SkillTally", "TrialSkillUse", "trial_skill_use"]


@dataclass(frozen=True, slots=True)
class TrialSkillUse:
    """One trial's use of the skills it was expected to invoke."""

    expected: tuple[str, ...]
    invoked: tuple[str, ...]
    """The expected skills the trajectory invoked (the call succeeded)."""
    failed: tuple[str, ...]
    """The expected skills whose call failed (``skills_attempted``) and that were not invoked."""

    @property
    def used(self) -> bool:
        return bool(self.invoked)


def trial_skill_use(record: TrialRecord) -> TrialSkillUse | None:
    """How *record*'s trial used its expected skills; None when it was expected to invoke none (unscored,
    an agent that cannot invoke skills, no skill required, or a record written before it was recorded)."""
    expected = record.expected_skills
    if not expected:
        return None
    traj = record.trajectory
    invoked = matching(expected, traj.skills_invoked) if traj is not None else ()
    attempted = matching(expected, traj.skills_attempted) if traj is not None else ()
    return TrialSkillUse(expected, invoked, tuple(s for s in attempted if s not in invoked))


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


@dataclass
class SkillTally:
    """Mutable counts of one pass over the records."""

    # treatment -> (name, content hash, source) -> trials
    skills: dict[str, Counter[tuple[str, str | None, str | None]]] = field(default_factory=lambda: defaultdict(Counter))
    # treatment -> task -> [trials, used, failed]
    use: dict[str, dict[str, list[int]]] = field(default_factory=lambda: defaultdict(dict))

    def add(self, record: TrialRecord, *, analysed: bool) -> None:
        """Count *record*: its skills always (raw set), its use when it is in the analysis set (*analysed*)."""
        sources = record.skill_sources
        seen = self.skills[record.treatment]
        for name, digest in _installed(record.config):
            seen[(name, digest, sources.get(name))] += 1
        use = trial_skill_use(record) if analysed and record.verdict != "error" else None
        if use is None:
            return
        counts = self.use[record.treatment].setdefault(record.task, [0, 0, 0])
        counts[0] += 1
        counts[1] += use.used
        counts[2] += not use.used and bool(use.failed)

    def report(self, treatment: str) -> TreatmentSkills | None:
        """The skills of *treatment* and their use; None when none of its trials installed a skill."""
        seen = self.skills.get(treatment)
        if not seen:
            return None
        skills = tuple(
            EvaluatedSkill(name, digest, source, trials)
            for (name, digest, source), trials in sorted(
                seen.items(), key=lambda kv: (kv[0][0], str(kv[0][2]), str(kv[0][1]))
            )
        )
        tasks = self.use.get(treatment, {})
        by_task = {task: SkillUse(*tasks[task]) for task in sorted(tasks)}
        trials, used, failed = (sum(counts[i] for counts in tasks.values()) for i in range(3))
        return TreatmentSkills(skills, SkillUse(trials, used, failed), by_task)

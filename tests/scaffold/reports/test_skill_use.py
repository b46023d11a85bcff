"""The skills each treatment installed (name, source, content hash) and "skill used in x of y trials",
from the records to every report: the model (scaffold.reports.skills), summary.md, comparison_report.md,
report.html and results.jsonl; old records without the fields still report."""

from __future__ import annotations

import json
from typing import Any

from markupsafe import escape

from scaffold.records import TrialRecord
from scaffold.reports.analysis import build_analysis
from scaffold.reports.comparison import render_comparison
from scaffold.reports.html import render_html
from scaffold.reports.model import SKILLS_SHOWN, SkillUse
from scaffold.reports.results import result_lines
from scaffold.reports.summary import render_summary
from tests.support.records import rec

HASH = "sha256:" + "ab12" * 16
SOURCE = "/skills/my-skill"
EXCLUDED = {"category": "excluded", "reason": "rate_limited", "source": "structured", "evidence": {}}


def config(*skills: tuple[str, str]) -> dict[str, Any]:
    return {"treatment": {"skills": [{"name": n, "content_hash": h, "variant": None} for n, h in skills]}}


def skill_trial(
    task: str, trial: int, *, invoked: tuple[str, ...] = (), attempted: tuple[str, ...] = (), **fields: Any
) -> TrialRecord:
    fields.setdefault("expected_skills", ("my-skill",))
    return rec(
        task,
        "DYNAMIC_SKILL",
        trial,
        config=config(("my-skill", HASH)),
        skill_sources={"my-skill": SOURCE},
        trajectory={"agent": "claude-code", "skills_invoked": invoked, "skills_attempted": attempted},
        **fields,
    )


def records() -> list[TrialRecord]:
    return [
        rec("alpha", "CONTROL", 1),
        rec("beta", "CONTROL", 1),
        skill_trial("alpha", 1, invoked=("my-skill",)),
        skill_trial("alpha", 2, attempted=("my-skill",)),  # tried, the call failed
        skill_trial("beta", 1, invoked=("plugin:my-skill",)),
        skill_trial("beta", 2, verdict="failed"),
        skill_trial("beta", 3, invoked=("my-skill",), noise=EXCLUDED),  # not in the analysis set
        skill_trial("beta", 4, verdict="error", expected_skills=()),  # unscored: nothing expected
    ]


USED = (
    "skill used in 2 of 4 trials; 1 more attempted it and the call failed; 1 loaded none; passed 2 of 2 (100%) "
    "when it was used, 1 of 2 (50%) when not (observational: the trials chose whether to use it, so this is not "
    "the skill's effect; the verdict is)"
)
NAMED = f"my-skill from {SOURCE}, content sha256:{'ab12' * 3}"


def test_the_model_counts_the_analysis_set_and_names_every_skill() -> None:
    analysis = build_analysis(records())
    assert analysis.report("CONTROL").skills is None
    skills = analysis.report("DYNAMIC_SKILL").skills
    assert skills is not None
    ((skill),) = skills.skills
    assert (skill.name, skill.content_hash, skill.source, skill.trials) == ("my-skill", HASH, SOURCE, 6)
    assert skill.text == NAMED
    assert skills.use == SkillUse(trials=4, used=2, failed=1, used_passed=2, unused_passed=1)
    assert skills.use.text == USED
    assert dict(skills.by_task) == {
        "alpha": SkillUse(2, 1, 1, used_passed=1, unused_passed=1),
        "beta": SkillUse(2, 1, 0, used_passed=1, unused_passed=0),
    }
    assert skills.tasks_text() == "alpha 1 of 2 (1 with a failed call), beta 1 of 2"


def test_every_report_says_it_in_its_verdict_section() -> None:
    analysis = build_analysis(records())
    for text in (render_summary(analysis, "e"), render_comparison(analysis, "e")):
        verdict = text[text.index("## Verdict") :]
        assert f"- **DYNAMIC_SKILL**: {NAMED}\n  - {USED}; per task: alpha 1 of 2" in verdict, verdict
    html = render_html(analysis)
    verdict = html[html.index('<section id="verdict"') : html.index('<section id="comparison"')]
    assert NAMED in verdict and escape(USED) in verdict


def test_results_jsonl_has_each_trials_use() -> None:
    rows = {r["case_id"]: r for r in map(json.loads, result_lines(records()))}
    first, second = rows["alpha-DYNAMIC_SKILL-r1"]["skill_use"], rows["alpha-DYNAMIC_SKILL-r2"]["skill_use"]
    assert first == {"expected": ["my-skill"], "used": True, "failed_call": False, "category": "all", "others": []}
    assert second == {"expected": ["my-skill"], "used": False, "failed_call": True, "category": "failed", "others": []}
    assert rows["beta-DYNAMIC_SKILL-r1"]["skill_use"]["used"] is True  # a plugin prefix is the same skill
    assert "skill_use" not in rows["alpha-CONTROL-r1"] and "skill_use" not in rows["beta-DYNAMIC_SKILL-r4"]


def test_records_written_before_the_fields_still_report() -> None:
    old = [
        rec("alpha", "CONTROL", 1),
        rec("alpha", "SKILL_X", 1, config=config(("helper", HASH)), trajectory={"agent": "claude-code"}),
    ]
    analysis = build_analysis(old)
    skills = analysis.report("SKILL_X").skills
    assert skills is not None
    assert skills.skills[0].text == f"helper from a source not recorded, content sha256:{'ab12' * 3}"
    assert skills.use.trials == 0 and skills.use.text.startswith("skill use not scored")
    assert "skill use not scored" in render_summary(analysis, "e")
    assert "skill_use" not in json.loads(next(iter(result_lines(old))))


def test_reports_without_skills_say_nothing_of_them() -> None:
    analysis = build_analysis([rec("alpha", "CONTROL", 1), rec("alpha", "OTHER", 1)])
    assert "Skills evaluated" not in render_summary(analysis, "e") + render_comparison(analysis, "e")
    assert "Skills evaluated" not in render_html(analysis)


def test_a_long_list_of_task_skills_is_cut() -> None:
    names = [(f"s{i:02}", HASH) for i in range(SKILLS_SHOWN + 3)]
    many = [rec("alpha", "TASK_SKILLS", 1, config=config(*names)), rec("alpha", "CONTROL", 1)]
    summary = render_summary(build_analysis(many), "e")
    assert "s09 from" in summary and "s10 from" not in summary and "; and 3 more" in summary


def test_each_trial_falls_in_one_kind_of_use_and_the_pass_rates_are_observational() -> None:
    def trial(n: int, verdict: str, **kw: Any) -> TrialRecord:
        return skill_trial("alpha", n, verdict=verdict, expected_skills=("my-skill", "helper"), **kw)

    found = [
        trial(1, "passed", invoked=("my-skill", "helper")),  # every expected skill: all
        trial(2, "passed", invoked=("my-skill", "other")),  # one of two, and another: some
        trial(3, "failed", invoked=("other",)),  # none expected, another one: wrong
        trial(4, "failed", invoked=("other",), attempted=("helper",)),  # wrong comes before a failed call
        trial(5, "failed", attempted=("helper",)),  # failed
        trial(6, "passed"),  # none
        rec("alpha", "CONTROL", 1),
    ]
    rows = {r["case_id"]: r["skill_use"] for r in map(json.loads, result_lines(found)) if "skill_use" in r}
    kinds = [rows[f"alpha-DYNAMIC_SKILL-r{n}"]["category"] for n in range(1, 7)]
    assert kinds == ["all", "some", "wrong", "wrong", "failed", "none"]
    assert rows["alpha-DYNAMIC_SKILL-r3"]["others"] == ["other"]
    use = build_analysis(found).report("DYNAMIC_SKILL").skills
    assert use is not None
    assert use.use == SkillUse(6, 2, 1, partial=1, wrong=2, used_passed=2, unused_passed=1)
    assert use.use.none == 1
    assert use.use.text == (
        "skill used in 2 of 6 trials (1 of them loaded only some of the expected skills); 2 loaded another skill "
        "instead; 1 more attempted it and the call failed; 1 loaded none; passed 2 of 2 (100%) when it was used, "
        "1 of 4 (25%) when not (observational: the trials chose whether to use it, so this is not the skill's "
        "effect; the verdict is)"
    )
    assert use.tasks_text() == "alpha 2 of 6 (1 partial, 2 another skill, 1 with a failed call)"


def control(n: int, invoked: tuple[str, ...] = (), *, evidence: bool = True) -> TrialRecord:
    trajectory = {"agent": "claude-code", "skills_invoked": invoked}
    return rec("alpha", "CONTROL", n, trajectory=trajectory, skill_evidence=evidence)


def test_a_skill_loaded_under_control_is_a_leak_in_every_report() -> None:
    found = [control(1, ("my-skill",)), control(2), control(3, ("my-skill", "other")), skill_trial("alpha", 1)]
    analysis = build_analysis(found)
    skills = analysis.report("CONTROL").skills
    assert skills is not None and skills.skills == () and skills.leaks is not None
    assert (skills.leaks.trials, skills.leaks.leaked, skills.leaks.names) == (3, 2, ("my-skill", "other"))
    leak = (
        "installs no skill, yet 2 of 3 trials loaded one (my-skill, other): a leak; this baseline is not "
        '"without the skill"'
    )
    for text in (render_summary(analysis, "e"), render_comparison(analysis, "e")):
        verdict = text[text.index("## Verdict") :]
        assert f"- **CONTROL** {leak}" in verdict
    assert escape(leak) in render_html(analysis)
    rows = {r["case_id"]: r for r in map(json.loads, result_lines(found))}
    assert rows["alpha-CONTROL-r1"]["skill_use"]["category"] == "leak"
    assert rows["alpha-CONTROL-r2"]["skill_use"]["category"] == "none"


def test_control_without_evidence_or_leaks_says_what_it_can() -> None:
    quiet = build_analysis([control(1), control(2)]).report("CONTROL").skills
    assert quiet is not None and quiet.leaks is not None
    assert quiet.leaks.text == "installs no skill, and none was loaded in 2 trial(s) that would show it: no leak"
    # An agent that cannot say which skills it loads: nothing is claimed either way.
    assert build_analysis([control(1, evidence=False)]).report("CONTROL").skills is None

"""``comet eval`` of a skill whose manifest names no required skill, end to end: the skill under test is
required by default (its invocation scored under DYNAMIC_SKILL, N/A under CONTROL), every report names it
with its source and content hash, and the verdict section says how often the trials used it.

The agent is tests/data/fake_agent.py registered as a custom adapter: each inline task's workspace holds
its plan (``.fake-agent.json``), one invoking the skill and one not.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from tests.scaffold.cli.eval.test_plan import manifest_data, skill
from tests.scaffold.cli.eval.test_run import comet
from tests.support.agents import register_fake_agent

SUMMARY = "# Summary\nall good\n"


def _task(folder: Path, name: str, plan: dict[str, object]) -> dict[str, object]:
    workspace = folder / "evals" / name
    workspace.mkdir(parents=True)
    (workspace / ".fake-agent.json").write_text(json.dumps([plan]))
    return {
        "name": name,
        "prompt": "Create summary.md with a short result.",
        "workspace": f"evals/{name}",
        "expect": {"files": ["summary.md"], "contains": {"summary.md": ["# Summary"]}},
    }


def test_the_skill_under_test_is_required_scored_and_named_in_every_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = skill(tmp_path / "skills")
    uses = _task(folder, "uses-it", {"skill": "my-skill", "write": {"summary.md": SUMMARY}})
    ignores = _task(folder, "ignores-it", {"write": {"summary.md": SUMMARY}})
    # No requiredSkills: the skill under test is the required one.
    (folder / "comet").mkdir()
    manifest = manifest_data(evaluation={"tasks": [uses, ignores]})
    (folder / "comet" / "eval.yaml").write_text(yaml.safe_dump(manifest))
    register_fake_agent(tmp_path, monkeypatch)
    env = {name: os.environ[name] for name in ("COMET_EVAL_ADAPTERS_DIR", "FAKE_API_KEY")}
    result = comet(tmp_path, folder, "--agent", "fake", "--count", "1", "--html", "--experiment-id", "e1", env=env)
    assert result.returncode == 0, result.stdout + result.stderr

    experiment = folder / ".comet" / "eval" / "runs" / "experiments" / "e1"
    records = {p.parent.name: json.loads(p.read_text()) for p in (experiment / "trials").glob("*/record.json")}
    dims = {case: {d["name"]: d for d in r["dimensions"]} for case, r in records.items()}
    assert dims["uses-it-DYNAMIC_SKILL-r1"]["skill_invocation"]["score"] == 1.0
    missed = dims["ignores-it-DYNAMIC_SKILL-r1"]["skill_invocation"]
    assert missed["score"] == 0.0 and "not invoked: my-skill" in missed["reason"]
    # Scored, not a hard failure: the task passed its checks, so the trial passed.
    assert records["ignores-it-DYNAMIC_SKILL-r1"]["verdict"] == "passed"
    # CONTROL installs no skill: N/A, although its agent called the skill's name.
    assert dims["uses-it-CONTROL-r1"]["skill_invocation"]["score"] is None
    skill_record = records["uses-it-DYNAMIC_SKILL-r1"]
    assert skill_record["expected_skills"] == ["my-skill"]
    assert skill_record["skill_sources"] == {"my-skill": str(folder)}
    digest = skill_record["config"]["treatment"]["skills"][0]["content_hash"]
    named = f"my-skill from {folder}, content {digest[:19]}"

    used, per_task = "skill used in 1 of 2 trials", "ignores-it 0 of 1, uses-it 1 of 1"
    for report in ("summary.md", "comparison_report.md"):
        text = (experiment / report).read_text()
        verdict = text[text.index("## Verdict") :]
        assert f"- **DYNAMIC_SKILL**: {named}" in verdict, report
        line = next(x for x in verdict.splitlines() if x.startswith(f"  - {used}"))
        # The pass rates with and without the skill are shown, and said to be observational.
        assert "when it was used" in line and "(observational" in line and line.endswith(f"; per task: {per_task}")
    html = (experiment / "report.html").read_text()
    verdict = html[html.index('<section id="verdict"') : html.index('<section id="comparison"')]
    assert named in verdict and used in verdict and per_task in verdict

    results = [json.loads(line) for line in (experiment / "results.jsonl").read_text().splitlines()]
    by_case = {r["case_id"]: r for r in results}
    assert by_case["uses-it-DYNAMIC_SKILL-r1"]["skill_use"] == {
        "expected": ["my-skill"],
        "used": True,
        "failed_call": False,
        "category": "all",
        "others": [],
    }
    assert by_case["ignores-it-DYNAMIC_SKILL-r1"]["skill_use"]["used"] is False
    # CONTROL installs nothing, yet its (fake) agent reports the skill's call as a success: a leak.
    assert by_case["uses-it-CONTROL-r1"]["skill_use"]["category"] == "leak"

"""``--until-decided``: real pytest sessions on the local backend run in rounds and stop when decided.

The oracle solves every task when the treatment's skill is in its workspace, and only every other time
without it (a counter outside the workspace: the 1st, 3rd, ... call of a task fails). So SKILL passes
every trial and CONTROL half, two "+" pairs every other round: the improvement e-value reaches 40 after
8 of them, at round 7, and the trials of rounds 8 to 10 are not run. Also checked: the same with both
sides alike stops at --max-count without a verdict; the decision is shared by pytest-xdist workers;
a resumed session picks up the decided state; the reports say why the run stopped; the usage errors.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from scaffold.experiment.status import read_status, status_line
from tests.support.factories import TaskFactory

SOLVE = """\
side=c
if [ -d .claude/skills/helper ]; then side=s; fi
if [ "$side" = s ] && [ "{always}" = yes ]; then echo done > out.txt; exit 0; fi
f="{counter}/{name}-$side"
n=$(cat "$f" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "$f"
if [ $((n % 2)) -eq 0 ]; then echo done > out.txt; fi
"""


def _suite(suite: TaskFactory, counter: Path, *, skill_always_passes: bool) -> TaskFactory:
    counter.mkdir(exist_ok=True)
    skill = suite.skill("helper")
    suite.treatments("common.yaml", {"CONTROL": {"description": "baseline", "skills": []}})
    suite.treatments("skills.yaml", {"SKILL": {"description": "one skill", "skills": [str(skill)]}})
    always = "yes" if skill_always_passes else "no"
    for name in ("a", "b"):
        solve = SOLVE.format(always=always, counter=counter, name=name)
        suite.task(name, solve=solve, metadata={"default_treatments": ["CONTROL", "SKILL"]})
    return suite


def run(pytester: pytest.Pytester, experiment: str, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        f"--workspace-root={pytester.path / 'ws'}", f"--experiment-id={experiment}", "--agent=oracle", *args
    )


def folder(pytester: pytest.Pytester, experiment: str) -> Path:
    return pytester.path / "local" / "logs" / "experiments" / experiment


def records(pytester: pytest.Pytester, experiment: str) -> list[str]:
    return sorted(p.parent.name for p in (folder(pytester, experiment) / "trials").glob("*/record.json"))


def test_a_clear_improvement_stops_at_round_seven_and_passes_its_gate(
    pytester: pytest.Pytester, suite: TaskFactory
) -> None:
    _suite(suite, pytester.path / "counter", skill_always_passes=True)
    result = run(pytester, "clear", "--until-decided", "--max-count=10", "--gate", "SKILL better than CONTROL")
    assert result.ret == 0, result.stdout.str()
    found = records(pytester, "clear")
    rounds = {int(name.rsplit("-r", 1)[1]) for name in found}
    # Two trials in flight: at most the one trial started ahead of round 8 runs beyond the decision.
    assert max(rounds) <= 8 and len(found) <= 7 * 4 + 1
    assert {f"{t}-{s}-r{r}" for t in "ab" for s in ("CONTROL", "SKILL") for r in range(1, 8)} <= set(found)
    state = json.loads((folder(pytester, "clear") / "sequential.json").read_text())
    assert state["decisions"]["SKILL"] == {"decision": "improvement", "decided_at": 7, "rounds": 7} or (
        state["decisions"]["SKILL"]["decided_at"] == 7
    )
    summary = (folder(pytester, "clear") / "summary.md").read_text()
    assert "**SKILL** vs CONTROL: **improvement** (on these tasks" in summary
    assert "run until decided, on these tasks: decided at round 7: improvement" in summary
    assert "anytime-valid" in summary and "| `SKILL better than CONTROL` |" in summary
    assert "until decided: " in result.stdout.str() and "trial(s) not needed" in result.stdout.str()
    assert "verdict: SKILL vs CONTROL: improvement (on these tasks; decided at round 7)" in result.stdout.str()
    # comet status: the trials not needed are neither queued nor "not run" (nothing for a resume to do).
    status = read_status([folder(pytester, "clear")], datetime.now(UTC))
    assert status.not_run == () and status.queued == 0 and status.not_needed == 40 - len(found)
    assert f"not needed {40 - len(found)}" in status_line(status)


def test_alike_treatments_stop_at_the_cap_without_a_verdict(pytester: pytest.Pytester, suite: TaskFactory) -> None:
    _suite(suite, pytester.path / "counter", skill_always_passes=False)
    result = run(pytester, "alike", "--until-decided", "--max-count=4", "--gate", "SKILL better than CONTROL")
    assert result.ret == 1  # the gate: no improvement
    assert len(records(pytester, "alike")) == 4 * 4
    summary = (folder(pytester, "alike") / "summary.md").read_text()
    assert "**no significant difference**" in summary
    assert "undecided: the run reached --max-count after 4 whole round(s) without a decision" in summary


def test_xdist_workers_share_the_decision_and_a_resume_keeps_it(pytester: pytest.Pytester, suite: TaskFactory) -> None:
    _suite(suite, pytester.path / "counter", skill_always_passes=True)
    result = run(pytester, "shared", "--until-decided", "--max-count=10", "-n", "2")
    assert result.ret == 0, result.stdout.str()
    first = records(pytester, "shared")
    assert len(first) < 10 * 4  # stopped early, whichever worker finished the deciding round
    again = run(pytester, "shared", "--until-decided", "--max-count=10")
    assert again.ret == 0
    assert records(pytester, "shared") == first  # the resumed session runs nothing more: it is decided
    assert "decided at round" in (folder(pytester, "shared") / "summary.md").read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-count=3"], "--max-count=3: goes with --until-decided"),
        (["--until-decided", "--max-count=0"], "--max-count=0: must be 1 or more"),
        (["--until-decided", "--count=3"], "--count with --until-decided"),
    ],
)
def test_bad_options_are_usage_errors(
    pytester: pytest.Pytester, suite: TaskFactory, args: list[str], message: str
) -> None:
    _suite(suite, pytester.path / "counter", skill_always_passes=True)
    result = run(pytester, "bad", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()

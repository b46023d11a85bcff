"""The pytest plugin end to end through pytester: collection, options, xdist, reports, resume."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from scaffold.catalog.builtin import BUILTIN_TASKS_DIR
from scaffold.catalog.tasks import load_catalog
from tests.support.factories import TaskFactory

BUILT_IN_CASES = [
    (name, treatment)
    for name, task in sorted(load_catalog([BUILTIN_TASKS_DIR]).tasks.items())
    for treatment in task.spec.metadata.default_treatments
]


def ids(result: pytest.RunResult) -> list[str]:
    return [line.split("[", 1)[1].rstrip("]") for line in result.outlines if "::test_task[" in line]


@pytest.fixture
def two_tasks(suite: TaskFactory) -> TaskFactory:
    skill = suite.skill("helper")
    suite.treatments("common.yaml", {"CONTROL": {"description": "baseline", "skills": []}})
    suite.treatments(
        "skills/helper.yaml",
        {
            "SKILL_HELPER": {"description": "one skill", "skills": [str(skill)]},
            "SKILL_OTHER": {"description": "same skill, other name", "skills": [{"name": "other", "path": str(skill)}]},
        },
    )
    suite.task("beta", metadata={"default_treatments": ["CONTROL"]})
    suite.task("alpha", metadata={"default_treatments": ["SKILL_HELPER", "CONTROL"]})
    return suite


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(f"--workspace-root={pytester.path / 'ws'}", *args)


class TestCollection:
    def test_ids_and_order(self, pytester: pytest.Pytester, two_tasks: TaskFactory) -> None:
        result = run(pytester, "--collect-only", "-q")
        assert ids(result) == ["alpha-SKILL_HELPER-r1", "alpha-CONTROL-r1", "beta-CONTROL-r1"]

    @pytest.mark.parametrize("repeat", ["with pytest-repeat", "without pytest-repeat"])
    def test_count_gives_n_trials_never_multiplied(
        self, pytester: pytest.Pytester, two_tasks: TaskFactory, repeat: str
    ) -> None:
        extra = ["-p", "no:repeat"] if repeat.startswith("without") else []
        result = run(pytester, "--collect-only", "-q", "--count=3", "--task=beta", *extra)
        assert ids(result) == ["beta-CONTROL-r1", "beta-CONTROL-r2", "beta-CONTROL-r3"]

    def test_filters_with_prefix_patterns(self, pytester: pytest.Pytester, two_tasks: TaskFactory) -> None:
        result = run(pytester, "--collect-only", "-q", "--task=al*,beta", "--treatment=CONTROL,SKILL_*")
        assert ids(result) == [
            "alpha-CONTROL-r1",
            "alpha-SKILL_HELPER-r1",
            "alpha-SKILL_OTHER-r1",
            "beta-CONTROL-r1",
            "beta-SKILL_HELPER-r1",
            "beta-SKILL_OTHER-r1",
        ]

    def test_unknown_names_are_usage_errors(self, pytester: pytest.Pytester, two_tasks: TaskFactory) -> None:
        result = run(pytester, "--collect-only", "--task=gamma")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*--task=gamma matches no task; known: alpha, beta*"])
        result = run(pytester, "--collect-only", "--treatment=NOPE*")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*--treatment=NOPE* matches no treatment; known: CONTROL, SKILL_HELPER*"])

    def test_collect_only_has_no_side_effect(self, pytester: pytest.Pytester, two_tasks: TaskFactory) -> None:
        before = sorted(p.relative_to(pytester.path) for p in pytester.path.rglob("*"))
        result = run(pytester, "--collect-only", "-q", "-p", "no:cacheprovider")
        assert len(ids(result)) == 3
        after = sorted(p.relative_to(pytester.path) for p in pytester.path.rglob("*") if "__pycache__" not in p.parts)
        assert after == [p for p in before if "__pycache__" not in p.parts]

    def test_broken_task_is_one_failing_item_and_others_run(
        self, pytester: pytest.Pytester, two_tasks: TaskFactory
    ) -> None:
        two_tasks.task("broken", metadata={"difficulty": "extreme"})
        result = run(pytester, "--task=broken,beta", "--count=2", "-q")
        result.assert_outcomes(passed=2, failed=1)
        assert ids(run(pytester, "--collect-only", "-q", "--task=broken", "--count=5")) == ["broken-INVALID"]
        result.stdout.fnmatch_lines(["*task.toml: [[]metadata[]] difficulty: expected 'easy', 'medium' or 'hard'*"])

    def test_dynamic_skill(self, pytester: pytest.Pytester, two_tasks: TaskFactory) -> None:
        skill = two_tasks.skill("mine")
        result = run(pytester, "--collect-only", "-q", "--task=beta", f"--skill-path={skill}", "--skill-name=renamed")
        assert ids(result) == ["beta-CONTROL-r1", "beta-DYNAMIC_SKILL-r1"]
        bad = run(pytester, "--collect-only", "--task=beta", f"--skill-path={pytester.path / 'nope'}")
        assert bad.ret == pytest.ExitCode.USAGE_ERROR


class TestRuns:
    def test_run_writes_records_and_summary(self, pytester: pytest.Pytester, two_tasks: TaskFactory) -> None:
        result = run(pytester, "--experiment-id=e1", "-q")
        result.assert_outcomes(passed=3)
        experiment = pytester.path / "local" / "logs" / "experiments" / "e1"
        records = sorted(p.parent.name for p in experiment.glob("trials/*/record.json"))
        assert records == ["alpha-CONTROL-r1", "alpha-SKILL_HELPER-r1", "beta-CONTROL-r1"]
        summary = (experiment / "summary.md").read_text()
        assert "| CONTROL | 2 | 2 | 0 | 0 | 100% | 1.000 |" in summary
        assert "| alpha |" in summary and "| beta |" in summary
        result.stdout.fnmatch_lines(["*comet-eval*", "trials: 3 passed", f"summary: {experiment / 'summary.md'}"])

    def test_resume_by_experiment_id(self, pytester: pytest.Pytester, two_tasks: TaskFactory) -> None:
        run(pytester, "--experiment-id=e2", "--task=beta").assert_outcomes(passed=1)
        record = pytester.path / "local/logs/experiments/e2/trials/beta-CONTROL-r1/record.json"
        first = record.read_text()
        again = run(pytester, "--experiment-id=e2", "--task=beta,alpha")
        again.assert_outcomes(passed=3)
        again.stdout.fnmatch_lines(["trials: 3 passed (1 from earlier runs of this experiment)"])
        assert record.read_text() == first

    def test_failures_explain_themselves(self, pytester: pytest.Pytester, two_tasks: TaskFactory) -> None:
        two_tasks.task("wrong", solve="echo nope > out.txt\n")
        # CONTROL is a tested treatment here, not the observed baseline (whose failures would be xfail).
        result = run(pytester, "--task=wrong", "--keep-workspaces=failed", "--baseline=SKILL_HELPER")
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(
            [
                "trial wrong-CONTROL-r1: verdict failed (weighted score *)",
                "  failed check [[]script:check.py[]] out.txt says done: ",
                "  record: *record.json",
                "  workspace kept: *wrong-CONTROL-r1-*",
            ]
        )

    def test_k_x_lf_and_junitxml(self, pytester: pytest.Pytester, two_tasks: TaskFactory) -> None:
        two_tasks.task("wrong", solve="echo nope > out.txt\n")
        run(pytester, "-k", "beta").assert_outcomes(passed=1)
        stopped = run(pytester, "-x", "--task=wrong,beta", "--count=2", "--baseline=SKILL_HELPER")
        stopped.assert_outcomes(passed=2, failed=1)  # beta r1, r2, then wrong r1 stops the run
        again = run(pytester, "--lf", "--task=wrong,beta", "--count=2", "--baseline=SKILL_HELPER")
        again.assert_outcomes(failed=1)
        assert ids(run(pytester, "--lf", "--collect-only", "-q", "--task=wrong,beta", "--count=2")) == [
            "wrong-CONTROL-r1"
        ]
        xml_path = pytester.path / "junit.xml"
        run(pytester, "--task=beta", f"--junitxml={xml_path}").assert_outcomes(passed=1)
        props = {p.get("name"): p.get("value") for p in ET.parse(xml_path).iter("property")}
        assert props["comet_verdict"] == "passed" and props["comet_record"].endswith("record.json")

    def test_xdist_two_workers(self, pytester: pytest.Pytester, two_tasks: TaskFactory) -> None:
        result = pytester.runpytest_subprocess(
            "-n", "2", "--count=3", "--experiment-id=par", f"--workspace-root={pytester.path / 'ws'}", "-q"
        )
        result.assert_outcomes(passed=9)
        experiment = pytester.path / "local/logs/experiments"
        assert [p.name for p in experiment.iterdir()] == ["par"]
        records = [json.loads(p.read_text()) for p in (experiment / "par").glob("trials/*/record.json")]
        assert len(records) == 9
        assert {r["worker"] for r in records} == {"gw0", "gw1"}
        assert (experiment / "par" / "summary.md").is_file()
        result.stdout.fnmatch_lines(["trials: 9 passed"])

    def test_xdist_workers_share_a_generated_experiment_id(
        self, pytester: pytest.Pytester, two_tasks: TaskFactory
    ) -> None:
        result = pytester.runpytest_subprocess("-n", "2", f"--workspace-root={pytester.path / 'ws'}", "-q")
        result.assert_outcomes(passed=3)
        experiments = list((pytester.path / "local/logs/experiments").iterdir())
        assert len(experiments) == 1
        assert len(list(experiments[0].glob("trials/*/record.json"))) == 3


def test_plugin_is_inert_in_other_sessions(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    result = pytester.runpytest("-q", "--count=2")
    result.assert_outcomes(passed=2)  # pytest-repeat still owns --count for ordinary tests
    assert not (pytester.path / "local").exists()
    assert "comet-eval" not in result.stdout.str()


def test_a_project_without_tasks_runs_the_built_in_ones(pytester: pytest.Pytester) -> None:
    # As an installation run from an empty folder does: no local/tasks there, so the packaged tasks and
    # treatments (scaffold.catalog.builtin), and the experiments still under the project's local/logs.
    tests = pytester.path / "local" / "tests"
    tests.mkdir(parents=True)
    (tests / "test_tasks.py").write_text("def test_task(comet_trial):\n    comet_trial.assert_passed()\n")
    result = pytester.runpytest("local/tests", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK
    assert sorted(ids(result)) == sorted(f"{name}-{treatment}-r1" for name, treatment in BUILT_IN_CASES)
    result = pytester.runpytest("local/tests", "--task=fix-median", f"--workspace-root={pytester.path / 'ws'}")
    result.assert_outcomes(passed=1)
    assert len(list(pytester.path.glob("local/logs/experiments/*/trials/fix-median-CONTROL-r1/record.json"))) == 1


def test_nop_agent_fails_and_unknown_agent_is_named(pytester: pytest.Pytester, two_tasks: TaskFactory) -> None:
    run(pytester, "--task=beta", "--agent=nop", "--baseline=SKILL_HELPER").assert_outcomes(failed=1)
    bad = run(pytester, "--task=beta", "--agent=gpt-9")
    bad.stderr.fnmatch_lines(
        ["*--agent=gpt-9: unknown agent; known: claude-code, codebuddy, codex, nop, oracle, qoder*"]
    )
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert len(list((pytester.path / "local" / "logs" / "experiments").iterdir())) == 1  # the nop run's only


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--comet-backend=dockr", "--backend=dockr: unknown backend; known: docker, local"),
        ("--comet-profile=nope", "--profile=nope: unknown evaluation profile; known profiles: *generic*"),
        ("--comet-image-alias=bad", "--image-alias: 'bad' is not REF=LOCAL *"),
    ],
)
def test_a_bad_option_value_is_a_usage_error_before_any_trial(
    pytester: pytest.Pytester, two_tasks: TaskFactory, option: str, message: str
) -> None:
    # Each used to fail every trial's setup (or make every trial invalid), the message inside a traceback.
    result = run(pytester, "--task=beta", option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert not list(pytester.path.glob("local/logs/experiments/*/trials"))  # no trial started


def test_a_baseline_trial_that_errored_fails_instead_of_being_expected(
    pytester: pytest.Pytester, two_tasks: TaskFactory
) -> None:
    # Without --gate the baseline's failures are observations (xfail); an errored trial observed nothing
    # (here no workspace could be made), so it must not pass as an expected failure with exit status 0.
    blocked = pytester.path / "blocked"
    blocked.write_text("a file where the workspace root should be")
    result = pytester.runpytest(f"--workspace-root={blocked / 'ws'}", "--task=beta", "--agent=nop")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*verdict error*", "*cannot create the workspace*"])

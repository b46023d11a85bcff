"""Bad inputs in a pytest run are named where they are: the file and line of a treatments file that does
not parse, every problem of a task in its INVALID item at once, warnings for broken files the run does
not use, and ``--skill-path`` / ``--treatments-dir`` meaning what docs/treatments.md says."""

from __future__ import annotations

import tomllib

import pytest

from scaffold.cli.main import main
from tests.support.factories import REPO, TaskFactory


def ids(result: pytest.RunResult) -> list[str]:
    return [line.split("[", 1)[1].rstrip("]") for line in result.outlines if "::test_task[" in line]


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # In-process runs inherit this suite's "error" warning filter: let InputWarnings show as a user's would.
    return pytester.runpytest(
        f"--workspace-root={pytester.path / 'ws'}", "-W", "default::scaffold.errors.InputWarning", *args
    )


@pytest.fixture
def two_tasks(suite: TaskFactory) -> TaskFactory:
    skill = suite.skill("helper")
    suite.treatments("skills/helper.yaml", {"SKILL_HELPER": {"description": "one skill", "skills": [str(skill)]}})
    suite.task("beta", metadata={"default_treatments": ["CONTROL"]})
    suite.task("alpha", metadata={"default_treatments": ["SKILL_HELPER", "CONTROL"]})
    return suite


BROKEN_YAML = "SKILL_NEW:\n  description: new\n  skills: [../skills/helper\n"  # the list is never closed


class TestUnreadableTreatmentsFile:
    def test_a_treatment_chosen_from_it_names_the_file_and_line(
        self, pytester: pytest.Pytester, two_tasks: TaskFactory
    ) -> None:
        bad = two_tasks.treatments("new.yaml", BROKEN_YAML)
        result = run(pytester, "--collect-only", "--task=beta", "--treatment=SKILL_NEW")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(
            [
                "*--treatment=SKILL_NEW matches no treatment; known: CONTROL, SKILL_HELPER; "
                f"treatments files with problems: {bad}: line 4, column 1: not valid YAML: *"
            ]
        )

    def test_a_task_naming_a_treatment_it_may_define_is_invalid_naming_the_file_and_line(
        self, pytester: pytest.Pytester, two_tasks: TaskFactory
    ) -> None:
        bad = two_tasks.treatments("new.yaml", BROKEN_YAML)
        two_tasks.task("gamma", metadata={"default_treatments": ["SKILL_NEW"]})
        result = run(pytester, "--task=gamma", "-q")
        result.assert_outcomes(failed=1)
        assert ids(run(pytester, "--collect-only", "-q", "--task=gamma")) == ["gamma-INVALID"]
        result.stdout.fnmatch_lines(
            [
                "*task.toml: [[]metadata[]] default_treatments: names unknown treatment 'SKILL_NEW'*",
                f"*{bad}: line 4, column 1: not valid YAML: *",
            ]
        )

    def test_one_no_selected_task_uses_is_a_warning(self, pytester: pytest.Pytester, two_tasks: TaskFactory) -> None:
        bad = two_tasks.treatments("new.yaml", BROKEN_YAML)
        result = run(pytester, "--task=beta", "-q")
        result.assert_outcomes(passed=1, warnings=1)
        result.stdout.fnmatch_lines(["*InputWarning: " + f"{bad}: line 4, column 1: not valid YAML: *"])

    def test_a_broken_treatment_no_selected_task_uses_is_a_warning(
        self, pytester: pytest.Pytester, two_tasks: TaskFactory
    ) -> None:
        bad = two_tasks.treatments("unused.yaml", {"SKILL_UNUSED": {"skills": ["../skills/missing"]}})
        result = run(pytester, "-q")
        result.assert_outcomes(passed=3, warnings=1)
        result.stdout.fnmatch_lines(
            [f"*InputWarning: {bad}: SKILL_UNUSED.skills[[]0[]]: skill folder * does not exist*"]
        )
        # -W error makes it strict.
        strict = run(pytester, "-q", "--collect-only", "-W", "error::scaffold.errors.InputWarning")
        assert strict.ret == pytest.ExitCode.INTERRUPTED  # a collection error naming the file
        strict.stdout.fnmatch_lines([f"*InputWarning: {bad}: SKILL_UNUSED.skills*"])

    def test_it_stays_a_warning_under_the_checkout_s_own_pytest_configuration(
        self, pytester: pytest.Pytester, two_tasks: TaskFactory
    ) -> None:
        # pyproject.toml's pytest configuration (filterwarnings = error, and its exceptions) is also the
        # one `pytest local/tests` runs with in the checkout: the file's warning must not stop the run there.
        options = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
        assert "error" in options["filterwarnings"]
        pytester.makeini("[pytest]\nfilterwarnings =\n" + "".join(f"    {f}\n" for f in options["filterwarnings"]))
        bad = two_tasks.treatments("new.yaml", BROKEN_YAML)
        workspaces = f"--workspace-root={pytester.path / 'ws'}"
        result = pytester.runpytest(workspaces, "--task=beta", "-q")
        assert result.ret == pytest.ExitCode.OK, result.stdout.str()
        result.assert_outcomes(passed=1, warnings=1)
        result.stdout.fnmatch_lines(["*InputWarning: " + f"{bad}: line 4, column 1: not valid YAML: *"])
        # As docs/treatments.md says, the command line can still make it an error.
        strict = pytester.runpytest(workspaces, "--task=beta", "-q", "-W", "error::scaffold.errors.InputWarning")
        assert strict.ret == pytest.ExitCode.INTERRUPTED
        strict.stdout.fnmatch_lines([f"*InputWarning: {bad}: line 4, column 1: not valid YAML: *"])


def test_every_problem_of_a_task_is_in_its_invalid_item_at_once(
    pytester: pytest.Pytester, two_tasks: TaskFactory
) -> None:
    folder = two_tasks.task(
        "gamma",
        metadata={"default_treatments": ["SKILL_NOPE"], "category": "generic"},
        evaluation={"profile": "nope"},
    )
    (folder / "instruction.md").unlink()
    (folder / "solution" / "solve.sh").unlink()
    index = two_tasks.tasks_dir / "index.yaml"
    index.write_text(index.read_text().replace("description: task gamma", "description: another"))

    result = run(pytester, "--task=gamma", "-q")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*{folder / 'instruction.md'}: missing: the agent's instruction goes here*",
            "*task.toml: [[]metadata[]] default_treatments: names unknown treatment 'SKILL_NOPE'*",
            "*task.toml: [[]evaluation[]] profile: unknown evaluation profile; known: *(got 'nope')*",
        ]
    )
    # Not problems: a user's task may ship no solve.sh (only the oracle refuses it), and an index.yaml
    # entry that disagrees with task.toml is a warning (task.toml wins).
    assert "solve.sh" not in result.stdout.str()
    assert f"{index}: tasks[gamma]" not in result.stdout.str()


def test_skill_path_without_treatment_runs_only_control_and_dynamic_skill(
    pytester: pytest.Pytester, two_tasks: TaskFactory
) -> None:
    skill = two_tasks.skill("mine")
    result = run(pytester, "--collect-only", "-q", f"--skill-path={skill}")
    # alpha's own default SKILL_HELPER does not run: the question is CONTROL against this skill.
    assert ids(result) == ["alpha-CONTROL-r1", "alpha-DYNAMIC_SKILL-r1", "beta-CONTROL-r1", "beta-DYNAMIC_SKILL-r1"]
    chosen = run(pytester, "--collect-only", "-q", f"--skill-path={skill}", "--treatment=SKILL_HELPER,DYNAMIC_SKILL")
    assert ids(chosen) == [
        "alpha-SKILL_HELPER-r1", "alpha-DYNAMIC_SKILL-r1", "beta-SKILL_HELPER-r1", "beta-DYNAMIC_SKILL-r1",
    ]  # fmt: skip


def test_treatments_dir_replaces_the_default_in_pytest_and_in_tasks_check(
    pytester: pytest.Pytester, two_tasks: TaskFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    # Both go through scaffold.session.treatment_folders: the folders given replace the default one.
    elsewhere = pytester.path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "t.yaml").write_text("SKILL_ELSEWHERE:\n  skills: []\n")
    collected = run(pytester, "--collect-only", "-q", f"--treatments-dir={elsewhere}")
    # alpha names SKILL_HELPER, which only the default folder defines: not found, so alpha is INVALID.
    assert ids(collected) == ["alpha-INVALID", "beta-CONTROL-r1"]
    code = main(["tasks", "check", str(two_tasks.tasks_dir), "--treatments-dir", str(elsewhere)])
    out, _ = capsys.readouterr()
    assert code == 1
    assert "names unknown treatment 'SKILL_HELPER'; known: CONTROL, SKILL_ELSEWHERE" in out
    helptext = pytester.runpytest("--help").stdout.str()
    assert "replaces the default" in helptext and "besides local/treatments" not in helptext

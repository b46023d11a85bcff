"""``pytest local/tests --eval-manifest=PATH``: a skill's eval.yaml through the plugin's one session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.factories import TaskFactory


def ids(result: pytest.RunResult) -> list[str]:
    return [line.split("[", 1)[1].rstrip("]") for line in result.outlines if "::test_task[" in line]


def write_skill(pytester: pytest.Pytester, evaluation: dict[str, Any], **sections: Any) -> Path:
    """``skills/my-skill`` (outside the suite) with its comet/eval.yaml and a source task under evals/."""
    root = pytester.path / "skills" / "my-skill"
    (root / "comet").mkdir(parents=True, exist_ok=True)
    (root / "SKILL.md").write_text("---\nname: my-skill\ndescription: d\n---\nUse it.\n")
    TaskFactory(root / "evals").task("own-task")
    data = {
        "apiVersion": "comet.eval/v1alpha1",
        "kind": "SkillEvalManifest",
        "metadata": {"name": "demo"},
        "skill": {},
        "evaluation": evaluation,
        **sections,
    }
    path = root / "comet" / "eval.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


INLINE = {
    "name": "inline-one",
    "prompt": "Write out.txt.",
    "expect": {"files": ["out.txt"], "contains": {"out.txt": ["done"]}},
}
SOURCE = {"source": "evals/tasks/own-task"}


@pytest.fixture
def builtin(suite: TaskFactory) -> TaskFactory:
    """The suite's built-in tasks: what recommendedTasks and --quick name."""
    suite.task("builtin-one")
    suite.task("generic-skill-smoke")
    return suite


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(f"--workspace-root={pytester.path / 'ws'}", "-p", "no:cacheprovider", *args)


def experiments(manifest: Path) -> Path:
    return manifest.parent.parent / ".comet" / "eval" / "runs" / "experiments"


# --- what runs ------------------------------------------------------------------------------------------------


def test_the_manifest_tasks_run_under_control_and_the_skill(pytester: pytest.Pytester, builtin: TaskFactory) -> None:
    manifest = write_skill(pytester, {"tasks": [INLINE, SOURCE], "recommendedTasks": ["builtin-one"]})
    result = run(pytester, "--collect-only", "-q", f"--eval-manifest={manifest}")
    # The manifest's own tasks and its recommended built-in ones run together; no other built-in task does.
    assert ids(result) == [
        "builtin-one-CONTROL-r1",
        "builtin-one-DYNAMIC_SKILL-r1",
        "inline-one-CONTROL-r1",
        "inline-one-DYNAMIC_SKILL-r1",
        "own-task-CONTROL-r1",
        "own-task-DYNAMIC_SKILL-r1",
    ]


@pytest.mark.parametrize(
    ("evaluation", "args", "expected"),
    [
        ({"tasks": [INLINE], "recommendedTasks": ["builtin-one"]}, ["--task=builtin-one"], "builtin-one"),
        ({"tasks": [INLINE], "recommendedTasks": ["builtin-one"]}, ["--task=inline-one"], "inline-one"),
        ({"tasks": [INLINE], "recommendedTasks": ["builtin-one"]}, ["--quick"], "generic-skill-smoke"),
        ({"tasks": [INLINE]}, [], "inline-one"),
        ({"recommendedTasks": ["builtin-one"]}, [], "builtin-one"),
    ],
)
def test_selection_order(
    pytester: pytest.Pytester, builtin: TaskFactory, evaluation: dict[str, Any], args: list[str], expected: str
) -> None:
    manifest = write_skill(pytester, evaluation)
    result = run(pytester, "--collect-only", "-q", f"--comet-eval-manifest={manifest}", *args)
    assert ids(result) == [f"{expected}-CONTROL-r1", f"{expected}-DYNAMIC_SKILL-r1"]


def test_collect_only_validates_in_memory_and_writes_nothing(pytester: pytest.Pytester, builtin: TaskFactory) -> None:
    manifest = write_skill(pytester, {"tasks": [INLINE, SOURCE]})
    before = sorted(pytester.path.rglob("*"))
    result = run(pytester, "--collect-only", "-q", f"--eval-manifest={manifest}")
    assert len(ids(result)) == 4
    after = sorted(p for p in pytester.path.rglob("*") if "__pycache__" not in p.parts)
    assert after == [p for p in before if "__pycache__" not in p.parts]


def test_an_invalid_manifest_is_a_usage_error_listing_every_problem(
    pytester: pytest.Pytester, builtin: TaskFactory
) -> None:
    manifest = write_skill(
        pytester,
        {
            "tasks": [{"name": "x", "prompt": "p", "expect": {"json": [{"file": "a", "path": "$[*]", "equals": 1}]}}],
            "recommendedTasks": ["nope"],
        },
    )
    result = run(pytester, "--collect-only", f"--eval-manifest={manifest}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    lines = result.stderr.str().splitlines()
    assert lines[:2] == [
        f"ERROR: {manifest}: evaluation.recommendedTasks[0]: unknown built-in task; allowed: builtin-one, "
        "generic-skill-smoke (got 'nope')",
        f"{manifest}: evaluation.tasks[0].expect.json[0].path: JSON path '$[*]' is not understood at '[*]'; "
        "allowed steps: .name, ['any key'], [index] (e.g. $.items[0].title)",
    ]
    assert "Traceback" not in result.stderr.str()


def test_a_manifest_without_tasks_under_collect_only_says_a_run_will_generate(
    pytester: pytest.Pytester, builtin: TaskFactory
) -> None:
    manifest = write_skill(pytester, {})
    result = run(pytester, "--collect-only", f"--eval-manifest={manifest}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*declares no task and no generated tasks are cached*a normal run*generates them first*"]
    )
    assert not (manifest.parent.parent / ".comet").exists()


# --- running, and the quality gates -------------------------------------------------------------------------------


def test_a_run_writes_tasks_and_reports_under_the_owner(pytester: pytest.Pytester, builtin: TaskFactory) -> None:
    manifest = write_skill(pytester, {"tasks": [INLINE, SOURCE]})
    result = run(pytester, f"--eval-manifest={manifest}", "--experiment-id=e1", "--agent=oracle")
    # No quality gates and no --gate: CONTROL is observed, the skill's trials are tested; the inline task
    # has no reference solution, so the oracle leaves its checks failing.
    result.assert_outcomes(passed=2, failed=1, xfailed=1)
    tasks = experiments(manifest) / "e1" / "tasks"
    assert sorted(p.name for p in tasks.iterdir() if p.is_dir()) == ["inline-one", "own-task"]
    exp = experiments(manifest) / "e1"
    assert (exp / "summary.md").is_file()
    assert not (exp / "quality-gates.json").exists()  # no quality gates declared
    # The skill's .comet/ was made by this run: git ignores it, as it does after comet eval.
    assert (manifest.parent.parent / ".comet" / ".gitignore").read_text() == "*\n"


def test_passing_quality_gates_exit_0_and_are_written_and_shown(
    pytester: pytest.Pytester, builtin: TaskFactory
) -> None:
    manifest = write_skill(
        pytester,
        {
            "tasks": [SOURCE],
            "qualityGates": {"minPassAt1": 1, "maxInstabilityGap": 0, "gates": ["pass rate of DYNAMIC_SKILL >= 1"]},
        },
    )
    result = run(pytester, f"--eval-manifest={manifest}", "--experiment-id=q1", "--agent=oracle")
    assert result.ret == pytest.ExitCode.OK
    exp = experiments(manifest) / "q1"
    data = json.loads((exp / "quality-gates.json").read_text())
    assert data["passed"] is True and data["treatments"] == ["DYNAMIC_SKILL"]
    assert data["tasks"] == [
        {
            "task": "own-task",
            "trials": 1,
            "pass_at_1": 1.0,
            "weighted_score": data["tasks"][0]["weighted_score"],
            "instability_gap": 0.0,
        }
    ]
    assert [g["expression"] for g in data["gates"]] == ["pass rate of DYNAMIC_SKILL >= 1"]
    summary = (exp / "summary.md").read_text()
    assert "## Quality gates (eval.yaml)" in summary and "**Passed** over DYNAMIC_SKILL." in summary
    result.stdout.fnmatch_lines(["quality gates: PASS (*quality-gates.json)"])


def test_a_failing_quality_gate_exits_1_and_is_listed(pytester: pytest.Pytester, builtin: TaskFactory) -> None:
    manifest = write_skill(pytester, {"tasks": [INLINE, SOURCE], "qualityGates": {"minPassAt1": 0.5}})
    result = run(pytester, f"--eval-manifest={manifest}", "--experiment-id=q2", "--agent=oracle")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "quality gates: FAIL (*quality-gates.json)",
            "quality gate FAIL: inline-one: pass@1 0 is below the required 0.5",
        ]
    )
    data = json.loads((experiments(manifest) / "q2" / "quality-gates.json").read_text())
    assert data["passed"] is False and data["failures"] == ["inline-one: pass@1 0 is below the required 0.5"]
    assert (
        "- FAIL inline-one: pass@1 0 is below the required 0.5"
        in (experiments(manifest) / "q2" / "summary.md").read_text()
    )


def test_a_failing_manifest_gate_expression_exits_1(pytester: pytest.Pytester, builtin: TaskFactory) -> None:
    manifest = write_skill(pytester, {"tasks": [SOURCE], "qualityGates": {"gates": ["pass rate of CONTROL < 0.5"]}})
    result = run(pytester, f"--eval-manifest={manifest}", "--experiment-id=q3", "--agent=oracle")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["gate FAIL: pass rate of CONTROL < 0.5*", "quality gates: FAIL*"])


def test_every_treatment_a_baseline_fails_the_floors(pytester: pytest.Pytester, builtin: TaskFactory) -> None:
    manifest = write_skill(
        pytester,
        {"tasks": [SOURCE], "baselineTreatments": ["CONTROL", "DYNAMIC_SKILL"], "qualityGates": {"minPassAt1": 0}},
    )
    result = run(pytester, f"--eval-manifest={manifest}", "--experiment-id=q4", "--agent=oracle")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["quality gate FAIL: no treatment left to assess*"])


def test_the_manifest_execution_settings_apply_unless_the_command_line_says_otherwise(
    pytester: pytest.Pytester, builtin: TaskFactory
) -> None:
    manifest = write_skill(pytester, {"tasks": [SOURCE]}, execution={"agent": "nop"})
    result = run(pytester, f"--eval-manifest={manifest}", "--experiment-id=x1")
    assert result.parseoutcomes().get("failed") == 1  # nop does nothing: the skill's trial fails
    result = run(pytester, f"--eval-manifest={manifest}", "--experiment-id=x2", "--agent=oracle")
    assert result.parseoutcomes() == {"passed": 2}


def test_judge_settings_are_validated_and_recorded_without_credentials(
    pytester: pytest.Pytester, builtin: TaskFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The judge's CLI must be installed before the run starts; a stand-in that answers nothing will do.
    stand_in = pytester.path / "judge-bin" / "claude"
    stand_in.parent.mkdir()
    stand_in.write_text("#!/bin/sh\ncat >/dev/null\n")
    stand_in.chmod(0o755)
    monkeypatch.setenv("COMET_AGENT_BIN_DIR", str(stand_in.parent))
    manifest = write_skill(pytester, {"tasks": [SOURCE]}, judge={"model": "judge-model"})
    result = run(
        pytester,
        f"--eval-manifest={manifest}",
        "--experiment-id=j1",
        "--agent=oracle",
        "--judge-agent=claude-code",
        "--judge-base-url=https://user:secret@judge.example.com:8443/v1?key=secret",
    )
    assert result.ret == pytest.ExitCode.OK
    record = json.loads(
        (experiments(manifest) / "j1" / "trials" / "own-task-DYNAMIC_SKILL-r1" / "record.json").read_text()
    )
    assert record["config"]["judge"] == {
        "agent": "claude-code",
        "model": "judge-model",
        "base_url": "https://judge.example.com:8443/v1",
    }
    assert "secret" not in json.dumps(record["config"])
    result = run(pytester, f"--eval-manifest={manifest}", "--agent=oracle", "--judge-agent=Not An Id")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*judge agent 'Not An Id': an agent id is a lowercase letter*"])


def test_without_judge_settings_the_trial_configuration_is_unchanged(
    pytester: pytest.Pytester, builtin: TaskFactory
) -> None:
    manifest = write_skill(pytester, {"tasks": [SOURCE]})
    run(pytester, f"--eval-manifest={manifest}", "--experiment-id=j2", "--agent=oracle")
    record = json.loads((experiments(manifest) / "j2" / "trials" / "own-task-CONTROL-r1" / "record.json").read_text())
    assert "judge" not in record["config"]


def test_under_xdist_the_tasks_are_written_once_and_the_controller_gates(
    pytester: pytest.Pytester, builtin: TaskFactory
) -> None:
    manifest = write_skill(pytester, {"tasks": [INLINE, SOURCE], "qualityGates": {"minPassAt1": 0.5}})
    result = pytester.runpytest_subprocess(
        "-n",
        "2",
        "-p",
        "no:cacheprovider",
        f"--workspace-root={pytester.path / 'ws'}",
        f"--eval-manifest={manifest}",
        "--experiment-id=xd",
        "--agent=oracle",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=2, failed=1, xfailed=1)  # CONTROL, a baseline, is observed
    data = json.loads((experiments(manifest) / "xd" / "quality-gates.json").read_text())
    assert data["failures"] == ["inline-one: pass@1 0 is below the required 0.5"]
    tasks = experiments(manifest) / "xd" / "tasks"
    assert sorted(p.name for p in tasks.iterdir() if not p.name.startswith(".")) == [
        "index.yaml",
        "inline-one",
        "own-task",
    ]

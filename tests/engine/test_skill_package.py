"""Loading and validating skill packages: every problem names its file and field, and says how to fix it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from comet_engine.errors import DefinitionError, SkillPackageError
from comet_engine.skills import load_package
from tests.engine.skillpkg import EXAMPLE, minimal_skill, write_package


def problems_of(root: Path) -> list[str]:
    with pytest.raises(SkillPackageError) as info:
        load_package(root)
    return list(info.value.problems)


def one_problem(root: Path) -> str:
    problems = problems_of(root)
    assert len(problems) == 1, problems
    return problems[0]


def test_the_example_package_loads_with_its_guardrails_checks_and_manifest() -> None:
    package = load_package(EXAMPLE)

    assert (package.name, package.version, package.mode) == ("release-notes", "1", "deterministic")
    assert [s.id for s in package.steps] == ["gather", "draft", "review", "publish", "done"]
    assert package.guardrails.max_iterations == 20
    assert package.guardrails.max_retries_per_action == 2
    assert package.guardrails.allowed_tools == ("publish-notes",)
    assert [c.id for c in package.checks] == [
        "notes-drafted",
        "changes-collected",
        "notes-published",
        "release-completed",
    ]
    assert package.checks_file == "checks.yaml"
    # eval.yaml is the authoring manifest: exposed as parsed, never interpreted by the engine.
    assert package.eval_manifest is not None
    assert package.eval_manifest["evaluation"]["tasks"][0]["name"] == "writes-release-notes"
    assert [(s.path, len(s.sha256)) for s in package.scripts] == [("scripts/publish.sh", 64)]


def test_defaults_without_guardrails_yaml_allow_everything_declared(tmp_path: Path) -> None:
    skill = minimal_skill(
        agents=["reviewer"],
        tools=["lint", {"name": "deploy", "requiresConfirmation": True}],
    )
    package = load_package(write_package(tmp_path, skill))

    rails = package.guardrails
    assert rails.allowed_skills == ("worker",)
    assert rails.allowed_agents == ("reviewer",)
    assert rails.allowed_tools == ("lint", "deploy")
    assert (rails.max_iterations, rails.max_retries_per_action) == (50, 3)
    assert rails.confirmation_required_for == ("deploy",)
    assert package.checks == () and package.eval_manifest is None


def test_guardrails_may_restrict_but_never_name_undeclared_items(tmp_path: Path) -> None:
    root = write_package(
        tmp_path, guardrails={"allowedSkills": ["worker", "intruder"], "allowedTools": ["nope"], "maxIterations": 5}
    )

    problems = problems_of(root)

    assert len(problems) == 2
    assert all(str(root / "comet" / "guardrails.yaml") in p for p in problems)
    assert "allowedSkills: 'intruder' is not declared in skill.yaml skills:" in problems[0]
    assert "allowedTools: 'nope' is not declared" in problems[1]


def test_a_confirmation_required_in_skill_yaml_survives_guardrails_yaml(tmp_path: Path) -> None:
    skill = minimal_skill(tools=[{"name": "deploy", "requiresConfirmation": True}, "lint"])
    root = write_package(tmp_path, skill, guardrails={"confirmationRequiredFor": ["lint"]})

    assert load_package(root).guardrails.confirmation_required_for == ("deploy", "lint")


def test_checks_yaml_and_evals_yaml_together_are_an_error(tmp_path: Path) -> None:
    checks = {"runtime": [{"id": "done", "scope": "completion", "type": "state_equals", "field": "status"}]}
    root = write_package(tmp_path, checks=checks, evals=checks)

    problem = one_problem(root)

    assert str(root / "comet") in problem
    assert "both checks.yaml and evals.yaml" in problem and "delete the other" in problem


def test_evals_yaml_is_the_other_name_of_checks_yaml(tmp_path: Path) -> None:
    evals = {
        "runtime": [
            {"id": "done", "scope": "completion", "type": "state_equals", "field": "status", "equals": "completed"}
        ]
    }
    package = load_package(write_package(tmp_path, evals=evals))

    assert package.checks_file == "evals.yaml"
    assert package.checks[0].equals == "completed"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"apiVersion": "comet/v2"}, "skill.yaml: apiVersion: expected 'comet/v1alpha1'"),
        (
            {"metadata": {"name": "demo", "version": 1}},
            'metadata.version: expected a valid string; quote it: version: "1"',
        ),
        ({"metadata": {"name": "Bad Name", "version": "1"}}, "metadata.name: String should match pattern"),
        ({"goal": {}}, "goal.statement: required field is missing"),
        ({"colour": "blue"}, "colour: unknown field"),
        ({"orchestration": {"mode": "sequential"}}, "orchestration.mode: expected 'deterministic' or 'adaptive'"),
    ],
)
def test_shape_errors_name_file_and_field(tmp_path: Path, change: dict[str, Any], expected: str) -> None:
    problem = one_problem(write_package(tmp_path, minimal_skill(**change)))

    assert problem.startswith(str(tmp_path / "comet" / "skill.yaml") + ": ")
    assert expected in problem


def steps(*items: dict[str, Any], entry: str | None = "one") -> dict[str, Any]:
    orchestration: dict[str, Any] = {"mode": "deterministic", "steps": list(items)}
    if entry is not None:
        orchestration["entry"] = entry
    return minimal_skill(orchestration=orchestration, tools=["lint"], agents=["bot"])


@pytest.mark.parametrize(
    ("skill", "expected"),
    [
        (steps({"id": "one", "action": {"type": "checkpoint"}}, entry=None), "orchestration.entry: required"),
        (steps({"id": "one", "action": {"type": "checkpoint"}}, entry="zero"), "'zero' is not a step id; known: one"),
        (
            steps({"id": "one", "action": {"type": "invoke_skill", "ref": "ghost"}}),
            "orchestration.steps[0](one).action.ref: 'ghost' is not declared; add it to skills:",
        ),
        (
            steps({"id": "one", "action": {"type": "call_tool", "ref": "worker"}}),
            "action.ref: 'worker' is not declared; add it to tools:",
        ),
        (steps({"id": "one", "action": {"type": "handoff"}}), "action.ref: required for handoff"),
        (
            steps({"id": "one", "action": {"type": "ask_user"}}),
            "steps[0](one).action.question: ask_user needs a question",
        ),
        (
            steps({"id": "one", "action": {"type": "checkpoint"}, "next": "two"}),
            "steps[0](one).next: 'two' is not a step id",
        ),
        (
            steps({"id": "one", "action": {"type": "checkpoint"}}, {"id": "one", "action": {"type": "checkpoint"}}),
            "step id 'one' is used twice",
        ),
        (
            steps({"id": "one", "action": {"type": "checkpoint"}}, {"id": "lost", "action": {"type": "checkpoint"}}),
            "step 'lost' is unreachable from entry 'one'",
        ),
        (
            steps(
                {"id": "one", "action": {"type": "checkpoint"}, "next": "two"},
                {"id": "two", "action": {"type": "checkpoint"}, "next": "one"},
            ),
            "one -> two -> one form a loop with no terminal step",
        ),
        (
            steps({"id": "one", "action": {"type": "checkpoint", "options": ["a"]}}),
            "only ask_user steps offer options",
        ),
        (
            steps({"id": "one", "action": {"type": "launch"}}),
            "steps[0](one).action.type: expected 'invoke_skill', 'call_tool', 'handoff', 'ask_user' or 'checkpoint'",
        ),
        (steps(), "deterministic mode needs at least one step"),
    ],
)
def test_graph_errors_name_the_step(tmp_path: Path, skill: dict[str, Any], expected: str) -> None:
    problem = one_problem(write_package(tmp_path, skill))

    assert str(tmp_path / "comet" / "skill.yaml") in problem
    assert expected in problem


def test_adaptive_packages_declare_no_entry_or_steps(tmp_path: Path) -> None:
    adaptive = minimal_skill(orchestration={"mode": "adaptive", "entry": "one", "steps": []})

    problems = problems_of(write_package(tmp_path, adaptive))

    assert len(problems) == 2
    assert "orchestration.entry: not allowed in adaptive mode" in problems[0]
    assert "orchestration.steps: not allowed in adaptive mode" in problems[1]


def test_an_adaptive_package_loads(tmp_path: Path) -> None:
    package = load_package(write_package(tmp_path, minimal_skill(orchestration={"mode": "adaptive"})))

    assert package.mode == "adaptive" and package.steps == ()


def test_every_problem_of_every_file_is_reported_at_once(tmp_path: Path) -> None:
    skill = minimal_skill(kind="Workflow", metadata={"name": "demo", "version": "1", "owner": "me"})
    root = write_package(
        tmp_path,
        skill,
        guardrails={"maxIterations": 0},
        checks={"runtime": [{"id": "c", "scope": "always", "type": "state_equals"}]},
        skill_md="no front matter here",
    )

    problems = problems_of(root)

    assert len(problems) == 4, problems
    text = "\n".join(problems)
    assert "skill.yaml: kind" in text and "skill.yaml: metadata.owner: unknown field" in text
    assert "guardrails.yaml: maxIterations: expected" in text and "checks.yaml: runtime[0](c).scope" in text


def test_check_cross_references(tmp_path: Path) -> None:
    skill = minimal_skill()
    skill["orchestration"]["steps"][0]["completionEvals"] = ["ghost"]
    checks = {
        "runtime": [
            {"id": "a", "scope": "step", "type": "artifact_exists"},
            {"id": "b", "scope": "completion", "type": "state_equals"},
            {"id": "c", "scope": "completion", "type": "state_equals", "field": "status", "step": "one"},
            {"id": "c", "scope": "step", "type": "state_equals", "field": "status", "step": "nowhere"},
        ]
    }

    problems = problems_of(write_package(tmp_path, skill, checks=checks))

    text = "\n".join(problems)
    assert "check id 'c' is used twice" in text
    assert "runtime[0](a).artifact: required for artifact_exists" in text
    assert "runtime[1](b).field: required for state_equals" in text
    assert "runtime[2](c).step: only step-scope checks name a step" in text
    assert "runtime[3](c).step: 'nowhere' is not a step id" in text
    assert "steps[0](one).completionEvals: 'ghost' is not a check id of checks.yaml" in text
    assert len(problems) == 6


def test_missing_files_and_bad_yaml(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    problems = problems_of(tmp_path / "empty")
    assert any("SKILL.md: missing" in p for p in problems)
    assert any("skill.yaml: missing" in p for p in problems)

    root = write_package(tmp_path / "bad", "apiVersion: [unclosed\n")
    problem = one_problem(root)
    assert "skill.yaml: line" in problem and "invalid YAML" in problem

    root = write_package(tmp_path / "list", "- a\n- b\n")
    assert "expected a mapping at the top level, got list" in one_problem(root)

    with pytest.raises(SkillPackageError, match="no such directory"):
        load_package(tmp_path / "absent")


def test_script_tools_must_exist_inside_the_package(tmp_path: Path) -> None:
    tools = [
        {"name": "a", "script": "../outside.sh"},
        {"name": "b", "script": "/etc/passwd"},
        {"name": "c", "script": "scripts/missing.sh"},
        {"name": "d", "script": "scripts/ok.sh"},
    ]
    root = write_package(tmp_path, minimal_skill(tools=tools), files={"scripts/ok.sh": "echo ok\n"})

    problems = problems_of(root)

    assert len(problems) == 3
    assert "tools[0](a).script: '../outside.sh' leaves the package" in problems[0]
    assert "tools[1](b).script: '/etc/passwd' leaves the package" in problems[1]
    assert "tools[2](c).script: 'scripts/missing.sh' does not exist" in problems[2]


def test_skill_md_front_matter_name_must_match(tmp_path: Path) -> None:
    root = write_package(tmp_path, skill_md="---\nname: other\n---\nbody\n")

    assert "front matter name 'other' differs from comet/skill.yaml metadata.name 'demo'" in one_problem(root)


def test_package_errors_are_definition_errors() -> None:
    assert issubclass(SkillPackageError, DefinitionError)


def _texts(root: Path) -> Any:
    """A reader over *root* that is no file system for the loader: package-relative path -> text."""
    files = {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*") if p.is_file()}
    return files.get


def test_a_package_loads_from_its_texts_as_from_its_folder() -> None:
    from comet_engine.skills import load_package_texts

    on_disk = load_package(EXAMPLE)
    from_texts = load_package_texts(_texts(EXAMPLE), label="pkg")
    assert from_texts.definition == on_disk.definition
    assert (from_texts.guardrails, from_texts.checks, from_texts.scripts) == (
        on_disk.guardrails,
        on_disk.checks,
        on_disk.scripts,
    )
    assert from_texts.eval_manifest == on_disk.eval_manifest
    assert from_texts.root == Path("pkg")


def test_a_package_from_texts_reports_the_folders_problems_under_its_label(tmp_path: Path) -> None:
    from comet_engine.skills import load_package_texts

    skill = minimal_skill(skills=[])  # step one invokes an undeclared skill
    root = write_package(tmp_path / "pkg", skill, checks={"runtime": []}, evals={"runtime": []})
    with pytest.raises(SkillPackageError) as on_disk:
        load_package(root)
    with pytest.raises(SkillPackageError) as from_texts:
        load_package_texts(_texts(root), label=str(root))
    assert from_texts.value.problems == on_disk.value.problems
    assert len(on_disk.value.problems) == 2  # the undeclared ref, and checks.yaml beside evals.yaml
    with pytest.raises(SkillPackageError, match=r"gen/comet/skill.yaml: missing"):
        load_package_texts({"SKILL.md": "x"}.get, label="gen")

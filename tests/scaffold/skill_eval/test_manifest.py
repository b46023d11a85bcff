"""eval.yaml (comet.eval/v1alpha1 SkillEvalManifest): every rule, every message, all problems at once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, given, settings

from scaffold.errors import ManifestError, Problem
from scaffold.python.validation.core import json_path_lookup, json_path_steps
from scaffold.skill_eval.manifest import (
    API_VERSION,
    KIND,
    CommandExpect,
    InlineTask,
    JsonExpect,
    SourceTask,
    find_manifest,
    synthesize_manifest,
)
from scaffold.skill_eval.manifest_check import load_manifest, manifest_schema, parse_manifest
from tests.support.factories import REPO, TaskFactory

BUILTIN = ("generic-skill-smoke", "fix-median")


def package(tmp_path: Path, data: Any, *, name: str = "my-skill") -> Path:
    """A skill package: SKILL.md and comet/eval.yaml holding *data*; returns the manifest path."""
    root = tmp_path / name
    (root / "comet").mkdir(parents=True, exist_ok=True)
    (root / "SKILL.md").write_text(f"---\nname: {name}\ndescription: d\n---\nUse it.\n")
    path = root / "comet" / "eval.yaml"
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))
    return path


def base(**evaluation: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": "demo"}, "skill": {}}
    if evaluation:
        data["evaluation"] = evaluation
    return data


def inline(name: str = "t1", **fields: Any) -> dict[str, Any]:
    task: dict[str, Any] = {"name": name, "prompt": "Do it.", "expect": {"files": ["out.txt"]}}
    task.update(fields)
    return task


def problems(path: Path, builtin: tuple[str, ...] = BUILTIN) -> list[tuple[str, str]]:
    with pytest.raises(ManifestError) as caught:
        load_manifest(path, builtin_tasks=builtin)
    for problem in caught.value.problems:
        assert problem.file == path.absolute()
    return [(p.key, p.message) for p in caught.value.problems]


def keys(path: Path) -> list[str]:
    return [key for key, _ in problems(path)]


# --- valid manifests --------------------------------------------------------------------------------------


def test_a_full_manifest_loads_into_its_typed_form(tmp_path: Path) -> None:
    path = package(tmp_path, "")
    root = path.parent.parent
    (root / "ws" / "data").mkdir(parents=True)
    (root / "ws" / "data" / "in.json").write_text("{}")
    TaskFactory(root / "evals").task("own-task")
    (root / "report.json").write_text('{"report_outputs": {"html": true}}')
    data = base(
        tasks=[
            {
                "name": "inline-one",
                "prompt": "Write out.txt.",
                "workspace": "ws",
                "expect": {
                    "files": ["out.txt"],
                    "contains": {"out.txt": ["hello", "world"]},
                    "json": [{"file": "data/in.json", "path": "$.a[0]['b c']", "equals": {"x": [1, True]}}],
                    "commands": [{"run": "test -f out.txt"}, {"run": "true", "timeout": 7}],
                },
                "rubric": ["Polite."],
            },
            {"source": "evals/tasks/own-task"},
        ],
        recommendedTasks=["generic-skill-smoke"],
        baseline_treatments=["CONTROL"],
        qualityGates={
            "minWeightedScore": 0.5,
            "min_pass_at_1": 1,
            "maxInstabilityGap": 0,
            "gates": ["DYNAMIC_SKILL not worse than CONTROL"],
        },
        requiredSkills=["my-skill"],
        expected_artifacts=["out.txt"],
    )
    data["skill"] = {"name": "renamed", "profile": "generic"}
    data["interaction"] = {"mode": "auto_user", "maxTurns": 3, "decision_patterns": ["[Cc]hoose"]}
    data["execution"] = {"agent": "claude-code", "model": "m", "baseUrl": "http://127.0.0.1:9/v1"}
    data["judge"] = {"agent": "codex", "base_url": "https://judge.example.com"}
    data["reporting"] = {"suite": "local", "config": "../report.json"}
    path.write_text(yaml.safe_dump(data))

    manifest = load_manifest(path, builtin_tasks=BUILTIN)

    assert (manifest.file, manifest.name, manifest.source) == (path, "demo", "explicit")
    assert (manifest.skill.name, manifest.skill.root, manifest.skill.profile) == ("renamed", root, "generic")
    first, second = manifest.tasks
    assert isinstance(first, InlineTask) and isinstance(second, SourceTask)
    assert first.workspace == root / "ws" and first.rubric == ("Polite.",)
    assert first.expect.files == ("out.txt",) and dict(first.expect.contains) == {"out.txt": ("hello", "world")}
    assert first.expect.json == (JsonExpect("data/in.json", "$.a[0]['b c']", {"x": [1, True]}),)
    assert first.expect.commands == (CommandExpect("test -f out.txt", 120), CommandExpect("true", 7))
    assert (second.name, second.folder) == ("own-task", root / "evals" / "tasks" / "own-task")
    assert manifest.recommended_tasks == ("generic-skill-smoke",)
    assert manifest.baseline_treatments == ("CONTROL",)
    gates = manifest.quality_gates
    assert (gates.min_weighted_score, gates.min_pass_at_1, gates.max_instability_gap) == (0.5, 1.0, 0.0)
    assert gates.gates == ("DYNAMIC_SKILL not worse than CONTROL",)
    assert manifest.required_skills == ("my-skill",) and manifest.expected_artifacts == ("out.txt",)
    assert dict(manifest.interaction or {}) == {
        "mode": "auto_user",
        "max_turns": 3,
        "decision_patterns": ("[Cc]hoose",),
    }
    assert (manifest.execution.agent, manifest.execution.model, manifest.execution.base_url) == (
        "claude-code",
        "m",
        "http://127.0.0.1:9/v1",
    )
    assert manifest.judge.base_url == "https://judge.example.com"
    assert (manifest.reporting.suite, manifest.reporting.config) == ("local", root / "report.json")


def test_defaults_name_from_metadata_then_skill_then_folder(tmp_path: Path) -> None:
    path = package(tmp_path, {"apiVersion": API_VERSION, "kind": KIND, "metadata": {}, "skill": {}})
    manifest = load_manifest(path, builtin_tasks=())
    assert (manifest.name, manifest.skill.name, manifest.tasks, manifest.baseline_treatments) == (
        "my-skill",
        "my-skill",
        (),
        ("CONTROL",),
    )
    assert manifest.quality_gates.empty and manifest.interaction is None


def test_the_release_notes_example_is_a_valid_manifest() -> None:
    manifest = load_manifest(REPO / "examples" / "release-notes" / "comet" / "eval.yaml", builtin_tasks=BUILTIN)
    assert manifest.skill.name == "release-notes" and manifest.task_names == ("writes-release-notes",)


def test_find_manifest_prefers_yaml_then_yml(tmp_path: Path) -> None:
    root = tmp_path / "s"
    (root / "comet").mkdir(parents=True)
    assert find_manifest(root) is None
    (root / "comet" / "eval.yml").write_text("")
    assert find_manifest(root) == root / "comet" / "eval.yml"
    (root / "comet" / "eval.yaml").write_text("")
    assert find_manifest(root) == root / "comet" / "eval.yaml"


def test_an_eval_yaml_that_is_a_folder_is_an_error_naming_it(tmp_path: Path) -> None:
    # Found as nothing, it would let the skill run as if it declared no task.
    root = tmp_path / "s"
    (root / "comet" / "eval.yaml").mkdir(parents=True)
    with pytest.raises(ManifestError) as caught:
        find_manifest(root)
    assert str(caught.value) == (
        f"{root / 'comet' / 'eval.yaml'}: is a folder; the manifest must be a YAML file (rename or remove it)"
    )
    assert problems(root / "comet" / "eval.yaml") == [
        ("", "is a folder; the manifest must be a YAML file (rename or remove it)")
    ]


@pytest.mark.parametrize("name", ["../../x", "a/b", ".hidden", "has space", "x" * 101])
def test_a_skill_name_that_cannot_be_a_folder_name_is_refused(tmp_path: Path, name: str) -> None:
    # The name becomes the skill's folder in every workspace (.claude/skills/<name>/).
    path = package(tmp_path, {**base(tasks=[inline()]), "skill": {"name": name}})
    rule = "must start with a letter or digit and use only letters, digits, '.', '_' and '-' (at most 100)"
    assert problems(path) == [("skill.name", f"{rule}: it names the skill's folder in the workspace")]


def test_a_skill_named_after_its_folder_needs_a_plain_folder_name(tmp_path: Path) -> None:
    path = package(tmp_path, base(tasks=[inline()]), name="my skill")
    ((key, message),) = problems(path)
    assert (key, message) == (
        "skill",
        "the skill's folder name 'my skill' must start with a letter or digit and use only letters, digits, "
        "'.', '_' and '-' (at most 100): set skill.name",
    )
    path.write_text(yaml.safe_dump({**base(tasks=[inline()]), "skill": {"name": "my-skill"}}))
    assert load_manifest(path, builtin_tasks=BUILTIN).skill.name == "my-skill"


def test_synthesized_manifest_of_a_skill_folder(tmp_path: Path) -> None:
    path = package(tmp_path, "")
    manifest = synthesize_manifest(path.parent.parent)
    assert (manifest.file, manifest.source, manifest.name, manifest.tasks) == (None, "synthesized", "my-skill", ())
    with pytest.raises(ManifestError, match=r"must contain SKILL\.md"):
        synthesize_manifest(tmp_path)


def test_the_schema_file_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(manifest_schema())
    assert manifest_schema()["$schema"] == "https://json-schema.org/draft/2020-12/schema"


# --- what the file is -------------------------------------------------------------------------------------


def test_not_yaml_names_line_and_column(tmp_path: Path) -> None:
    path = package(tmp_path, "apiVersion: [unclosed\n")
    ((key, message),) = problems(path)
    assert key.startswith("line ") and "not valid YAML" in message


def test_missing_file_and_not_a_mapping(tmp_path: Path) -> None:
    assert problems(tmp_path / "nope.yaml") == [("", "no such file: pass a comet/eval.yaml or a skill folder")]
    path = package(tmp_path, "- a\n- b\n")
    assert problems(path) == [("", "the manifest must be a mapping (apiVersion, kind, metadata, skill, ...)")]


def test_the_old_engine_format_reports_every_problem_at_once(tmp_path: Path) -> None:
    path = package(tmp_path, {"apiVersion": "comet/v1alpha1", "kind": "EvalManifest", "skill": "x", "qualityGates": {}})
    assert problems(path) == [
        ("apiVersion", "must be comet.eval/v1alpha1"),
        ("kind", "must be SkillEvalManifest"),
        ("metadata", "required field is missing"),
        (
            "qualityGates",
            "unknown field; allowed: $schema, apiVersion, evaluation, execution, interaction, judge, kind, "
            "metadata, reporting, skill",
        ),
        ("skill", "must be a mapping"),
    ]


def test_problem_text_names_file_path_and_value(tmp_path: Path) -> None:
    path = package(tmp_path, {**base(), "kind": "Other"})
    with pytest.raises(ManifestError) as caught:
        load_manifest(path, builtin_tasks=())
    assert str(caught.value) == f"{path}: kind: must be SkillEvalManifest (got 'Other')"
    assert caught.value.problems == (Problem(path, "must be SkillEvalManifest", "kind", "Other"),)


# --- schema rules, with paths -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("task", "key", "message"),
    [
        (
            inline(bogus=1),
            "evaluation.tasks[0].bogus",
            "unknown field; allowed: expect, name, prompt, rubric, source, workspace",
        ),
        (inline(name="-bad"), "evaluation.tasks[0].name", "must be a valid task name"),
        (inline(name="x" * 101), "evaluation.tasks[0].name", "must be a valid task name"),
        (inline(prompt=""), "evaluation.tasks[0].prompt", "must not be empty"),
        (inline(rubric="be nice"), "evaluation.tasks[0].rubric", "must be a list"),
        (inline(rubric=[""]), "evaluation.tasks[0].rubric[0]", "must not be empty"),
        (inline(expect={"files": "out.txt"}), "evaluation.tasks[0].expect.files", "must be a list"),
        (
            inline(expect={"files": ["a"], "other": 1}),
            "evaluation.tasks[0].expect.other",
            "unknown field; allowed: commands, contains, files, json",
        ),
        (inline(expect={"contains": {"a": "x"}}), "evaluation.tasks[0].expect.contains.a", "must be a list"),
        (
            inline(expect={"contains": {"a": []}}),
            "evaluation.tasks[0].expect.contains.a",
            "must list at least one string",
        ),
        (
            inline(expect={"json": [{"file": "a", "path": "$"}]}),
            "evaluation.tasks[0].expect.json[0].equals",
            "required field is missing",
        ),
        (
            inline(
                expect={
                    "files": ["a"],
                    "json": [{"file": "a", "path": "$", "equals": 1}, {"file": "a", "path": "a.b", "equals": 1}],
                }
            ),
            "evaluation.tasks[0].expect.json[1].path",
            "must start with '$'",
        ),
        (
            inline(expect={"commands": [{"timeout": 5}]}),
            "evaluation.tasks[0].expect.commands[0].run",
            "required field is missing",
        ),
        (
            inline(expect={"commands": [{"run": "   "}]}),
            "evaluation.tasks[0].expect.commands[0].run",
            "must not be empty",
        ),
        (
            inline(expect={"commands": [{"run": "x", "timeout": 0}]}),
            "evaluation.tasks[0].expect.commands[0].timeout",
            "must be 1..3600",
        ),
        (
            inline(expect={"commands": [{"run": "x", "timeout": 3601}]}),
            "evaluation.tasks[0].expect.commands[0].timeout",
            "must be 1..3600",
        ),
        (
            inline(expect={"commands": [{"run": "x", "timeout": True}]}),
            "evaluation.tasks[0].expect.commands[0].timeout",
            "must be an integer",
        ),
        (
            inline(expect={"commands": [{"run": "x", "timeout": 1.5}]}),
            "evaluation.tasks[0].expect.commands[0].timeout",
            "must be an integer",
        ),
    ],
)
def test_task_shapes(tmp_path: Path, task: dict[str, Any], key: str, message: str) -> None:
    found = problems(package(tmp_path, base(tasks=[task])))
    assert any(k == key and m.startswith(message) for k, m in found), found


@pytest.mark.parametrize(
    ("section", "value", "key", "message"),
    [
        ("execution", {"agent": "Claude"}, "execution.agent", "must be an agent id"),
        ("execution", {"model": ""}, "execution.model", "must not be empty"),
        ("execution", {"baseUrl": "ftp://x"}, "execution.baseUrl", "must be a valid absolute http(s) URL"),
        ("judge", {"base_url": "not a url"}, "judge.baseUrl", "must be a valid absolute http(s) URL"),
        ("judge", {"temperature": 0}, "judge.temperature", "unknown field; allowed: agent, baseUrl, base_url, model"),
        ("interaction", {"mode": "chatty"}, "interaction.mode", "must be one of: none, auto_user"),
        ("interaction", {"maxTurns": 0}, "interaction.maxTurns", "must be at least 1"),
        (
            "interaction",
            {"decisionPatterns": ["(("]},
            "interaction.decisionPatterns[0]",
            "is not a valid regular expression",
        ),
        ("reporting", {"suite": "datadog"}, "reporting.suite", "must be one of: local, langsmith, langfuse"),
        ("reporting", {"config": "../../elsewhere.json"}, "reporting.config", "must stay within the skill package"),
        ("reporting", {"config": "missing.json"}, "reporting.config", "does not exist"),
        ("metadata", {"draftHash": "abc"}, "metadata.draftHash", "must be 64 lowercase hex characters"),
        ("skill", {"source": "elsewhere"}, "skill.source", "must be the skill folder"),
        ("skill", {"colour": "red"}, "skill.colour", "unknown field; allowed: name, profile, source"),
    ],
)
def test_section_rules(tmp_path: Path, section: str, value: dict[str, Any], key: str, message: str) -> None:
    data = base()
    data[section] = value
    found = problems(package(tmp_path, data))
    assert any(k == key and m.startswith(message) for k, m in found), found


def test_a_base_url_with_credentials_is_never_echoed(tmp_path: Path) -> None:
    data = base()
    data["execution"] = {"baseUrl": "secret-token-123"}
    with pytest.raises(ManifestError) as caught:
        load_manifest(package(tmp_path, data), builtin_tasks=())
    assert "secret-token-123" not in str(caught.value)


def test_draft_hash_accepts_hex_and_the_placeholder(tmp_path: Path) -> None:
    for value in ("a" * 64, "<current-bundle-hash>"):
        data = base()
        data["metadata"]["draftHash"] = value
        load_manifest(package(tmp_path, data), builtin_tasks=())


@pytest.mark.parametrize(
    ("gates", "key", "message"),
    [
        ({"minPassAt1": 1.5}, "evaluation.qualityGates.minPassAt1", "must be a number between 0 and 1"),
        (
            {"min_weighted_score": -0.1},
            "evaluation.qualityGates.min_weighted_score",
            "must be a number between 0 and 1",
        ),
        ({"maxInstabilityGap": True}, "evaluation.qualityGates.maxInstabilityGap", "must be a number"),
        (
            {"minPassRate": 0.8},
            "evaluation.qualityGates.minPassRate",
            "unknown field; allowed: gates, maxInstabilityGap",
        ),
        ({"gates": ["SKILL is great"]}, "evaluation.qualityGates.gates[0]", "'SKILL is great' does not parse"),
    ],
)
def test_quality_gate_rules(tmp_path: Path, gates: dict[str, Any], key: str, message: str) -> None:
    found = problems(package(tmp_path, base(qualityGates=gates)))
    assert any(k == key and m.startswith(message) for k, m in found), found


# --- camelCase and snake_case -------------------------------------------------------------------------------


def test_both_spellings_of_one_key_are_an_error_wherever_they_are(tmp_path: Path) -> None:
    data = base(
        recommendedTasks=["fix-median"],
        recommended_tasks=["fix-median"],
        qualityGates={"minPassAt1": 1, "min_pass_at_1": 1},
    )
    data["execution"] = {"baseUrl": "http://a.b", "base_url": "http://a.b"}
    data["interaction"] = {"maxTurns": 2, "max_turns": 2}
    data["metadata"].update(generationHash="x", generation_hash="x")
    assert problems(package(tmp_path, data)) == [
        ("evaluation.qualityGates.minPassAt1", "minPassAt1 and min_pass_at_1 cannot both be set; keep one"),
        ("evaluation.recommendedTasks", "recommendedTasks and recommended_tasks cannot both be set; keep one"),
        ("execution.baseUrl", "baseUrl and base_url cannot both be set; keep one"),
        ("interaction.maxTurns", "maxTurns and max_turns cannot both be set; keep one"),
        ("metadata.generationHash", "generationHash and generation_hash cannot both be set; keep one"),
    ]


def test_snake_case_alone_is_read(tmp_path: Path) -> None:
    data = base(
        recommended_tasks=["fix-median"], baseline_treatments=["CONTROL", "OTHER"], quality_gates={"min_pass_at_1": 0.5}
    )
    manifest = load_manifest(package(tmp_path, data), builtin_tasks=BUILTIN)
    assert manifest.recommended_tasks == ("fix-median",)
    assert manifest.baseline_treatments == ("CONTROL", "OTHER")
    assert manifest.quality_gates.min_pass_at_1 == 0.5


# --- inline tasks -------------------------------------------------------------------------------------------


def test_inline_task_needs_name_prompt_and_a_deterministic_expect(tmp_path: Path) -> None:
    path = package(tmp_path, base(tasks=[{"rubric": ["nice"]}, {"name": "b", "prompt": "p", "expect": {}}]))
    expect_message = (
        "must contain at least one deterministic expect: files, contains, json or commands "
        "(a rubric alone is not enough)"
    )
    assert problems(path) == [
        ("evaluation.tasks[0].expect", expect_message),
        ("evaluation.tasks[0].name", "required field is missing: every inline task needs a name"),
        ("evaluation.tasks[0].prompt", "required field is missing: the instruction the agent is given"),
        ("evaluation.tasks[1].expect", expect_message),
    ]


@pytest.mark.parametrize("bad", ["/etc/passwd", "../out.txt", "a/../../b", "~/x", "C:\\x", ".", "a\\..\\b"])
def test_expect_paths_stay_inside_the_workspace(tmp_path: Path, bad: str) -> None:
    task = inline(
        expect={
            "files": [bad],
            "contains": {bad: ["x"]},
            "json": [{"file": bad, "path": "$", "equals": 1}],
        }
    )
    found = problems(package(tmp_path, base(tasks=[task])))
    assert [k for k, _ in found] == [
        "evaluation.tasks[0].expect.contains." + bad,
        "evaluation.tasks[0].expect.files[0]",
        "evaluation.tasks[0].expect.json[0].file",
    ]
    assert all(m.startswith("must") and "task workspace" in m for _, m in found)


def test_json_paths_outside_the_dialect_say_what_is_allowed(tmp_path: Path) -> None:
    task = inline(expect={"json": [{"file": "a.json", "path": "$.items[*].name", "equals": 1}]})
    ((key, message),) = problems(package(tmp_path, base(tasks=[task])))
    assert key == "evaluation.tasks[0].expect.json[0].path"
    assert "allowed steps: .name, ['any key'], [index]" in message


def test_workspace_must_be_a_folder_inside_the_package(tmp_path: Path) -> None:
    path = package(tmp_path, "")
    root = path.parent.parent
    (root / "file.txt").write_text("x")
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "link").symlink_to(outside)
    (root / "ws").mkdir()
    (root / "ws" / "escape").symlink_to(outside / "x")
    tasks = [
        inline("a", workspace="/abs"),
        inline("b", workspace="../x"),
        inline("c", workspace="missing"),
        inline("d", workspace="file.txt"),
        inline("e", workspace="link"),
        inline("f", workspace="ws"),
    ]
    path.write_text(yaml.safe_dump(base(tasks=tasks)))
    found = problems(path)
    assert [k for k, _ in found] == [f"evaluation.tasks[{i}].workspace" for i in range(6)]
    messages = [m for _, m in found]
    assert messages[0].startswith("must stay within the skill package: a path relative to")
    assert messages[1] == "must stay within the skill package: a relative path without '..'"
    assert messages[2].startswith("does not exist: no workspace folder at")
    assert messages[3] == "must be a folder (its files are copied into the workspace)"
    assert messages[4].startswith("contains a symlink outside the skill package")
    assert messages[5].startswith("contains a symlink outside the skill package")


# --- source tasks --------------------------------------------------------------------------------------------


def test_source_tasks_are_task_folders_inside_the_package(tmp_path: Path) -> None:
    path = package(tmp_path, "")
    root = path.parent.parent
    evals = TaskFactory(root / "evals")
    evals.task("good")
    evals.task("second")
    evals.task("broken", metadata={"difficulty": "extreme"})
    (root / "half").mkdir()
    (root / "half" / "task.toml").write_text("")
    tasks = [
        {"source": "evals/tasks/good", "prompt": "extra"},
        {"source": "../elsewhere"},
        {"source": "nowhere"},
        {"source": "half"},
        {"source": "evals/tasks/broken"},
        {"source": "evals/tasks/second", "name": "other-name"},
    ]
    path.write_text(yaml.safe_dump(base(tasks=tasks)))
    found = problems(path)
    assert found[0] == (
        "evaluation.tasks[0]",
        "a source task has only 'source' and an optional 'name'; remove prompt "
        "(or drop 'source' to write an inline task)",
    )
    assert found[1] == (
        "evaluation.tasks[1].source",
        "must stay within the skill package: a relative path without '..'",
    )
    assert found[2][0] == "evaluation.tasks[2].source" and found[2][1].startswith("does not exist")
    assert found[3] == (
        "evaluation.tasks[3].source",
        "must point to a task folder holding task.toml and instruction.md",
    )
    assert found[4][0] == "evaluation.tasks[4].source" and "is not a valid task" in found[4][1]
    assert "[metadata] difficulty" in found[4][1]
    assert found[5][0] == "evaluation.tasks[5].name"
    assert found[5][1].startswith("must equal the task's own name 'second'")


# --- names ----------------------------------------------------------------------------------------------------


def test_name_collisions_between_inline_source_recommended_and_builtin(tmp_path: Path) -> None:
    path = package(tmp_path, "")
    TaskFactory(path.parent.parent / "evals").task("fix-median")
    tasks = [inline("a"), inline("a"), inline("generic-skill-smoke"), {"source": "evals/tasks/fix-median"}, inline("b")]
    path.write_text(yaml.safe_dump(base(tasks=tasks, recommendedTasks=["b", "nope", "fix-median", "fix-median"])))
    assert problems(path) == [
        ("evaluation.recommendedTasks[1]", "unknown built-in task; allowed: fix-median, generic-skill-smoke"),
        ("evaluation.recommendedTasks[3]", "duplicates evaluation.recommendedTasks[2]"),
        ("evaluation.tasks[1].name", "duplicates evaluation.tasks[0].name"),
        ("evaluation.tasks[2].name", "conflicts with the built-in task of that name; choose another name"),
        (
            "evaluation.tasks[3].name",
            "conflicts with evaluation.recommendedTasks[2]; a task is either written here or built in",
        ),
        ("evaluation.tasks[3].name", "conflicts with the built-in task of that name; choose another name"),
        (
            "evaluation.tasks[4].name",
            "conflicts with evaluation.recommendedTasks[0]; a task is either written here or built in",
        ),
    ]


def test_problems_of_every_section_come_together(tmp_path: Path) -> None:
    data = base(tasks=[inline(expect={})], recommendedTasks=["nope"], qualityGates={"minPassAt1": 2})
    data["execution"] = {"agent": "X"}
    data["reporting"] = {"suite": "x"}
    assert keys(package(tmp_path, data)) == [
        "evaluation.qualityGates.minPassAt1",
        "evaluation.recommendedTasks[0]",
        "evaluation.tasks[0].expect",
        "execution.agent",
        "reporting.suite",
    ]


# --- skill.source ---------------------------------------------------------------------------------------------


def test_skill_source_points_at_the_skill_from_the_manifest_folder(tmp_path: Path) -> None:
    skill = tmp_path / "skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: s\n---\n")
    (skill / "ws").mkdir()
    elsewhere = tmp_path / "cache" / "eval.yaml"
    elsewhere.parent.mkdir()
    data = base(tasks=[inline(workspace="ws")])
    data["skill"] = {"source": str(skill)}
    elsewhere.write_text(yaml.safe_dump(data))
    manifest = load_manifest(elsewhere, builtin_tasks=())
    assert manifest.skill.root == skill
    task = manifest.tasks[0]
    assert isinstance(task, InlineTask) and task.workspace == skill / "ws"
    data["skill"] = {"source": "../skill"}
    relative = parse_manifest(data, file=elsewhere, package_root=tmp_path, builtin_tasks=())
    assert relative.skill.root == skill


def test_parse_manifest_is_the_loader_without_the_file(tmp_path: Path) -> None:
    path = package(tmp_path, "")
    with pytest.raises(ManifestError) as caught:
        parse_manifest({"kind": KIND}, file=path, package_root=path.parent.parent, builtin_tasks=())
    assert [p.key for p in caught.value.problems] == ["apiVersion", "metadata", "skill"]
    assert all(p.file == path for p in caught.value.problems)


# --- properties -----------------------------------------------------------------------------------------------

_scalars = st.none() | st.booleans() | st.integers(-5, 5000) | st.floats(allow_nan=False) | st.text(max_size=8)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)
_keys = st.sampled_from(
    [
        "apiVersion",
        "kind",
        "metadata",
        "skill",
        "evaluation",
        "tasks",
        "expect",
        "files",
        "json",
        "commands",
        "run",
        "timeout",
        "qualityGates",
        "minPassAt1",
        "min_pass_at_1",
        "name",
        "prompt",
        "source",
        "workspace",
        "baseUrl",
        "interaction",
        "maxTurns",
        "execution",
        "judge",
        "reporting",
        "path",
        "equals",
        "contains",
        "bogus",
    ]
)
_docs = st.recursive(
    _scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=5), max_leaves=25
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=_docs)
def test_any_document_loads_or_raises_problems_never_a_traceback(tmp_path: Path, doc: Any) -> None:
    path = package(tmp_path, "")
    try:
        parse_manifest(doc, file=path, package_root=path.parent.parent, builtin_tasks=BUILTIN)
    except ManifestError as exc:
        assert exc.problems
        for problem in exc.problems:
            assert problem.file == path and problem.message
            str(problem)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=_docs.filter(lambda d: isinstance(d, dict)))
def test_problems_are_the_same_in_any_key_order(tmp_path: Path, doc: dict[str, Any]) -> None:
    path = package(tmp_path, "")

    def found(d: Any) -> list[Problem]:
        try:
            parse_manifest(d, file=path, package_root=path.parent.parent, builtin_tasks=BUILTIN)
        except ManifestError as exc:
            return sorted(exc.problems, key=str)
        return []

    reversed_doc = dict(reversed(list(doc.items())))
    assert found(doc) == found(reversed_doc)


@settings(max_examples=200, deadline=None)
@given(
    doc=_json,
    steps=st.lists(st.text(min_size=1, max_size=5).filter(lambda s: "'" not in s) | st.integers(-3, 3), max_size=4),
)
def test_json_path_dialect_round_trips(doc: Any, steps: list[str | int]) -> None:
    path = "$" + "".join(f"[{s}]" if isinstance(s, int) else f"['{s}']" for s in steps)
    assert json_path_steps(path) == steps
    value = doc
    try:
        for step in steps:
            if isinstance(step, int):
                if not isinstance(value, list) or not -len(value) <= step < len(value):
                    raise LookupError
            elif not isinstance(value, dict) or step not in value:
                raise LookupError
            value = value[step]
    except LookupError:
        with pytest.raises(LookupError):
            json_path_lookup(doc, path)
        return
    assert json_path_lookup(doc, path) == value


def test_json_path_dot_names_and_errors() -> None:
    doc = {"a": {"b-c": [10, {"d": None}]}}
    assert json_path_lookup(doc, "$") == doc
    assert json_path_lookup(doc, "$.a.b-c[-1].d") is None
    assert json_path_lookup(doc, '$["a"]') == doc["a"]
    with pytest.raises(LookupError, match=r"\$.a has no member 'x'"):
        json_path_lookup(doc, "$.a.x")
    with pytest.raises(LookupError, match=r"\$.a.b-c\[5\] does not exist \(\$.a.b-c is an array of 2\)"):
        json_path_lookup(doc, "$.a.b-c[5]")
    for bad in ("a", "$.", "$..a", "$[*]", "$.a[?(@.b)]", "$[1:2]"):
        with pytest.raises(ValueError):
            json_path_steps(bad)


def test_schema_file_ships_as_package_data() -> None:
    text = (REPO / "pyproject.toml").read_text()
    assert "skill_eval/eval.schema.json" in text
    assert json.loads((REPO / "scaffold" / "skill_eval" / "eval.schema.json").read_text())["$id"].endswith(
        "comet.eval/v1alpha1.schema.json"
    )


def test_the_documented_example_is_a_valid_manifest(tmp_path: Path) -> None:
    text = (REPO / "docs" / "eval-yaml.md").read_text()
    section = text[text.index("## An example") :]
    example = section[section.index("```yaml\n") + 8 : section.index("\n```", section.index("```yaml\n"))]
    path = package(tmp_path, example, name="release-notes")
    root = path.parent.parent
    (root / "evals" / "release-workspace").mkdir(parents=True)
    TaskFactory(root / "evals").task("hard-release")
    (root / "comet" / "report.json").write_text("{}")
    manifest = load_manifest(path, builtin_tasks=BUILTIN)
    assert manifest.task_names == ("writes-release-notes", "hard-release")
    inline_task = manifest.tasks[0]
    assert isinstance(inline_task, InlineTask)
    assert [kind for kind in ("files", "contains", "json", "commands") if getattr(inline_task.expect, kind)] == [
        "files",
        "contains",
        "json",
        "commands",
    ]
    assert manifest.quality_gates.gates == ("DYNAMIC_SKILL not worse than CONTROL",)

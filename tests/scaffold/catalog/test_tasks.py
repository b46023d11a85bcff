"""The task loader: one task folder (load_task), every tasks folder with its index (load_catalog)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scaffold.catalog.tasks import (
    INDEX_FILE,
    TASK_FILE,
    load_catalog,
    load_task,
    render_instruction,
)
from scaffold.errors import LoadError, Problem, TaskError
from tests.support.factories import TaskFactory

MINIMAL_TOML = '[metadata]\nname = "{name}"\n\n[validation]\ntest_scripts = ["check.py"]\n'


def problems_of(folder: Path, *, require_solution: bool = True) -> list[Problem]:
    with pytest.raises(TaskError) as info:
        load_task(folder, require_solution=require_solution)
    assert info.value.problems, "a TaskError always carries at least one problem"
    return list(info.value.problems)


def only(problems: list[Problem], key: str) -> Problem:
    found = [p for p in problems if p.key == key]
    assert len(found) == 1, f"expected one problem for {key!r}, got {[str(p) for p in problems]}"
    return found[0]


def broken_task(factory: TaskFactory, name: str, **sections: dict[str, Any]) -> Path:
    """A task whose task.toml is the factory's valid spec with *sections* merged in."""
    return factory.task(name, toml=factory.spec(name, **sections))


# --- a valid task ----------------------------------------------------------------------------------


def test_minimal_task_loads_with_every_default(factory: TaskFactory) -> None:
    folder = factory.task("minimal", toml=MINIMAL_TOML.format(name="minimal"))

    task = load_task(folder)

    assert task.name == "minimal"
    assert task.root == folder
    meta, env, validation = task.spec.metadata, task.spec.environment, task.spec.validation
    assert (meta.name, meta.description, meta.difficulty, meta.category) == ("minimal", "", "medium", "generic")
    assert meta.default_treatments == ("CONTROL",)
    assert meta.tags == ()
    assert validation.timeout == 120.0
    assert validation.test_scripts == ("check.py",)
    assert validation.target_artifacts == ()
    assert task.spec.interaction.mode == "none"
    assert task.spec.interaction.max_turns == 12
    assert env.dockerfile == "environment/Dockerfile"
    assert env.timeout_sec == 600.0
    assert env.cpus == 1.0
    assert env.memory_mb == 2048
    assert env.pids_limit == 1024
    assert task.spec.evaluation.profile is None
    assert task.spec.evaluation.require_skill_invocation is False


def test_task_paths_and_instruction(factory: TaskFactory) -> None:
    folder = factory.task("paths", instruction='Run {run_id} in {workspace}; keep {unknown} and {"a": 1}\n')

    task = load_task(folder)

    assert task.instruction_path == folder / "instruction.md"
    assert task.environment_dir == folder / "environment"
    assert task.validation_dir == folder / "validation"
    assert task.solution_dir == folder / "solution"
    assert task.data_dir == folder / "data"
    rendered = render_instruction(task.instruction_path.read_text(), {"run_id": "r-7", "workspace": "/ws"})
    assert rendered == 'Run r-7 in /ws; keep {unknown} and {"a": 1}\n'


def test_relative_folder_gives_absolute_root(factory: TaskFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    factory.task("rel")
    monkeypatch.chdir(factory.tasks_dir)

    task = load_task(Path("rel"))

    assert task.root.is_absolute()
    assert task.root == factory.tasks_dir / "rel"


def test_every_value_given_is_kept(factory: TaskFactory) -> None:
    folder = factory.task(
        "full",
        toml=factory.spec(
            "full",
            metadata={
                "difficulty": "hard",
                "category": "comet",
                "tags": ["a", "b"],
                "default_treatments": ["CONTROL", "SKILL_X"],
            },
            environment={"cpus": 2, "memory_mb": 512, "pids_limit": 64, "timeout_sec": 1.5, "description": "env"},
            validation={"target_artifacts": ["out/*.txt"], "timeout": 7},
            evaluation={
                "profile": "generic",
                "expected_artifacts": ["report.md"],
                "required_skills": ["s"],
                "require_skill_invocation": True,
                "rubric_criteria": ["clear"],
            },
            interaction={"mode": "auto_user", "max_turns": 3},
        ),
    )

    spec = load_task(folder).spec

    assert spec.metadata.difficulty == "hard"
    assert spec.metadata.tags == ("a", "b")
    assert spec.metadata.default_treatments == ("CONTROL", "SKILL_X")
    assert (spec.environment.cpus, spec.environment.memory_mb, spec.environment.pids_limit) == (2.0, 512, 64)
    assert spec.environment.timeout_sec == 1.5
    assert spec.validation.target_artifacts == ("out/*.txt",)
    assert spec.validation.timeout == 7.0
    assert spec.evaluation.profile == "generic"
    assert spec.evaluation.require_skill_invocation is True
    assert spec.interaction.mode == "auto_user"
    assert spec.interaction.max_turns == 3


def test_test_script_in_a_subfolder_and_target_artifacts_only_are_fine(factory: TaskFactory) -> None:
    sub = factory.task("sub", scripts={"check.py": "pass\n"}, validation={"test_scripts": ["nested/check.py"]})
    (sub / "validation" / "nested").mkdir()
    (sub / "validation" / "nested" / "check.py").write_text("pass\n")
    artifacts = factory.task("artifacts", validation={"test_scripts": [], "target_artifacts": ["result.md"]})

    assert load_task(sub).spec.validation.test_scripts == ("nested/check.py",)
    assert load_task(artifacts).spec.validation.target_artifacts == ("result.md",)


# --- task.toml contents --------------------------------------------------------------------------


def test_unknown_key_names_file_key_value_and_allowed_keys(factory: TaskFactory) -> None:
    folder = broken_task(factory, "typo", metadata={"difficuly": "hard"})

    problem = only(problems_of(folder), "[metadata] difficuly")

    assert problem.file == folder / TASK_FILE
    assert problem.value == "hard"
    assert "unknown key; allowed: category, default_treatments, description, difficulty, name, tags" in problem.message
    assert str(problem) == (
        f"{folder / TASK_FILE}: [metadata] difficuly: unknown key; allowed: category, default_treatments, "
        "description, difficulty, name, tags (got 'hard')"
    )


def test_unknown_section_lists_the_allowed_sections(factory: TaskFactory) -> None:
    folder = broken_task(factory, "section", validaton={"timeout": 5})

    problem = only(problems_of(folder), "[validaton]")

    assert problem.file == folder / TASK_FILE
    assert problem.message == "unknown section; allowed: environment, evaluation, interaction, metadata, validation"
    assert problem.value == {"timeout": 5}


@pytest.mark.parametrize(
    ("section", "key", "value", "expected"),
    [
        pytest.param("interaction", "max_turns", "5", "expected an integer", id="string-for-int"),
        pytest.param("interaction", "max_turns", True, "expected an integer", id="bool-for-int"),
        pytest.param("environment", "memory_mb", False, "expected an integer", id="bool-for-int-memory"),
        pytest.param("environment", "memory_mb", 1.5, "expected an integer", id="float-for-int"),
        pytest.param("environment", "timeout_sec", "30", "expected a number", id="string-for-seconds"),
        pytest.param("environment", "cpus", True, "expected a number", id="bool-for-number"),
        pytest.param("metadata", "description", 5, "expected a string", id="int-for-string"),
        pytest.param("metadata", "category", 3, "expected a string", id="int-for-category"),
        pytest.param("validation", "test_scripts", 3, "expected a list", id="int-for-list"),
        pytest.param("metadata", "default_treatments", "CONTROL", "expected a list", id="string-for-treatments"),
        pytest.param("validation", "test_scripts", ["check.py", 3], "expected a string", id="int-in-list"),
        pytest.param("evaluation", "require_skill_invocation", "yes", "expected true or false", id="string-for-bool"),
        pytest.param("interaction", "max_turns", 0, "expected a number greater than 0", id="zero-turns"),
        pytest.param("validation", "timeout", -1, "expected a number greater than 0", id="negative-timeout"),
        pytest.param("metadata", "category", "", "must not be empty", id="empty-category"),
    ],
)
def test_wrong_types_name_key_value_and_expectation(
    factory: TaskFactory, section: str, key: str, value: Any, expected: str
) -> None:
    folder = broken_task(factory, "types", **{section: {key: value}})

    problems = problems_of(folder)

    wanted = f"[{section}] {key}" if not isinstance(value, list) else f"[{section}] {key}[1]"
    problem = only(problems, wanted)
    assert problem.file == folder / TASK_FILE
    assert expected in problem.message
    # Plain words: never pydantic's own phrasing.
    assert "should" not in problem.message and "valid" not in problem.message
    assert problem.value == (value[1] if isinstance(value, list) else value)
    assert type(problem.value) is type(value[1] if isinstance(value, list) else value)
    assert str(problem).startswith(f"{folder / TASK_FILE}: {wanted}: ")


@pytest.mark.parametrize(
    ("section", "key", "value", "allowed"),
    [
        ("metadata", "difficulty", "extreme", "expected 'easy', 'medium' or 'hard'"),
        ("metadata", "difficulty", "Medium", "expected 'easy', 'medium' or 'hard'"),
        ("interaction", "mode", "chat", "expected 'none' or 'auto_user'"),
    ],
)
def test_bad_enum_values_list_what_is_allowed(
    factory: TaskFactory, section: str, key: str, value: str, allowed: str
) -> None:
    folder = broken_task(factory, "enum", **{section: {key: value}})

    problem = only(problems_of(folder), f"[{section}] {key}")

    assert problem.message == allowed
    assert problem.value == value
    assert str(problem) == f"{folder / TASK_FILE}: [{section}] {key}: {allowed} (got {value!r})"


def test_missing_metadata_name_is_reported(factory: TaskFactory) -> None:
    folder = factory.task("noname", toml='[metadata]\ndescription = "x"\n[validation]\ntest_scripts = ["check.py"]\n')

    problem = only(problems_of(folder), "[metadata] name")

    assert problem.message == "required key is missing"


def test_missing_metadata_section_is_reported(factory: TaskFactory) -> None:
    folder = factory.task("nometa", toml='[validation]\ntest_scripts = ["check.py"]\n')

    problem = only(problems_of(folder), "[metadata]")

    assert problem.message == "required key is missing"


def test_name_must_equal_the_folder_name(factory: TaskFactory) -> None:
    folder = factory.task("folder-name", toml=factory.spec("other-name"))

    problem = only(problems_of(folder), "[metadata] name")

    assert problem.file == folder / TASK_FILE
    assert problem.value == "other-name"
    assert problem.message == "must equal the folder name 'folder-name'"


def test_name_must_use_allowed_characters(factory: TaskFactory) -> None:
    folder = factory.task("bad name", toml=factory.spec("bad name"))

    problem = only(problems_of(folder), "[metadata] name")

    assert problem.value == "bad name"
    assert "only letters, digits, '.', '_' and '-'" in problem.message


def test_invalid_toml_names_the_file(factory: TaskFactory) -> None:
    folder = factory.task("badtoml", toml='[metadata\nname = "badtoml"\n')

    (problem,) = problems_of(folder)

    assert problem.file == folder / TASK_FILE
    assert problem.message.startswith("not valid TOML: ")
    assert "line 1" in problem.message
    assert str(problem).startswith(f"{folder / TASK_FILE}: not valid TOML")


def test_task_toml_that_is_not_utf8_is_a_problem_not_a_crash(factory: TaskFactory) -> None:
    folder = factory.task("binary")
    (folder / TASK_FILE).write_bytes(b'[metadata]\nname = "\xff\xfe"\n')

    (problem,) = problems_of(folder)

    assert problem.file == folder / TASK_FILE
    assert problem.message.startswith("not valid TOML: ")
    assert "utf-8" in problem.message


# --- the task folder ------------------------------------------------------------------------------


def test_missing_task_toml(factory: TaskFactory) -> None:
    folder = factory.tasks_dir / "empty"
    folder.mkdir()

    problem, *others = problems_of(folder)

    assert problem.file == folder / TASK_FILE
    assert problem.message == "missing: every task folder needs a task.toml"
    # The folder's other missing files are reported with it, not after task.toml is fixed.
    assert [p.file for p in others] == [
        folder / "instruction.md", folder / "solution" / "solve.sh", folder / "environment",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("remove", "message"),
    [
        ("instruction.md", "missing: the agent's instruction goes here"),
        ("solution/solve.sh", "missing: the reference solution the oracle agent runs"),
    ],
)
def test_missing_required_file(factory: TaskFactory, remove: str, message: str) -> None:
    folder = factory.task("incomplete")
    (folder / remove).unlink()

    (problem,) = problems_of(folder)

    assert problem.file == folder / remove
    assert problem.message == message


def test_solution_is_optional_unless_required(factory: TaskFactory) -> None:
    # The original Comet eval's tasks ship no solve.sh; only the project's own (built-in) tasks must.
    folder = factory.task("no-solution")
    (folder / "solution" / "solve.sh").unlink()

    task = load_task(folder)
    catalog = load_catalog([factory.tasks_dir])
    strict = load_catalog([factory.tasks_dir], require_solution=[factory.tasks_dir])

    assert not task.has_solution
    assert list(catalog.tasks) == ["no-solution"]
    (problem,) = strict.broken["no-solution"]
    assert problem.file == folder / "solution" / "solve.sh"
    assert problem.message == "missing: the reference solution the oracle agent runs"


def test_missing_environment_folder(factory: TaskFactory) -> None:
    folder = factory.task("noenv")
    (folder / "environment" / "Dockerfile").unlink()
    (folder / "environment").rmdir()

    problems = problems_of(folder)

    env = [p for p in problems if p.file == folder / "environment"]
    assert [p.message for p in env] == ["missing: the folder of the workspace's starting files"]
    dockerfile = only(problems, "[environment] dockerfile")
    assert dockerfile.message == f"no such file: {folder / 'environment' / 'Dockerfile'}"


def test_test_script_that_does_not_exist(factory: TaskFactory) -> None:
    folder = factory.task("noscript", validation={"test_scripts": ["check.py", "missing.py"]})

    problem = only(problems_of(folder), "[validation] test_scripts[1]")

    assert problem.file == folder / TASK_FILE
    assert problem.value == "missing.py"
    assert problem.message == f"no such file: {folder / 'validation' / 'missing.py'}"


def test_test_script_name_too_long_for_the_file_system_is_a_problem(factory: TaskFactory) -> None:
    long_name = "a" * 300 + ".py"
    folder = factory.task("longname", validation={"test_scripts": [long_name]})

    problem = only(problems_of(folder), "[validation] test_scripts[0]")

    assert problem.value == long_name
    assert problem.message.startswith("not a usable path")


INSIDE_TASK = "must not contain '..': paths stay inside the task folder"
INSIDE_WORKSPACE = "must not contain '..': artifacts stay inside the workspace"


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("[environment] dockerfile", "../Dockerfile", INSIDE_TASK),
        ("[environment] dockerfile", "environment/../../x/Dockerfile", INSIDE_TASK),
        ("[validation] test_scripts[0]", "../../check.py", INSIDE_TASK),
        ("[validation] target_artifacts[0]", "out/../../etc/*", INSIDE_WORKSPACE),
        ("[evaluation] expected_artifacts[0]", "../report.md", INSIDE_WORKSPACE),
    ],
)
def test_paths_with_dotdot(factory: TaskFactory, key: str, value: str, message: str) -> None:
    section, field = key[1:].split("] ")
    name = field.removesuffix("[0]")
    folder = broken_task(factory, "dotdot", **{section: {name: [value] if name != field else value}})

    problem = only(problems_of(folder), key)

    assert problem.file == folder / TASK_FILE
    assert problem.message == message
    assert problem.value == value


@pytest.mark.parametrize("path", ["/etc/Dockerfile", "~/Dockerfile", "C:/Dockerfile", "\\\\server\\Dockerfile"])
def test_absolute_dockerfile(factory: TaskFactory, path: str) -> None:
    folder = broken_task(factory, "absdocker", environment={"dockerfile": path})

    problem = only(problems_of(folder), "[environment] dockerfile")

    assert problem.value == path
    assert problem.message == "must be a path relative to absdocker/, not absolute"


def test_absolute_test_script_even_when_the_file_exists(factory: TaskFactory) -> None:
    folder = factory.task("absscript")
    existing = folder / "validation" / "check.py"
    factory.task("absscript", validation={"test_scripts": [str(existing)]})

    problem = only(problems_of(folder), "[validation] test_scripts[0]")

    assert problem.value == str(existing)
    assert problem.message == "must be a path relative to validation/, not absolute"


@pytest.mark.parametrize("pattern", ["/tmp/*.txt", "~/out/*", "D:\\out\\*", "\\out\\*"])
@pytest.mark.parametrize(("section", "key"), [("validation", "target_artifacts"), ("evaluation", "expected_artifacts")])
def test_absolute_artifact_globs(factory: TaskFactory, section: str, key: str, pattern: str) -> None:
    folder = broken_task(factory, "absglob", **{section: {key: ["ok/*.md", pattern]}})

    problem = only(problems_of(folder), f"[{section}] {key}[1]")

    assert problem.value == pattern
    assert problem.message == "must be a glob relative to the workspace, not absolute"


def test_blank_artifact_glob(factory: TaskFactory) -> None:
    folder = factory.task("blank", validation={"target_artifacts": ["  "]})

    problem = only(problems_of(folder), "[validation] target_artifacts[0]")

    assert problem.message == "must not be empty"


def test_symlink_pointing_outside_the_task(factory: TaskFactory, tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    folder = factory.task("escape")
    link = folder / "environment" / "secret.txt"
    link.symlink_to(outside)

    (problem,) = problems_of(folder)

    assert problem.file == link
    assert problem.message == "symlink points outside the task folder"
    assert problem.value == str(outside)


def test_symlinked_folder_pointing_outside_the_task(factory: TaskFactory, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    folder = factory.task("escape-dir")
    link = folder / "environment" / "data"
    link.symlink_to(outside, target_is_directory=True)

    (problem,) = problems_of(folder)

    assert problem.file == link
    assert problem.message == "symlink points outside the task folder"


def test_test_script_symlinked_outside_the_task(factory: TaskFactory, tmp_path: Path) -> None:
    outside = tmp_path / "check.py"
    outside.write_text("pass\n")
    folder = factory.task("escape-script", scripts={})
    (folder / "validation" / "check.py").symlink_to(outside)

    problems = problems_of(folder)

    assert only(problems, "[validation] test_scripts[0]").message == "resolves outside the task folder"
    assert [p.message for p in problems if p.file == folder / "validation" / "check.py"] == [
        "symlink points outside the task folder"
    ]


def test_symlink_pointing_inside_the_task_is_fine(factory: TaskFactory) -> None:
    folder = factory.task("inside")
    (folder / "environment" / "instructions-copy.md").symlink_to(Path("..") / "instruction.md")
    (folder / "environment" / "abs-inside").symlink_to(folder / "solution")

    assert load_task(folder).name == "inside"


def test_symlink_loop_is_a_problem_not_a_crash(factory: TaskFactory) -> None:
    folder = factory.task("loop")
    link = folder / "environment" / "loop"
    link.symlink_to("loop")

    (problem,) = problems_of(folder)

    assert problem.file == link
    assert "symlink cannot be resolved" in problem.message


def test_task_that_validates_nothing(factory: TaskFactory) -> None:
    folder = factory.task("checks-nothing", validation={"test_scripts": [], "target_artifacts": []})

    problem = only(problems_of(folder), "[validation]")

    assert problem.file == folder / TASK_FILE
    assert problem.message.startswith("nothing is validated: give test_scripts or target_artifacts")


def test_every_problem_of_a_task_is_reported_at_once(factory: TaskFactory) -> None:
    folder = broken_task(
        factory, "many", metadata={"difficulty": "extreme", "colour": "red"}, interaction={"max_turns": "9"}
    )
    (folder / "instruction.md").unlink()
    (folder / "solution" / "solve.sh").unlink()

    with pytest.raises(TaskError) as info:
        load_task(folder, require_solution=True)

    problems = info.value.problems
    assert {p.key for p in problems if p.file == folder / TASK_FILE} == {
        "[metadata] difficulty",
        "[metadata] colour",
        "[interaction] max_turns",
    }
    assert {p.file for p in problems} == {
        folder / TASK_FILE,
        folder / "instruction.md",
        folder / "solution" / "solve.sh",
    }
    assert len(problems) == 5
    # The exception text shows every problem, one a line, so `comet tasks check` can print them all.
    assert str(info.value).splitlines() == [str(p) for p in problems]
    assert isinstance(info.value, LoadError)
    assert isinstance(info.value, ValueError)


def test_valid_toml_problems_and_folder_problems_are_reported_together(factory: TaskFactory) -> None:
    folder = factory.task("both", validation={"test_scripts": ["nope.py"], "target_artifacts": ["/abs"]})
    (folder / "instruction.md").unlink()

    problems = problems_of(folder)

    assert [(p.file.name, p.key) for p in problems] == [
        ("instruction.md", ""),
        (TASK_FILE, "[validation] test_scripts[0]"),
        (TASK_FILE, "[validation] target_artifacts[0]"),
    ]


# --- the catalog ----------------------------------------------------------------------------------


def test_catalog_loads_every_registered_task(factory: TaskFactory) -> None:
    factory.task("beta")
    factory.task("alpha")
    (factory.tasks_dir / ".hidden").mkdir()
    (factory.tasks_dir / "_drafts").mkdir()

    catalog = load_catalog([factory.tasks_dir])

    assert list(catalog.tasks) == ["alpha", "beta"]
    assert catalog.names() == ["alpha", "beta"]
    assert catalog.broken == {}
    assert catalog.general == ()
    assert catalog.problems() == []
    assert catalog.dirs == (factory.tasks_dir,)
    assert catalog.tasks["alpha"].root == factory.tasks_dir / "alpha"


def test_folder_missing_from_the_index(factory: TaskFactory) -> None:
    factory.task("listed")
    factory.task("unlisted", register=False)
    index = factory.tasks_dir / INDEX_FILE

    catalog = load_catalog([factory.tasks_dir])

    assert list(catalog.tasks) == ["listed"]
    (problem,) = catalog.broken["unlisted"]
    assert problem.file == index
    assert problem.key == "tasks"
    assert str(factory.tasks_dir / "unlisted") in problem.message
    assert "add '- name: unlisted' under tasks" in problem.message


def test_index_entry_without_a_folder(factory: TaskFactory) -> None:
    factory.task("real")
    factory.index.append({"name": "ghost"})
    factory.write_index()
    index = factory.tasks_dir / INDEX_FILE

    catalog = load_catalog([factory.tasks_dir])

    assert list(catalog.tasks) == ["real"]
    assert catalog.names() == ["ghost", "real"]
    (problem,) = catalog.broken["ghost"]
    assert problem.file == index
    assert problem.value == "ghost"
    assert problem.message == f"registers task 'ghost' but there is no folder {factory.tasks_dir / 'ghost'}"
    assert str(problem).startswith(f"{index}: tasks: registers task 'ghost'")


@pytest.mark.parametrize(
    ("key", "index_value", "toml_text"),
    [
        ("category", "comet", "[metadata] category = 'generic'"),
        ("default_treatments", ["CONTROL", "SKILL_A"], "[metadata] default_treatments = ['CONTROL']"),
        ("description", "something else", "[metadata] description = 'task drift'"),
    ],
)
def test_index_fields_that_disagree_with_task_toml_are_a_warning_and_task_toml_wins(
    factory: TaskFactory, key: str, index_value: Any, toml_text: str
) -> None:
    # The original Comet eval's own example has different descriptions in the two files: it must load.
    folder = factory.task("drift")
    factory.index[0][key] = index_value
    factory.write_index()

    catalog = load_catalog([factory.tasks_dir])

    assert catalog.broken == {}
    assert catalog.problems() == []
    task = catalog.tasks["drift"]
    assert getattr(task.spec.metadata, key) != (tuple(index_value) if isinstance(index_value, list) else index_value)
    (problem,) = task.warnings
    assert "task.toml wins" in problem.message
    assert problem.file == factory.tasks_dir / INDEX_FILE
    assert problem.key == f"tasks[drift].{key}"
    assert problem.value == index_value
    assert toml_text in problem.message
    assert str(folder / TASK_FILE) in problem.message


def test_index_entry_with_only_a_name_does_not_disagree(factory: TaskFactory) -> None:
    factory.task("plain", metadata={"category": "comet", "description": "d"})
    factory.index = [{"name": "plain"}]
    factory.write_index()

    catalog = load_catalog([factory.tasks_dir])

    assert list(catalog.tasks) == ["plain"]
    assert catalog.problems() == []


def test_missing_index_is_a_general_problem_and_tasks_still_load(factory: TaskFactory) -> None:
    factory.task("alone")
    (factory.tasks_dir / INDEX_FILE).unlink()

    catalog = load_catalog([factory.tasks_dir])

    assert list(catalog.tasks) == ["alone"]
    (problem,) = catalog.general
    assert problem.file == factory.tasks_dir / INDEX_FILE
    assert problem.message.startswith("missing: each tasks folder registers its tasks in index.yaml")
    assert catalog.problems() == [problem]


@pytest.mark.parametrize(
    ("text", "key", "message"),
    [
        ("tasks: [\n", "line 2, column 1", "not valid YAML"),
        (
            "tasks:\n  - name: a\n    colour: red\n",
            "tasks[0].colour",
            "unknown key; allowed: category, default_treatments",
        ),
        ("tasks: a-string\n", "tasks", "expected a list"),
        ("tasks:\n  - name: a\n  - name: a\n", "tasks[1].name", "registered twice"),
    ],
)
def test_bad_index_files_are_general_problems(factory: TaskFactory, text: str, key: str, message: str) -> None:
    factory.task("a")
    (factory.tasks_dir / INDEX_FILE).write_text(text)

    catalog = load_catalog([factory.tasks_dir])

    (problem,) = catalog.general
    assert problem.file == factory.tasks_dir / INDEX_FILE
    assert problem.key == key
    assert message in problem.message


def test_index_that_is_not_utf8_is_a_problem_not_a_crash(factory: TaskFactory) -> None:
    factory.task("a")
    (factory.tasks_dir / INDEX_FILE).write_bytes(b"tasks:\n  - name: \xff\n")

    catalog = load_catalog([factory.tasks_dir])

    (problem,) = catalog.general
    assert problem.message.startswith("not valid YAML: ")
    assert list(catalog.tasks) == ["a"]


def test_empty_index_file_registers_nothing(factory: TaskFactory) -> None:
    factory.task("a")
    (factory.tasks_dir / INDEX_FILE).write_text("")

    catalog = load_catalog([factory.tasks_dir])

    assert catalog.general == ()
    assert list(catalog.broken) == ["a"]
    assert "does not register the task folder" in catalog.broken["a"][0].message


def test_same_task_name_in_two_tasks_folders(factory: TaskFactory, tmp_path: Path) -> None:
    other = TaskFactory(tmp_path / "other")
    first = factory.task("dup")
    second = other.task("dup")
    factory.task("unique")

    catalog = load_catalog([factory.tasks_dir, other.tasks_dir])

    assert list(catalog.tasks) == ["unique"]
    (problem,) = catalog.broken["dup"]
    assert problem.file == second
    assert str(first) in problem.message
    assert "defined twice" in problem.message
    assert catalog.dirs == (factory.tasks_dir, other.tasks_dir)


def test_missing_tasks_folder_is_a_general_problem(factory: TaskFactory, tmp_path: Path) -> None:
    factory.task("a")

    catalog = load_catalog([tmp_path / "nowhere", factory.tasks_dir])

    assert list(catalog.tasks) == ["a"]
    (problem,) = catalog.general
    assert problem.file == tmp_path / "nowhere"
    assert problem.message == "tasks folder does not exist"


def test_broken_tasks_do_not_stop_the_others(factory: TaskFactory) -> None:
    factory.task("good-a")
    broken_task(factory, "bad-b", metadata={"difficulty": "impossible"})
    notoml = factory.task("bad-c")
    (notoml / TASK_FILE).unlink()
    loop = factory.task("bad-d")
    (loop / "environment" / "self").symlink_to("self")
    factory.task("good-z")

    catalog = load_catalog([factory.tasks_dir])

    assert list(catalog.tasks) == ["good-a", "good-z"]
    assert list(catalog.broken) == ["bad-b", "bad-c", "bad-d"]
    assert catalog.names() == ["bad-b", "bad-c", "bad-d", "good-a", "good-z"]
    assert catalog.broken["bad-b"][0].key == "[metadata] difficulty"
    assert catalog.broken["bad-c"][0].file == notoml / TASK_FILE
    assert [p.file.relative_to(factory.tasks_dir).parts[0] for p in catalog.problems()] == ["bad-b", "bad-c", "bad-d"]


# --- render_instruction ---------------------------------------------------------------------------


def test_render_replaces_known_variables_only() -> None:
    text = "Run {run_id} in {workspace}. Leave {other} and {Run_Id} alone."

    assert render_instruction(text, {"run_id": "42", "workspace": "/w"}) == (
        "Run 42 in /w. Leave {other} and {Run_Id} alone."
    )


def test_render_leaves_json_and_code_braces_alone() -> None:
    text = 'Write {"name": "x", "items": [1, 2]} to out.json.\n\ndef f():\n    return {k: v for k, v in d}\n{}\n'

    assert render_instruction(text, {"name": "SHOULD-NOT-APPEAR", "k": "NO", "v": "NO"}) == text


def test_render_replaces_every_occurrence_and_does_not_recurse() -> None:
    assert render_instruction("{a}{a} {b}", {"a": "{b}", "b": "B"}) == "{b}{b} B"

"""Treatments files: named skill sets, skill resolution, CLAUDE.md, and every way a file can be wrong."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scaffold.catalog.treatments import (
    CONTROL,
    DYNAMIC_SKILL,
    TASK_SKILLS,
    SkillRef,
    Treatment,
    TreatmentCatalog,
    dynamic_treatment,
    frontmatter_name,
    load_treatments,
    task_treatment,
)
from scaffold.errors import Problem, SelectionError
from tests.support.factories import TaskFactory


def load(factory: TaskFactory, **kwargs: Any) -> TreatmentCatalog:
    return load_treatments([factory.treatments_dir], **kwargs)


def broken(catalog: TreatmentCatalog, name: str) -> Problem:
    assert name not in catalog.treatments, f"{name} should be broken, not loaded"
    problems = catalog.broken[name]
    assert len(problems) == 1, [str(p) for p in problems]
    return problems[0]


def refs(treatment: Treatment) -> list[tuple[str, Path, str | None]]:
    """The skills as (name, resolved folder, variant): entries may spell the folder with '..'."""
    return [(s.name, s.path.resolve(), s.variant) for s in treatment.skills]


def folder_in(message: str, before: str, after: str) -> Path:
    """The folder named in a message 'BEFORE <folder> AFTER', resolved."""
    assert message.startswith(before), message
    assert message.endswith(after), message
    return Path(message[len(before) : -len(after)]).resolve()


# --- CONTROL ------------------------------------------------------------------------------------


def test_control_exists_without_any_file(factory: TaskFactory) -> None:
    catalog = load(factory)

    assert list(catalog.treatments) == [CONTROL]
    control = catalog.treatments[CONTROL]
    assert control.skills == ()
    assert control.skill_names == ()
    assert control.claude_md is None
    assert control.source is None
    assert control.description == "No skills (baseline)"
    assert catalog.names() == [CONTROL]
    assert catalog.problems() == []


def test_control_exists_with_no_folders_at_all() -> None:
    catalog = load_treatments([])

    assert list(catalog.treatments) == [CONTROL]


def test_missing_treatments_folder_is_a_general_problem(tmp_path: Path) -> None:
    catalog = load_treatments([tmp_path / "nope"])

    (problem,) = catalog.general
    assert problem.file == tmp_path / "nope"
    assert problem.message == "treatments folder does not exist"
    assert list(catalog.treatments) == [CONTROL]


def test_control_defined_in_a_file_replaces_the_builtin(factory: TaskFactory) -> None:
    file = factory.treatments("control.yaml", {CONTROL: {"description": "Plain agent"}})

    control = load(factory).treatments[CONTROL]

    assert control.description == "Plain agent"
    assert control.source == file


# --- files and skill entries --------------------------------------------------------------------


def test_files_are_loaded_recursively_yaml_and_yml(factory: TaskFactory) -> None:
    alpha = factory.skill("alpha")
    top = factory.treatments("top.yaml", {"SKILL_TOP": {"description": "top", "skills": ["../skills/alpha"]}})
    nested = factory.treatments("deep/er/nested.yml", {"SKILL_NESTED": {"skills": ["../../../skills/alpha"]}})
    factory.treatments("deep/notes.txt", "NOT_LOADED: {}\n")
    factory.treatments("empty.yaml", "")

    catalog = load(factory)

    assert list(catalog.treatments) == [CONTROL, "SKILL_NESTED", "SKILL_TOP"]
    assert catalog.treatments["SKILL_TOP"].source == top
    assert catalog.treatments["SKILL_TOP"].description == "top"
    assert catalog.treatments["SKILL_NESTED"].source == nested
    assert refs(catalog.treatments["SKILL_NESTED"]) == [("alpha", alpha.resolve(), None)]
    assert catalog.problems() == []


def test_skill_entry_as_a_string_path(factory: TaskFactory) -> None:
    alpha = factory.skill("alpha")
    factory.treatments("t.yaml", {"SKILL_A": {"skills": ["../skills/alpha"]}})

    treatment = load(factory).treatments["SKILL_A"]

    assert refs(treatment) == [("alpha", alpha.resolve(), None)]
    assert treatment.skills[0].path.is_absolute()
    assert treatment.skill_names == ("alpha",)


def test_skill_entry_with_name_and_path(factory: TaskFactory) -> None:
    alpha = factory.skill("alpha")
    factory.treatments("t.yaml", {"SKILL_A": {"skills": [{"name": "renamed", "path": "../skills/alpha"}]}})

    assert refs(load(factory).treatments["SKILL_A"]) == [("renamed", alpha.resolve(), None)]


def test_skill_snapshot_through_a_skill_base(factory: TaskFactory, tmp_path: Path) -> None:
    bench = tmp_path / "bench-root"
    snapshot = bench / "040-beta" / "comet"
    snapshot.mkdir(parents=True)
    (snapshot / "SKILL.md").write_text("---\nname: comet\n---\n")
    factory.treatments(
        "t.yaml",
        {
            "SKILL_BETA": {
                "skills": [{"name": "comet", "skill": "040-beta/comet", "base": "benchmarks", "variant": "beta"}]
            }
        },
    )

    catalog = load(factory, skill_bases={"benchmarks": bench})

    assert refs(catalog.treatments["SKILL_BETA"]) == [("comet", snapshot.resolve(), "beta")]
    # What the reports name as the skill's source (TrialRecord.skill_sources).
    assert catalog.treatments["SKILL_BETA"].skills[0].source == f"snapshot benchmarks/040-beta/comet ({snapshot})"


def test_skill_snapshot_through_the_default_base_beside_the_treatments_folder(factory: TaskFactory) -> None:
    snapshot = factory.root / "benchmarks" / "v1" / "comet"
    snapshot.mkdir(parents=True)
    (snapshot / "SKILL.md").write_text("x\n")
    # The default base is the folder NAME beside the treatments folder, even for a nested file.
    factory.treatments("sub/t.yaml", {"SKILL_V1": {"skills": [{"skill": "v1/comet", "base": "benchmarks"}]}})

    treatment = load(factory).treatments["SKILL_V1"]

    assert refs(treatment) == [("comet", snapshot.resolve(), None)]


def test_explicit_skill_base_wins_over_the_default_folder(factory: TaskFactory, tmp_path: Path) -> None:
    for root in (factory.root / "benchmarks", tmp_path / "explicit"):
        (root / "s").mkdir(parents=True)
        (root / "s" / "SKILL.md").write_text("x\n")
    factory.treatments("t.yaml", {"SKILL_S": {"skills": [{"skill": "s", "base": "benchmarks"}]}})

    catalog = load(factory, skill_bases={"benchmarks": tmp_path / "explicit"})

    assert catalog.treatments["SKILL_S"].skills[0].path == tmp_path / "explicit" / "s"


def test_variant_is_kept_on_path_entries(factory: TaskFactory) -> None:
    alpha = factory.skill("alpha")
    factory.treatments("t.yaml", {"SKILL_A": {"skills": [{"path": "../skills/alpha", "variant": "v2"}]}})

    assert refs(load(factory).treatments["SKILL_A"]) == [("alpha", alpha.resolve(), "v2")]


def test_several_skills_keep_their_order(factory: TaskFactory) -> None:
    factory.skill("zeta")
    factory.skill("alpha")
    factory.treatments("t.yaml", {"BOTH": {"skills": ["../skills/zeta", "../skills/alpha"]}})

    assert load(factory).treatments["BOTH"].skill_names == ("zeta", "alpha")


def test_claude_md_inline(factory: TaskFactory) -> None:
    factory.treatments("t.yaml", {"RULES": {"claude_md": "# Rules\nBe brief.\n"}})

    assert load(factory).treatments["RULES"].claude_md == "# Rules\nBe brief.\n"


def test_claude_md_from_a_file_beside_the_treatments_file(factory: TaskFactory) -> None:
    file = factory.treatments("sub/t.yaml", {"RULES": {"claude_md": {"file": "rules.md"}}})
    (file.parent / "rules.md").write_text("# From file\n")

    assert load(factory).treatments["RULES"].claude_md == "# From file\n"


def test_claude_md_file_that_does_not_exist(factory: TaskFactory) -> None:
    file = factory.treatments("t.yaml", {"RULES": {"claude_md": {"file": "missing.md"}}})

    problem = broken(load(factory), "RULES")

    assert problem.file == file
    assert problem.key == "RULES.claude_md.file"
    assert str(factory.treatments_dir / "missing.md") in problem.message


# --- errors ---------------------------------------------------------------------------------------


def test_same_treatment_name_in_two_files_names_both(factory: TaskFactory) -> None:
    factory.skill("alpha")
    first = factory.treatments("a.yaml", {"SKILL_A": {"skills": ["../skills/alpha"]}, "OTHER": {}})
    second = factory.treatments("b.yaml", {"SKILL_A": {"description": "again"}})

    catalog = load(factory)

    problem = broken(catalog, "SKILL_A")
    assert problem.file == second
    assert problem.message == f"treatment 'SKILL_A' is also defined in {first}"
    assert str(problem).startswith(f"{second}: SKILL_A: ")
    assert "OTHER" in catalog.treatments
    assert catalog.names() == [CONTROL, "OTHER", "SKILL_A"]


def test_skill_folder_missing(factory: TaskFactory) -> None:
    file = factory.treatments("t.yaml", {"SKILL_X": {"skills": ["../skills/nowhere"]}})

    problem = broken(load(factory), "SKILL_X")

    assert problem.file == file
    assert problem.key == "SKILL_X.skills[0]"
    assert problem.value == "../skills/nowhere"
    assert (
        folder_in(problem.message, "skill folder ", " does not exist")
        == (factory.root / "skills" / "nowhere").resolve()
    )


def test_skill_snapshot_folder_missing_under_the_base(factory: TaskFactory, tmp_path: Path) -> None:
    factory.treatments("t.yaml", {"SKILL_X": {"skills": [{"skill": "v9/comet", "base": "bench"}]}})

    problem = broken(load(factory, skill_bases={"bench": tmp_path}), "SKILL_X")

    assert problem.message == f"skill folder {tmp_path / 'v9' / 'comet'} does not exist"
    assert problem.value == {"skill": "v9/comet", "base": "bench"}


def test_skill_folder_without_skill_md(factory: TaskFactory) -> None:
    folder = factory.skill("hollow")
    (folder / "SKILL.md").unlink()
    factory.treatments("t.yaml", {"SKILL_H": {"skills": ["../skills/hollow"]}})

    problem = broken(load(factory), "SKILL_H")

    assert folder_in(problem.message, "skill folder ", " has no SKILL.md") == folder.resolve()


def test_skill_entry_with_both_path_and_skill(factory: TaskFactory) -> None:
    factory.skill("alpha")
    entry = {"path": "../skills/alpha", "skill": "alpha", "base": "skills"}
    factory.treatments("t.yaml", {"SKILL_B": {"skills": [entry]}})

    problem = broken(load(factory), "SKILL_B")

    assert problem.key == "SKILL_B.skills[0]"
    assert problem.value == entry
    assert problem.message == "give either path (relative to this file) or skill with base, not both"


def test_skill_without_base(factory: TaskFactory) -> None:
    factory.treatments("t.yaml", {"SKILL_B": {"skills": [{"skill": "alpha"}]}})

    problem = broken(load(factory), "SKILL_B")

    assert problem.message == "a skill snapshot needs a base folder name (base: NAME)"
    assert problem.value == {"skill": "alpha"}


def test_skill_entry_with_neither_path_nor_skill(factory: TaskFactory) -> None:
    factory.treatments("t.yaml", {"SKILL_B": {"skills": [{"name": "alpha"}]}})

    problem = broken(load(factory), "SKILL_B")

    assert problem.message.startswith("a skill entry needs path")


def test_bad_skill_name(factory: TaskFactory) -> None:
    factory.skill("alpha")
    factory.treatments("t.yaml", {"SKILL_B": {"skills": [{"name": "has space", "path": "../skills/alpha"}]}})

    problem = broken(load(factory), "SKILL_B")

    assert problem.message == (
        "skill name 'has space' must start with a letter or digit and use only letters, digits, '.', '_' and '-' "
        "(at most 100)"
    )


@pytest.mark.parametrize("name", ["bad-name", "1STARTS_WITH_DIGIT", "_under", "has space", 42])
def test_bad_treatment_name_is_a_general_problem(factory: TaskFactory, name: Any) -> None:
    file = factory.treatments("t.yaml", {name: {}, "GOOD": {}})

    catalog = load(factory)

    (problem,) = catalog.general
    assert problem.file == file
    assert problem.value == name
    assert problem.message == "treatment names start with a letter and use only letters, digits and '_'"
    assert list(catalog.treatments) == [CONTROL, "GOOD"]


def test_invalid_yaml_names_the_file(factory: TaskFactory) -> None:
    bad = factory.treatments("bad.yaml", "SKILL_A: {skills: [\n")
    factory.treatments("good.yaml", {"GOOD": {}})

    catalog = load(factory)

    (problem,) = catalog.general
    assert problem.file == bad
    assert problem.message == "not valid YAML: did not find expected node content (while parsing a flow node)"
    # The line and column where the parser stopped, right after the file.
    assert str(problem).startswith(f"{bad}: line 2, column 1: not valid YAML: ")
    assert list(catalog.treatments) == [CONTROL, "GOOD"]


def test_treatments_file_that_is_not_utf8_is_a_problem_not_a_crash(factory: TaskFactory) -> None:
    bad = factory.treatments_dir / "bad.yaml"
    bad.write_bytes(b"SKILL_A:\n  description: \xff\xfe\n")

    catalog = load(factory)

    (problem,) = catalog.general
    assert problem.file == bad
    assert problem.message.startswith("not valid YAML: ")


def test_file_that_is_not_a_mapping(factory: TaskFactory) -> None:
    file = factory.treatments("list.yaml", "- CONTROL\n- SKILL_A\n")

    (problem,) = load(factory).general

    assert problem.file == file
    assert problem.message == "expected a mapping of treatment names to {description, skills}"
    assert problem.value == [CONTROL, "SKILL_A"]


def test_control_with_skills(factory: TaskFactory) -> None:
    factory.skill("alpha")
    file = factory.treatments("control.yaml", {CONTROL: {"skills": ["../skills/alpha"]}})

    catalog = load(factory)

    problem = broken(catalog, CONTROL)
    assert problem.file == file
    assert problem.key == "CONTROL.skills"
    assert problem.message == "CONTROL is the no-skill baseline and cannot hold skills"
    # A broken CONTROL is not silently replaced by the built-in one.
    assert CONTROL not in catalog.treatments


def test_duplicate_skill_names_in_one_treatment(factory: TaskFactory) -> None:
    factory.skill("alpha")
    factory.skill("beta")
    factory.treatments(
        "t.yaml", {"TWICE": {"skills": ["../skills/alpha", {"name": "alpha", "path": "../skills/beta"}]}}
    )

    problem = broken(load(factory), "TWICE")

    assert problem.key == "TWICE.skills[1]"
    assert problem.value == "alpha"
    assert problem.message == "skill installed twice under the same name"


def test_unknown_key_in_a_treatment_entry(factory: TaskFactory) -> None:
    file = factory.treatments("t.yaml", {"TYPO": {"skils": ["../skills/alpha"]}})

    problem = broken(load(factory), "TYPO")

    assert problem.file == file
    assert problem.key == "TYPO.skils"
    assert problem.value == ["../skills/alpha"]
    assert problem.message == (
        "unknown key; allowed: claude_md, description, distractors, nudge, self_written, skills, skills_of"
    )


def test_unknown_key_in_a_skill_entry(factory: TaskFactory) -> None:
    factory.skill("alpha")
    file = factory.treatments("t.yaml", {"TYPO": {"skills": [{"path": "../skills/alpha", "varient": "x"}]}})

    catalog = load(factory)

    assert "TYPO" not in catalog.treatments
    (problem,) = catalog.broken["TYPO"]  # one problem, named as the user wrote it
    assert problem.file == file
    assert problem.key == "TYPO.skills[0].varient"
    assert problem.message == "unknown key; allowed: base, name, path, skill, variant"
    assert problem.value == "x"


def test_claude_md_of_the_wrong_shape(factory: TaskFactory) -> None:
    factory.treatments("t.yaml", {"A": {"claude_md": {"fil": "x.md"}}, "B": {"claude_md": 3}})
    catalog = load(factory)
    assert sorted(str(p).split(": ", 1)[1] for p in catalog.broken["A"]) == [
        "A.claude_md.fil: unknown key; allowed: file (got 'x.md')",
        "A.claude_md.file: required key is missing",
    ]
    (b,) = catalog.broken["B"]
    assert b.key == "B.claude_md" and b.value == 3 and "a mapping with keys file" in b.message


@pytest.mark.parametrize(
    ("body", "key", "message"),
    [
        (
            "just a string",
            "WRONG",
            "expected a mapping with keys claude_md, description, distractors, nudge, self_written, skills, skills_of",
        ),
        ({"skills": "../skills/alpha"}, "WRONG.skills", "expected a list"),
        ({"description": 5}, "WRONG.description", "expected a string"),
    ],
)
def test_wrong_types_in_a_treatment_entry(factory: TaskFactory, body: Any, key: str, message: str) -> None:
    factory.treatments("t.yaml", {"WRONG": body})

    problem = broken(load(factory), "WRONG")

    assert problem.key == key
    assert problem.message == message
    # Neither the loader's private model nor pydantic's phrasing reaches the user.
    assert "_TreatmentEntry" not in str(problem) and "Input should" not in str(problem)


def test_one_broken_treatment_does_not_hide_the_others(factory: TaskFactory) -> None:
    factory.skill("alpha")
    factory.treatments("t.yaml", {"GOOD": {"skills": ["../skills/alpha"]}, "BAD": {"skills": ["../skills/missing"]}})

    catalog = load(factory)

    assert list(catalog.treatments) == [CONTROL, "GOOD"]
    assert list(catalog.broken) == ["BAD"]
    assert catalog.names() == ["BAD", CONTROL, "GOOD"]
    assert catalog.problems() == list(catalog.broken["BAD"])


def test_every_skill_problem_of_a_treatment_is_reported(factory: TaskFactory) -> None:
    factory.treatments("t.yaml", {"MANY": {"skills": ["../skills/a", "../skills/b", {"skill": "c"}]}})

    problems = load(factory).broken["MANY"]

    assert [p.key for p in problems] == ["MANY.skills[0]", "MANY.skills[1]", "MANY.skills[2]"]


# --- DYNAMIC_SKILL ------------------------------------------------------------------------------


def test_dynamic_treatment_from_a_skill_path(factory: TaskFactory) -> None:
    folder = factory.skill("live")

    treatment = dynamic_treatment(folder)

    assert treatment.name == DYNAMIC_SKILL
    assert treatment.skills == (SkillRef("live", folder),)
    assert str(folder) in treatment.description
    assert treatment.skills[0].source == str(folder)  # the folder given is where it came from


def test_dynamic_treatment_with_a_skill_name(factory: TaskFactory) -> None:
    folder = factory.skill("live")

    assert dynamic_treatment(folder, "other-name").skill_names == ("other-name",)


def test_dynamic_treatment_relative_path_becomes_absolute(
    factory: TaskFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = factory.skill("live")
    monkeypatch.chdir(folder.parent)

    assert dynamic_treatment(Path("live")).skills[0].path == folder


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("missing", "does not exist"),
        ("no-skill-md", "has no SKILL.md"),
    ],
)
def test_dynamic_treatment_bad_path(factory: TaskFactory, setup: str, message: str) -> None:
    folder = factory.root / "skills" / setup
    if setup == "no-skill-md":
        folder.mkdir(parents=True)

    with pytest.raises(SelectionError) as info:
        dynamic_treatment(folder)

    assert str(info.value).startswith(f"--skill-path {folder}: ")
    assert message in str(info.value)


def test_dynamic_treatment_bad_skill_name(factory: TaskFactory) -> None:
    folder = factory.skill("live")

    with pytest.raises(SelectionError, match="skill name 'bad name' must start with a letter or digit"):
        dynamic_treatment(folder, "bad name")


def test_with_treatment_adds_without_changing_the_original(factory: TaskFactory) -> None:
    catalog = load(factory)
    dynamic = dynamic_treatment(factory.skill("live"))

    extended = catalog.with_treatment(dynamic)

    assert list(catalog.treatments) == [CONTROL]
    assert extended.treatments[DYNAMIC_SKILL] is dynamic
    assert extended.names() == [CONTROL, DYNAMIC_SKILL]
    assert isinstance(extended.treatments[CONTROL], Treatment)


# --- TASK_SKILLS ----------------------------------------------------------------------------------


def skills_dir(root: Path, skills: dict[str, str | None]) -> Path:
    """An ``environment/skills`` folder: folder name -> SKILL.md text (None: a folder without one)."""
    folder = root / "environment" / "skills"
    for name, text in skills.items():
        (folder / name).mkdir(parents=True)
        if text is not None:
            (folder / name / "SKILL.md").write_text(text)
    (folder / "reference.md").write_text("a loose file is not a skill\n")
    return folder


def test_task_skills_go_by_their_frontmatter_name_and_install_under_their_folder(tmp_path: Path) -> None:
    folder = skills_dir(
        tmp_path,
        {
            "csv-processing": "---\nname: csv-processing\ndescription: CSV\n---\nBody.\n",
            "xlsx_tools": "---\nname: xlsx\nlicense: Proprietary\n---\n",  # SkillsBench: a name of its own
            "plain": "No frontmatter at all.\n",
            "display": "---\nname: Pair Programming\n---\n",  # not a name a Skill call can give
            "notes": None,
        },
    )

    treatment = task_treatment(folder)

    assert treatment.name == TASK_SKILLS
    found = [(s.name, s.folder_name, s.path.name) for s in treatment.skills]
    assert found == [
        ("csv-processing", "csv-processing", "csv-processing"),
        ("display", "display", "display"),
        ("plain", "plain", "plain"),
        ("xlsx", "xlsx_tools", "xlsx_tools"),
    ]
    assert treatment.skill_names == ("csv-processing", "display", "plain", "xlsx")


def test_two_skills_claiming_one_name_go_by_their_folders(tmp_path: Path) -> None:
    folder = skills_dir(tmp_path, {"a": "---\nname: shared\n---\n", "b": "---\nname: shared\n---\n"})

    assert task_treatment(folder).skill_names == ("a", "b")


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("---\nname: report\ndescription: x\n---\n# Report\n", "report"),
        ("\ufeff---\nname: '  quoted  '\n---\n", "quoted"),
        ("---\ndescription: no name\n---\n", None),
        ("---\nname: [not, a, string]\n---\n", None),
        ("---\nname: unclosed\n", None),
        ("---\nname: x: y: z\n---\n", None),  # not YAML
        ("name: outside a frontmatter\n", None),
        ("", None),
    ],
)
def test_frontmatter_name(tmp_path: Path, text: str, name: str | None) -> None:
    (tmp_path / "SKILL.md").write_text(text, encoding="utf-8")

    assert frontmatter_name(tmp_path / "SKILL.md") == name
    assert frontmatter_name(tmp_path / "missing.md") is None

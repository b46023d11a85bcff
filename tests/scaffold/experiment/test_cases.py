"""Case selection: which (task, treatment, trial) cases run, in which order, and what becomes Broken."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaffold.catalog.tasks import INDEX_FILE, Task, TaskCatalog, TaskSpec, load_catalog
from scaffold.catalog.treatments import (
    CONTROL,
    DYNAMIC_SKILL,
    Treatment,
    TreatmentCatalog,
    dynamic_treatment,
    load_treatments,
)
from scaffold.errors import Problem, SelectionError
from scaffold.experiment.cases import Broken, Case, match_names, parse_list, select_cases
from tests.support.factories import TaskFactory


def catalogs(factory: TaskFactory) -> tuple[TaskCatalog, TreatmentCatalog]:
    return load_catalog([factory.tasks_dir]), load_treatments([factory.treatments_dir])


def ids(items: list[Case | Broken]) -> list[str]:
    return [item.id for item in items]


@pytest.fixture
def two_tasks(factory: TaskFactory) -> TaskFactory:
    """Tasks zeta (CONTROL) and alpha (CONTROL, SKILL_A); treatments CONTROL, SKILL_A, SKILL_B."""
    factory.skill("a")
    factory.skill("b")
    factory.treatments(
        "t.yaml",
        {"SKILL_A": {"skills": ["../skills/a"]}, "SKILL_B": {"skills": ["../skills/b"]}},
    )
    factory.task("zeta")
    factory.task("alpha", metadata={"default_treatments": ["CONTROL", "SKILL_A"]})
    return factory


# --- parse_list and match_names -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (None, []),
        ([], []),
        (["a"], ["a"]),
        (["a,b", "c"], ["a", "b", "c"]),
        ([" a , b ,", ",,c"], ["a", "b", "c"]),
        (["", " "], []),
        (["a", "a"], ["a", "a"]),
    ],
)
def test_parse_list(values: list[str] | None, expected: list[str]) -> None:
    assert parse_list(values) == expected


def test_match_names_exact() -> None:
    assert match_names(["beta", "alpha"], ["alpha", "beta", "gamma"], "task") == ["beta", "alpha"]


def test_match_names_trailing_star_is_a_prefix_sorted_within_the_pattern() -> None:
    names = ["fix-b", "fix-a", "other", "fix"]

    assert match_names(["fix-*"], names, "task") == ["fix-a", "fix-b"]
    assert match_names(["fix*"], names, "task") == ["fix", "fix-a", "fix-b"]
    assert match_names(["*"], names, "task") == ["fix", "fix-a", "fix-b", "other"]


def test_match_names_keeps_pattern_order_without_repeats() -> None:
    names = ["SKILL_A", "SKILL_B", CONTROL]

    assert match_names(["SKILL_B", CONTROL, "SKILL_*"], names, "treatment") == ["SKILL_B", CONTROL, "SKILL_A"]


def test_match_names_star_only_at_the_end_is_a_wildcard() -> None:
    with pytest.raises(SelectionError, match=r"--task=\*-a matches no task"):
        match_names(["*-a"], ["fix-a"], "task")


def test_match_names_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(SelectionError) as info:
        match_names(["alpha", "gamma"], ["beta", "alpha"], "task")

    assert str(info.value) == "--task=gamma matches no task; known: alpha, beta"


def test_match_names_unknown_with_nothing_known() -> None:
    with pytest.raises(SelectionError) as info:
        match_names(["x*"], [], "treatment")

    assert str(info.value) == "--treatment=x* matches no treatment; known: none"


# --- select_cases ---------------------------------------------------------------------------------


def test_cases_use_default_treatments_sorted_by_task(two_tasks: TaskFactory) -> None:
    tasks, treatments = catalogs(two_tasks)

    cases = select_cases(tasks, treatments)

    assert cases == [Case("alpha", CONTROL, 1), Case("alpha", "SKILL_A", 1), Case("zeta", CONTROL, 1)]
    assert ids(cases) == ["alpha-CONTROL-r1", "alpha-SKILL_A-r1", "zeta-CONTROL-r1"]


def test_count_repeats_each_case_with_trials_from_one(two_tasks: TaskFactory) -> None:
    tasks, treatments = catalogs(two_tasks)

    cases = select_cases(tasks, treatments, task_patterns=["alpha"], count=3)

    assert ids(cases) == [
        "alpha-CONTROL-r1", "alpha-CONTROL-r2", "alpha-CONTROL-r3",
        "alpha-SKILL_A-r1", "alpha-SKILL_A-r2", "alpha-SKILL_A-r3",
    ]  # fmt: skip


def test_treatment_patterns_replace_the_defaults_in_selection_order(two_tasks: TaskFactory) -> None:
    tasks, treatments = catalogs(two_tasks)

    cases = select_cases(tasks, treatments, treatment_patterns=["SKILL_B", CONTROL], count=2)

    assert ids(cases) == [
        "alpha-SKILL_B-r1", "alpha-SKILL_B-r2", "alpha-CONTROL-r1", "alpha-CONTROL-r2",
        "zeta-SKILL_B-r1", "zeta-SKILL_B-r2", "zeta-CONTROL-r1", "zeta-CONTROL-r2",
    ]  # fmt: skip


def test_task_patterns_select_tasks_but_order_stays_sorted(two_tasks: TaskFactory) -> None:
    tasks, treatments = catalogs(two_tasks)

    cases = select_cases(tasks, treatments, task_patterns=["zeta", "alpha"], treatment_patterns=[CONTROL])

    assert ids(cases) == ["alpha-CONTROL-r1", "zeta-CONTROL-r1"]


def test_selection_is_deterministic(two_tasks: TaskFactory) -> None:
    first = select_cases(*catalogs(two_tasks), count=2)
    second = select_cases(*catalogs(two_tasks), count=2)

    assert first == second


def test_default_treatments_given_replace_each_tasks_own(two_tasks: TaskFactory) -> None:
    # --skill-path: CONTROL and DYNAMIC_SKILL only; alpha's own SKILL_A does not run (docs/treatments.md).
    tasks, treatments = catalogs(two_tasks)
    treatments = treatments.with_treatment(dynamic_treatment(two_tasks.skill("live")))

    cases = select_cases(tasks, treatments, default_treatments=[CONTROL, DYNAMIC_SKILL])

    assert ids(cases) == [
        "alpha-CONTROL-r1", "alpha-DYNAMIC_SKILL-r1",
        "zeta-CONTROL-r1", "zeta-DYNAMIC_SKILL-r1",
    ]  # fmt: skip


def test_default_treatments_given_are_ignored_when_treatments_are_chosen(two_tasks: TaskFactory) -> None:
    tasks, treatments = catalogs(two_tasks)
    treatments = treatments.with_treatment(dynamic_treatment(two_tasks.skill("live")))

    cases = select_cases(tasks, treatments, treatment_patterns=[CONTROL], default_treatments=[DYNAMIC_SKILL])

    assert ids(cases) == ["alpha-CONTROL-r1", "zeta-CONTROL-r1"]


def test_a_task_whose_own_defaults_do_not_run_is_not_broken_by_them(factory: TaskFactory) -> None:
    factory.task("alpha", metadata={"default_treatments": ["CONTROL", "SKILL_NOPE"]})
    tasks, treatments = catalogs(factory)
    treatments = treatments.with_treatment(dynamic_treatment(factory.skill("live")))

    cases = select_cases(tasks, treatments, default_treatments=[CONTROL, DYNAMIC_SKILL])

    assert ids(cases) == ["alpha-CONTROL-r1", "alpha-DYNAMIC_SKILL-r1"]


def test_unknown_task_pattern_is_a_selection_error(two_tasks: TaskFactory) -> None:
    with pytest.raises(SelectionError, match=r"--task=gamma matches no task; known: alpha, zeta"):
        select_cases(*catalogs(two_tasks), task_patterns=["gamma"])


def test_unknown_treatment_pattern_is_a_selection_error(two_tasks: TaskFactory) -> None:
    with pytest.raises(SelectionError, match=r"--treatment=SKILL_Z matches no treatment; known: CONTROL, SKILL_A"):
        select_cases(*catalogs(two_tasks), treatment_patterns=["SKILL_Z"])


@pytest.mark.parametrize("count", [0, -1])
def test_count_below_one_is_rejected(two_tasks: TaskFactory, count: int) -> None:
    with pytest.raises(SelectionError, match=rf"--count must be at least 1 \(got {count}\)"):
        select_cases(*catalogs(two_tasks), count=count)


@pytest.mark.parametrize("count", [1, 4])
def test_broken_tasks_become_one_broken_item_whatever_the_count(factory: TaskFactory, count: int) -> None:
    factory.task("good")
    bad = factory.task("bad", metadata={"difficulty": "extreme"})

    items = select_cases(*catalogs(factory), count=count)

    assert ids(items) == ["bad-INVALID", *(f"good-CONTROL-r{i}" for i in range(1, count + 1))]
    broken = items[0]
    assert isinstance(broken, Broken)
    assert broken.name == "bad"
    assert [p.key for p in broken.problems] == ["[metadata] difficulty"]
    assert broken.message() == f"{bad / 'task.toml'}: [metadata] difficulty: expected 'easy', 'medium' or 'hard' " + (
        "(got 'extreme')"
    )


def test_broken_task_selected_by_name_is_still_an_item(factory: TaskFactory) -> None:
    factory.task("good")
    folder = factory.task("bad")
    (folder / "instruction.md").unlink()

    items = select_cases(*catalogs(factory), task_patterns=["bad"], treatment_patterns=[CONTROL], count=5)

    assert ids(items) == ["bad-INVALID"]


def test_unknown_default_treatment_is_a_broken_item_naming_the_task_toml(factory: TaskFactory) -> None:
    folder = factory.task("wants-more", metadata={"default_treatments": ["CONTROL", "SKILL_NOPE"]})
    factory.task("plain")

    items = select_cases(*catalogs(factory), count=2)

    assert ids(items) == ["plain-CONTROL-r1", "plain-CONTROL-r2", "wants-more-INVALID"]
    broken = items[2]
    assert isinstance(broken, Broken)
    (problem,) = broken.problems
    assert problem.file == folder / "task.toml"
    assert problem.key == "[metadata] default_treatments"
    assert problem.value == "SKILL_NOPE"
    assert problem.message == "names unknown treatment 'SKILL_NOPE'; known: CONTROL"


def test_broken_treatment_makes_the_tasks_that_use_it_broken(factory: TaskFactory) -> None:
    factory.treatments("t.yaml", {"SKILL_BAD": {"skills": ["../skills/missing"]}})
    factory.task("uses-bad", metadata={"default_treatments": ["SKILL_BAD"]})
    factory.task("plain")

    tasks, treatments = catalogs(factory)
    by_default = select_cases(tasks, treatments)
    chosen = select_cases(tasks, treatments, treatment_patterns=["SKILL_BAD"])

    assert ids(by_default) == ["plain-CONTROL-r1", "uses-bad-INVALID"]
    assert isinstance(by_default[1], Broken)
    assert by_default[1].problems == treatments.broken["SKILL_BAD"]
    assert ids(chosen) == ["plain-INVALID", "uses-bad-INVALID"]


def test_general_problems_become_items_only_without_a_task_filter(factory: TaskFactory) -> None:
    factory.task("alpha")
    (factory.tasks_dir / INDEX_FILE).unlink()
    tasks, treatments = catalogs(factory)

    unfiltered = select_cases(tasks, treatments)
    filtered = select_cases(tasks, treatments, task_patterns=["alpha"])

    assert ids(unfiltered) == ["tasks_index.yaml-INVALID", "alpha-CONTROL-r1"]
    general = unfiltered[0]
    assert isinstance(general, Broken)
    assert general.name == "tasks/index.yaml"
    assert general.problems == tasks.general
    assert ids(filtered) == ["alpha-CONTROL-r1"]


def test_treatment_file_problems_are_general_items_too(factory: TaskFactory) -> None:
    factory.task("alpha")
    factory.treatments("broken.yaml", "X: [\n")

    items = select_cases(*catalogs(factory))

    assert ids(items) == ["treatments_broken.yaml-INVALID", "alpha-CONTROL-r1"]


@pytest.mark.parametrize(
    ("name", "expected"),
    [("plain", "plain-INVALID"), ("tasks/index.yaml", "tasks_index.yaml-INVALID"), ("a b!c", "a_b_c-INVALID")],
)
def test_broken_ids_are_safe(name: str, expected: str) -> None:
    assert Broken(name, (Problem(Path("x"), "m"),)).id == expected


# --- properties -----------------------------------------------------------------------------------

TASK_NAMES = st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,12}\Z")
TREATMENT_NAMES = st.from_regex(r"\A[A-Za-z][A-Za-z0-9_]{0,10}\Z")


def in_memory_catalogs(
    task_names: set[str], defaults: dict[str, list[str]], treatment_names: set[str]
) -> tuple[TaskCatalog, TreatmentCatalog]:
    tasks = {
        name: Task(
            name,
            Path("/tasks") / name,
            TaskSpec.model_validate({"metadata": {"name": name, "default_treatments": defaults.get(name, [CONTROL])}}),
        )
        for name in task_names
    }
    treatments = {name: Treatment(name) for name in {*treatment_names, CONTROL}}
    return TaskCatalog(tasks, {}), TreatmentCatalog(treatments, {})


@settings(max_examples=75, deadline=None)
@given(
    task_names=st.sets(TASK_NAMES, min_size=1, max_size=6),
    selection=st.lists(TREATMENT_NAMES, min_size=1, max_size=4, unique=True),
    count=st.integers(min_value=1, max_value=4),
)
def test_selection_order_and_size_property(task_names: set[str], selection: list[str], count: int) -> None:
    tasks, treatments = in_memory_catalogs(task_names, {}, set(selection))

    cases = select_cases(tasks, treatments, treatment_patterns=selection, count=count)

    assert all(isinstance(c, Case) for c in cases)
    assert len(cases) == len(task_names) * len(selection) * count
    assert cases == [Case(t, tr, k) for t in sorted(task_names) for tr in selection for k in range(1, count + 1)]
    assert len(set(ids(cases))) == len(cases)
    assert all(c.id == f"{c.task}-{c.treatment}-r{c.trial}" for c in cases if isinstance(c, Case))


@settings(max_examples=75, deadline=None)
@given(
    data=st.data(),
    task_names=st.sets(TASK_NAMES, min_size=1, max_size=5),
    treatment_names=st.sets(TREATMENT_NAMES, min_size=1, max_size=4),
    count=st.integers(min_value=1, max_value=3),
)
def test_default_treatment_selection_property(
    data: st.DataObject, task_names: set[str], treatment_names: set[str], count: int
) -> None:
    pool = sorted({*treatment_names, CONTROL})
    defaults = {
        name: data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=len(pool), unique=True), label=name)
        for name in sorted(task_names)
    }
    tasks, treatments = in_memory_catalogs(task_names, defaults, treatment_names)

    cases = select_cases(tasks, treatments, count=count)

    expected = [Case(t, tr, k) for t in sorted(task_names) for tr in defaults[t] for k in range(1, count + 1)]
    assert cases == expected
    assert len(cases) == sum(len(d) for d in defaults.values()) * count
    assert len(set(ids(cases))) == len(cases)

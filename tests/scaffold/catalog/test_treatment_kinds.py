"""Treatment kinds: their YAML (each kind, combinations, mistakes), the names the options give them, and the
seeded draw of distractors (same seed, same draw; never the skill under test; a pool too small is an error)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaffold.catalog.treatment_kinds import Distractors, draw_distractors, kind_name, nudge_line
from scaffold.catalog.treatments import (
    CONTROL,
    DYNAMIC_SKILL,
    SELF_WRITTEN,
    SkillRef,
    TreatmentCatalog,
    dynamic_treatment,
    kind_treatments,
    load_treatments,
)
from scaffold.errors import SelectionError
from tests.support.factories import TaskFactory


def load(factory: TaskFactory) -> TreatmentCatalog:
    return load_treatments([factory.treatments_dir])


def test_each_kind_and_a_combination_load_from_yaml(factory: TaskFactory) -> None:
    skill = factory.skill("report")
    pool = factory.root / "pool"
    pool.mkdir()
    factory.treatments(
        "kinds.yaml",
        {
            "DYNAMIC_SKILL_NUDGE": {"skills_of": DYNAMIC_SKILL, "nudge": True},
            "REPORT_PLUS_2_DISTRACTORS": {"skills": [str(skill)], "distractors": {"count": 2, "pool": "../pool"}},
            "DYNAMIC_SKILL_NUDGE_PLUS_3_DISTRACTORS": {
                "skills_of": DYNAMIC_SKILL,
                "nudge": True,
                "distractors": {"count": 3, "seed": 7},
            },
            "SELF_WRITTEN": {"self_written": True},
        },
    )
    catalog = load(factory)
    assert not catalog.problems(), [str(p) for p in catalog.problems()]
    nudged = catalog.treatments["DYNAMIC_SKILL_NUDGE"]
    assert nudged.nudge and nudged.skills_of == DYNAMIC_SKILL and nudged.is_kind
    among = catalog.treatments["REPORT_PLUS_2_DISTRACTORS"]
    assert among.distractors == Distractors(2, pool.resolve(), 0) and among.skill_names == ("report",)
    both = catalog.treatments["DYNAMIC_SKILL_NUDGE_PLUS_3_DISTRACTORS"]
    assert both.nudge and both.distractors == Distractors(3, None, 7)  # no pool: the corpus's other tasks
    assert catalog.treatments[SELF_WRITTEN].self_written
    assert not catalog.treatments[CONTROL].is_kind


@pytest.mark.parametrize(
    ("body", "key", "message"),
    [
        ({"distractors": {"count": 0}}, "X.distractors.count", "at least 1"),
        ({"distractors": {"count": 2, "pool": "missing"}}, "X.distractors.pool", "does not exist"),
        ({"distractors": {"count": 2, "colour": "red"}}, "X.distractors.colour", ""),
        ({"nudge": "yes"}, "X.nudge", ""),
        ({"skills_of": "X"}, "X.skills_of", "a treatment with skills to build on"),
    ],
)
def test_mistakes_name_the_key(factory: TaskFactory, body: dict[str, object], key: str, message: str) -> None:
    factory.treatments("kinds.yaml", {"X": body})
    problems = load(factory).broken["X"]
    assert any(p.key == key and message in p.message for p in problems), [str(p) for p in problems]


def test_control_cannot_be_of_a_kind(factory: TaskFactory) -> None:
    factory.treatments("c.yaml", {CONTROL: {"nudge": True}})
    assert "cannot hold skills" in str(load(factory).broken[CONTROL][0])


def test_skills_of_a_missing_treatment_is_broken_once_every_treatment_is_in(factory: TaskFactory) -> None:
    factory.treatments("kinds.yaml", {"DYNAMIC_SKILL_NUDGE": {"skills_of": DYNAMIC_SKILL, "nudge": True}})
    catalog = load(factory).checked()
    problem = catalog.broken["DYNAMIC_SKILL_NUDGE"][0]
    assert problem.key == "DYNAMIC_SKILL_NUDGE.skills_of" and "--skill-path" in problem.message
    with_skill = load(factory).with_treatment(dynamic_treatment(factory.skill("report"))).checked()
    assert "DYNAMIC_SKILL_NUDGE" in with_skill.treatments


def test_names_say_what_the_kind_is() -> None:
    assert kind_name(DYNAMIC_SKILL, nudge=True) == "DYNAMIC_SKILL_NUDGE"
    assert kind_name(DYNAMIC_SKILL, distractors=3) == "DYNAMIC_SKILL_PLUS_3_DISTRACTORS"
    assert kind_name(DYNAMIC_SKILL, distractors=3, nudge=True) == "DYNAMIC_SKILL_NUDGE_PLUS_3_DISTRACTORS"
    assert kind_name(SELF_WRITTEN) == SELF_WRITTEN


def test_the_options_treatments(tmp_path: Path) -> None:
    names = [t.name for t in kind_treatments(distractors=2, pool=tmp_path, nudge=True, self_written=True)]
    assert names == ["DYNAMIC_SKILL_NUDGE", "DYNAMIC_SKILL_PLUS_2_DISTRACTORS", SELF_WRITTEN]
    assert kind_treatments() == ()
    with pytest.raises(SelectionError, match="give --distractors N"):
        kind_treatments(pool=tmp_path)
    with pytest.raises(SelectionError, match="no such folder"):
        kind_treatments(distractors=1, pool=tmp_path / "missing")


def test_the_nudge_is_one_line_naming_the_agents_skills_folder() -> None:
    line = nudge_line(".agents/skills")
    assert "\n" not in line and "`.agents/skills/`" in line and line.startswith("Skills are installed")


def _pool(names: list[str]) -> list[SkillRef]:
    return [SkillRef(name, Path("/pool") / name) for name in names]


NAMES = st.lists(st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True), min_size=1, max_size=12, unique=True)


@settings(max_examples=200, deadline=None)
@given(names=NAMES, seed=st.integers(0, 2**32), task=st.text(max_size=20), data=st.data())
def test_the_draw_is_the_seeds_and_never_the_skill_under_test(
    names: list[str], seed: int, task: str, data: st.DataObject
) -> None:
    tested = data.draw(st.sampled_from(names))
    count = data.draw(st.integers(0, len(names) - 1))
    spec = Distractors(count, None, seed)
    under_test = [SkillRef(tested, Path("/skills") / tested)]
    args = {"task": task, "treatment": "T", "under_test": under_test, "where": "the pool"}
    first = draw_distractors(_pool(names), spec, **args)  # type: ignore[arg-type]
    shuffled = data.draw(st.permutations(_pool(names)))
    assert draw_distractors(shuffled, spec, **args) == first  # type: ignore[arg-type]
    assert len(first) == count and tested not in {s.name for s in first}
    assert len({s.name for s in first}) == count


def test_the_draw_changes_with_the_seed_and_the_task() -> None:
    pool = _pool([f"skill-{i}" for i in range(20)])
    under_test = [SkillRef("mine", Path("/skills/mine"))]

    def draw(seed: int, task: str) -> tuple[str, ...]:
        drawn = draw_distractors(
            pool, Distractors(3, None, seed), task=task, treatment="T", under_test=under_test, where="p"
        )
        return tuple(s.name for s in drawn)

    assert len({draw(seed, "a") for seed in range(10)}) > 1
    assert len({draw(0, task) for task in "abcdefghij"}) > 1


def test_a_pool_too_small_is_a_clear_error() -> None:
    under_test = [SkillRef("a", Path("/skills/a"))]
    with pytest.raises(SelectionError) as caught:
        draw_distractors(
            _pool(["a", "b"]), Distractors(2), task="t", treatment="X", under_test=under_test, where="the pool P"
        )
    message = str(caught.value)
    assert "X: distractors.count is 2 but the pool P holds only 1 skill(s)" in message
    assert "lower the count" in message

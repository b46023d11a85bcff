"""Evaluation profiles: the registry, inference from the task, and resolution override > task > inference."""

from __future__ import annotations

from typing import Any

import pytest

from scaffold.catalog.tasks import Task, load_task
from scaffold.errors import ProfileError
from scaffold.rubrics import generic, profiles
from scaffold.rubrics.profiles import (
    COMET_WORKFLOW,
    GENERIC,
    Profile,
    get_profile,
    infer_profile,
    known_profiles,
    register,
    resolve_profile,
)
from tests.support.factories import TaskFactory


def _never(data: Any) -> Any:
    raise AssertionError("not scored in these tests")


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A registry holding only the built-in generic profile, undone after the test."""
    monkeypatch.setattr(profiles, "_REGISTRY", {GENERIC: get_profile(GENERIC)})
    # The other built-ins (comet-workflow, authoring-skill) are registered on first use: kept out here.
    monkeypatch.setattr(profiles, "_BUILTINS", {})


@pytest.fixture
def with_workflow(registry: None) -> Profile:
    """The generic profile plus a comet-workflow profile (and one more) registered for the test."""
    register(Profile("other", "another profile", _never))
    return register(Profile(COMET_WORKFLOW, "comet workflow", _never))


def make_task(factory: TaskFactory, name: str, *, category: str = "generic", profile: str | None = None) -> Task:
    evaluation = {"profile": profile} if profile is not None else {}
    return load_task(factory.task(name, metadata={"category": category}, evaluation=evaluation))


# --- the registry -------------------------------------------------------------------------------


def test_generic_is_known() -> None:
    assert GENERIC in known_profiles()
    profile = get_profile(GENERIC)
    assert profile.name == "generic"
    assert profile.score is generic.score


def test_known_profiles_are_sorted(with_workflow: Profile) -> None:
    assert known_profiles() == ["comet-workflow", "generic", "other"]


def test_unknown_profile_lists_the_known_ones(registry: None) -> None:
    with pytest.raises(ProfileError) as info:
        get_profile("nope")

    assert str(info.value) == "unknown evaluation profile 'nope'; known profiles: generic"


def test_registering_the_same_profile_twice_is_harmless(registry: None) -> None:
    profile = Profile("mine", "mine", _never)

    assert register(profile) is profile
    assert register(profile) is profile
    assert get_profile("mine") is profile


def test_registering_another_profile_under_a_taken_name_fails(registry: None) -> None:
    register(Profile("mine", "mine", _never))

    with pytest.raises(ProfileError, match="profile 'mine' is registered twice"):
        register(Profile("mine", "impostor", _never))
    assert get_profile("mine").description == "mine"


def test_real_registry_never_holds_test_profiles() -> None:
    assert "other" not in known_profiles()


# --- inference ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "category", "expected"),
    [
        ("plain", "comet", COMET_WORKFLOW),
        ("comet-build", "generic", COMET_WORKFLOW),
        ("comet-build", "comet", COMET_WORKFLOW),
        ("plain", "generic", GENERIC),
        ("comet", "generic", GENERIC),
        ("cometx-build", "generic", GENERIC),
        ("my-comet-task", "generic", GENERIC),
        ("plain", "comets", GENERIC),
        ("plain", "Comet", GENERIC),
    ],
)
def test_infer_profile(factory: TaskFactory, name: str, category: str, expected: str) -> None:
    assert infer_profile(make_task(factory, name, category=category)) == expected


# --- resolution ---------------------------------------------------------------------------------


def test_inference_is_used_without_override_or_task_profile(factory: TaskFactory, with_workflow: Profile) -> None:
    assert resolve_profile(make_task(factory, "comet-x")) is with_workflow
    assert resolve_profile(make_task(factory, "plain")).name == GENERIC


def test_task_profile_beats_inference(factory: TaskFactory, with_workflow: Profile) -> None:
    task = make_task(factory, "comet-x", category="comet", profile="generic")

    assert resolve_profile(task).name == GENERIC


def test_override_beats_task_and_inference(factory: TaskFactory, with_workflow: Profile) -> None:
    task = make_task(factory, "comet-x", category="comet", profile=COMET_WORKFLOW)

    assert resolve_profile(task, "other").name == "other"
    assert resolve_profile(task).name == COMET_WORKFLOW
    assert resolve_profile(task, None).name == COMET_WORKFLOW


def test_unknown_override_names_the_command_line_option(factory: TaskFactory, registry: None) -> None:
    task = make_task(factory, "plain", profile="generic")

    with pytest.raises(ProfileError) as info:
        resolve_profile(task, "nope")

    assert str(info.value) == "--profile: unknown evaluation profile 'nope'; known profiles: generic"


def test_unknown_task_profile_names_the_task_toml_key(factory: TaskFactory, registry: None) -> None:
    task = make_task(factory, "plain", profile="typo")

    with pytest.raises(ProfileError) as info:
        resolve_profile(task)

    assert str(info.value) == (
        f"{task.root / 'task.toml'}: [evaluation] profile: unknown evaluation profile 'typo'; known profiles: generic"
    )


def test_unknown_inferred_profile_says_it_was_inferred(factory: TaskFactory, registry: None) -> None:
    task = make_task(factory, "comet-x")

    with pytest.raises(ProfileError) as info:
        resolve_profile(task)

    assert str(info.value) == (
        "inferred for task 'comet-x' from its category/name: "
        "unknown evaluation profile 'comet-workflow'; known profiles: generic"
    )


def test_a_built_in_is_made_once_when_two_threads_first_ask_for_it(
    registry: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two trials of one process may be in flight (pytest_comet.ahead): both ask for the profile at once."""
    import threading

    both = threading.Barrier(2)
    made: list[Profile] = []

    def build() -> Profile:
        made.append(Profile("slow", "made slowly", _never))
        return made[-1]

    monkeypatch.setattr(profiles, "_BUILTINS", {"slow": build})
    seen: list[Profile] = []

    def ask() -> None:
        both.wait()
        seen.append(get_profile("slow"))

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 1 and seen == [made[0], made[0]]

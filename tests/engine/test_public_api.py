"""The public API is small and explicit: what ``__all__`` lists exists, and nothing private is exported."""

from __future__ import annotations

import importlib

import pytest

import comet_engine

MODULES = [
    "comet_engine",
    "comet_engine.canonical",
    "comet_engine.checks",
    "comet_engine.definitions",
    "comet_engine.errors",
    "comet_engine.graph",
    "comet_engine.guardrails",
    "comet_engine.machine",
    "comet_engine.runtime",
    "comet_engine.state",
]


@pytest.mark.parametrize("name", MODULES)
def test_every_exported_name_exists_and_is_public(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    assert len(exported) == len(set(exported))
    for item in exported:
        assert not item.startswith("_"), item
        assert hasattr(module, item), f"{name}.__all__ lists {item!r}, which does not exist"


def test_the_python_workflow_api_is_importable_from_the_package() -> None:
    wanted = {
        "define_workflow",
        "skill",
        "tool",
        "approval",
        "evidence",
        "child",
        "handoff",
        "checkpoint",
        "Runtime",
        "Outcome",
        "ActionFailed",
        "Guardrails",
        "Check",
        "REASONS",
        "RejectedError",
        "ConflictError",
        "DefinitionError",
    }
    assert wanted <= set(comet_engine.__all__)
    assert comet_engine.REASONS == (
        "completed",
        "approval-required",
        "evidence-required",
        "executor-required",
        "action-in-flight",
        "execution-unknown",
        "failed",
        "action-limit",
        "cancelled",
        "idle",
    )

"""A skill's evaluation manifest as typed values: ``comet/eval.yaml``, ``apiVersion: comet.eval/v1alpha1``,
``kind: SkillEvalManifest``. Where a manifest is found, and the manifest of a skill folder without one.

Reading and checking a manifest file is scaffold.skill_eval.manifest_check's; every value here is one
that passed it (or was built by the harness: synthesized, generated).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from scaffold.catalog.treatments import CONTROL
from scaffold.errors import ManifestError, Problem

__all__ = [
    "API_VERSION",
    "KIND",
    "CommandExpect",
    "Endpoint",
    "EvalSkill",
    "Expect",
    "InlineTask",
    "JsonExpect",
    "Manifest",
    "ManifestSource",
    "QualityGates",
    "Reporting",
    "SkillRef",
    "SourceTask",
    "find_manifest",
    "package_root_of",
    "synthesize_manifest",
]

API_VERSION = "comet.eval/v1alpha1"
KIND = "SkillEvalManifest"
DEFAULT_COMMAND_TIMEOUT = 120
ManifestSource = Literal["explicit", "auto-detected", "synthesized", "generated"]


# --- the manifest's typed form --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EvalSkill:
    """The skill under evaluation: its name (the treatment's skill), its folder, its evaluation profile."""

    name: str
    root: Path
    profile: str | None = None


SkillRef = EvalSkill
"""The contract's name for EvalSkill (one class: scaffold.catalog.treatments has its own SkillRef)."""


@dataclass(frozen=True, slots=True)
class JsonExpect:
    """``expect.json[i]``: the value at *path* (our JSONPath subset) of the JSON *file* equals *equals*."""

    file: str
    path: str
    equals: object


@dataclass(frozen=True, slots=True)
class CommandExpect:
    """``expect.commands[i]``: *run* in the workspace after the agent (``sh -c``); exit 0 passes."""

    run: str
    timeout: int = DEFAULT_COMMAND_TIMEOUT


@dataclass(frozen=True, slots=True)
class Expect:
    """An inline task's deterministic checks; paths are relative to the task's workspace."""

    files: tuple[str, ...] = ()
    contains: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    json: tuple[JsonExpect, ...] = ()
    commands: tuple[CommandExpect, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.files or self.contains or self.json or self.commands)


@dataclass(frozen=True, slots=True)
class InlineTask:
    """A task written in the manifest: the prompt, the starting files (*workspace*, absolute, or None for
    an empty workspace), the checks and the judge's rubric criteria."""

    name: str
    prompt: str
    workspace: Path | None
    expect: Expect
    rubric: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SourceTask:
    """A task folder inside the skill package (task.toml, instruction.md, ...), used as it is."""

    name: str
    folder: Path


@dataclass(frozen=True, slots=True)
class QualityGates:
    """``evaluation.qualityGates``: per-task floors over the non-baseline treatments (None: not set), and
    ``gates``, expressions in the ``--gate`` grammar checked on the session's analysis."""

    min_weighted_score: float | None = None
    min_pass_at_1: float | None = None
    max_instability_gap: float | None = None
    gates: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return (
            self.min_weighted_score is None
            and self.min_pass_at_1 is None
            and self.max_instability_gap is None
            and not self.gates
        )


@dataclass(frozen=True, slots=True)
class Endpoint:
    """``execution`` or ``judge``: which agent, model and API (None: not set in the manifest)."""

    agent: str | None = None
    model: str | None = None
    base_url: str | None = None


@dataclass(frozen=True, slots=True)
class Reporting:
    suite: str | None = None
    config: Path | None = None
    """The report configuration file, absolute."""


@dataclass(frozen=True, slots=True)
class Manifest:
    """A valid manifest. ``source`` says where it came from; the caller sets it (dataclasses.replace)."""

    file: Path | None
    name: str
    skill: EvalSkill
    source: ManifestSource = "explicit"
    description: str = ""
    tasks: tuple[InlineTask | SourceTask, ...] = ()
    recommended_tasks: tuple[str, ...] = ()
    baseline_treatments: tuple[str, ...] = (CONTROL,)
    quality_gates: QualityGates = QualityGates()
    required_skills: tuple[str, ...] | None = None
    """``evaluation.requiredSkills``, written to each inline task. None (not set): the skill under test is
    required when the task runs under DYNAMIC_SKILL (scaffold.rubrics.expected); ``()`` (set to ``[]``):
    no skill is, and skill_invocation is N/A."""
    expected_artifacts: tuple[str, ...] = ()
    interaction: Mapping[str, object] | None = None
    """task.toml's ``[interaction]`` keys (snake_case), or None when the manifest sets none."""
    execution: Endpoint = Endpoint()
    judge: Endpoint = Endpoint()
    reporting: Reporting = Reporting()
    generation_hash: str | None = None
    generation_file: str | None = None

    @property
    def task_names(self) -> tuple[str, ...]:
        return tuple(task.name for task in self.tasks)


# --- entry points ----------------------------------------------------------------------------------------


def find_manifest(skill_root: Path) -> Path | None:
    """``<skill>/comet/eval.yaml``, else ``eval.yml``, else None. Something else under that name (a
    folder) is a ManifestError: the skill would otherwise run as if it declared nothing."""
    for name in ("eval.yaml", "eval.yml"):
        candidate = skill_root / "comet" / name
        if candidate.is_file():
            return candidate
        if candidate.exists() or candidate.is_symlink():
            what = "a folder" if candidate.is_dir() else "not a readable file (a broken symlink?)"
            raise ManifestError(
                [Problem(candidate, f"is {what}; the manifest must be a YAML file (rename or remove it)")]
            )
    return None


def package_root_of(manifest_file: Path) -> Path:
    """The skill package a manifest belongs to: the folder holding ``comet/``, else the manifest's folder."""
    folder = manifest_file.absolute().parent
    return folder.parent if folder.name == "comet" else folder


def synthesize_manifest(skill_root: Path) -> Manifest:
    """The manifest of a skill folder without eval.yaml: named after the folder, no tasks declared."""
    root = Path(os.path.normpath(skill_root.expanduser().absolute()))
    if not (root / "SKILL.md").is_file():
        raise ManifestError([Problem(root / "SKILL.md", "missing: a skill folder must contain SKILL.md")])
    return Manifest(file=None, source="synthesized", name=root.name, skill=EvalSkill(root.name, root))

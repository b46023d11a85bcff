"""What ``comet eval`` evaluates: TARGET, ``--manifest``, ``--skill-path`` and ``--skill-name`` read as one
manifest (explicit, auto-detected beside the skill, or synthesized for a skill without eval.yaml).

Contradictory combinations are usage errors naming both sides.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Collection
from pathlib import Path

from scaffold.catalog.treatments import SKILL_NAME_RULE, skill_name_problem
from scaffold.errors import SelectionError
from scaffold.skill_eval.manifest import Manifest, find_manifest, synthesize_manifest
from scaffold.skill_eval.manifest_check import load_manifest

__all__ = ["UsageError", "resolve_target"]


class UsageError(SelectionError):
    """A command line that contradicts itself or names nothing usable (exit status 2)."""


def resolve_target(args: argparse.Namespace, builtin: Collection[str]) -> tuple[str, Manifest]:
    """The manifest to evaluate and how the target reads (``manifest <path>`` or ``skill <path>``);
    UsageError for a contradiction, naming both sides."""
    target: Path | None = args.target
    if target is not None and (args.manifest or args.skill_path):
        given = " and ".join(
            f"{flag} {value}"
            for flag, value in (("--manifest", args.manifest), ("--skill-path", args.skill_path))
            if value
        )
        raise UsageError(f"TARGET {target} and {given} both name what to evaluate: pass one of them")
    if args.manifest and args.skill_path:
        raise UsageError(
            f"--manifest {args.manifest} and --skill-path {args.skill_path} both name what to evaluate: pass one "
            "(a manifest names its skill in skill.source)"
        )
    explicit_manifest: Path | None = args.manifest
    skill: Path | None = args.skill_path
    if target is not None:
        if not target.exists():
            raise UsageError(
                f"TARGET {target}: no such file or folder (a skill folder, its SKILL.md or comet/eval.yaml)"
            )
        if target.is_dir() and target.suffix in (".yaml", ".yml") and not (target / "SKILL.md").exists():
            explicit_manifest = target  # meant as the manifest: loading it says what is wrong with it
        elif target.is_dir():
            skill = target
        elif target.name == "SKILL.md":
            skill = target.parent
        elif target.suffix in (".yaml", ".yml"):
            explicit_manifest = target
        else:
            raise UsageError(f"TARGET {target}: not a skill folder, a SKILL.md or a manifest (.yaml/.yml)")
    if explicit_manifest is None and skill is None:
        raise UsageError(
            "name the skill to evaluate: comet eval ./my-skill (a skill folder, its SKILL.md or comet/eval.yaml)"
        )
    if explicit_manifest is not None:
        manifest = dataclasses.replace(load_manifest(explicit_manifest, builtin_tasks=builtin), source="explicit")
        described = f"manifest {manifest.file}"
    else:
        assert skill is not None
        if not skill.is_dir():
            raise UsageError(f"--skill-path {skill}: no such folder")
        found = find_manifest(skill)
        if found is not None:
            manifest = dataclasses.replace(load_manifest(found, builtin_tasks=builtin), source="auto-detected")
        else:
            manifest = synthesize_manifest(skill)
        described = f"skill {skill.absolute()}"
    if args.skill_name:
        if manifest.file is not None and args.skill_name != manifest.skill.name:
            raise UsageError(
                f"--skill-name {args.skill_name} contradicts skill.name {manifest.skill.name!r} of {manifest.file}: "
                "drop --skill-name or change the manifest"
            )
        if skill_name_problem(args.skill_name):
            raise UsageError(f"--skill-name {args.skill_name!r}: {SKILL_NAME_RULE} (it names the skill's folder)")
        manifest = dataclasses.replace(manifest, skill=dataclasses.replace(manifest.skill, name=args.skill_name))
    elif manifest.file is None and skill_name_problem(manifest.skill.name):
        raise UsageError(
            f"{manifest.skill.root}: the skill is installed under its folder's name {manifest.skill.name!r}, "
            f"and a skill name {SKILL_NAME_RULE}: pass --skill-name NAME"
        )
    return described, manifest

"""Front end 1: skill packages (``SKILL.md`` + ``comet/*.yaml``) and the ``comet skill`` command.

A package is loaded and validated at the file boundary (:mod:`.package`), found by name or path
(:mod:`.resolve`), frozen into an immutable, hash-verified snapshot at run start (:mod:`.snapshot`),
and run in the original Comet engine's on-disk layouts (:mod:`.layout`).
"""

from __future__ import annotations

from comet_engine.skills.package import (
    ACTION_TYPES,
    PackageGuardrails,
    RuntimeCheck,
    SkillPackage,
    load_package,
    load_package_texts,
)
from comet_engine.skills.resolve import BUILTIN_ROOT, Resolved, resolve
from comet_engine.skills.snapshot import Snapshot, load_snapshot, skill_hash, write_snapshot

__all__ = [
    "ACTION_TYPES",
    "BUILTIN_ROOT",
    "PackageGuardrails",
    "Resolved",
    "RuntimeCheck",
    "SkillPackage",
    "Snapshot",
    "load_package",
    "load_package_texts",
    "load_snapshot",
    "resolve",
    "skill_hash",
    "write_snapshot",
]

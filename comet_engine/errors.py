"""Typed errors of the engine. Every message names the run, step, file or field at fault and the fix.

Callers branch on the class, never on the message: a lost compare-and-swap race is ``ConflictError``
(reload and retry), a bad definition is ``DefinitionError`` (with every problem listed), a rejected
outcome or decision is ``RejectedError`` (nothing was written).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "ConflictError",
    "CorruptRunError",
    "DefinitionError",
    "EngineError",
    "RejectedError",
    "RunExistsError",
    "RunNotFoundError",
    "StoreError",
    "UnsafePathError",
]


class EngineError(Exception):
    """Base of every error the engine raises on purpose."""


class DefinitionError(EngineError):
    """A workflow definition or skill package is invalid; ``problems`` lists every problem found."""

    def __init__(self, message: str, problems: Sequence[str] = ()) -> None:
        self.problems = tuple(problems) or (message,)
        super().__init__(message if not problems else message + "\n  - " + "\n  - ".join(self.problems))


class RejectedError(EngineError):
    """An outcome, decision or evidence was refused; the run is unchanged. ``code`` is stable for callers."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(message)


class StoreError(EngineError):
    """A store could not read or write a run."""


class ConflictError(StoreError):
    """A compare-and-swap lost: the run's revision moved since it was loaded. Reload and retry."""

    def __init__(self, run_id: str, expected: int, actual: int | None) -> None:
        self.run_id, self.expected, self.actual = run_id, expected, actual
        super().__init__(
            f"run {run_id!r}: revision conflict (expected {expected}, found {actual}); "
            "another writer committed first: reload the run and retry"
        )


class RunNotFoundError(StoreError):
    """No run with this id exists in the store."""


class RunExistsError(StoreError):
    """A run with this id already exists (change mode allows one run per directory)."""


class CorruptRunError(StoreError):
    """A stored run cannot be read back consistently (a damaged file, a hash that does not verify)."""


class UnsafePathError(StoreError):
    """A path escapes its sandbox: absolute, ``~``, a drive letter, or ``..``."""


# --- skill packages (front end 1) ------------------------------------------------------------------------


class SkillPackageError(DefinitionError):
    """A skill package (SKILL.md, comet/*.yaml) is invalid; every problem names its file and field."""


class SkillNotFoundError(EngineError, LookupError):
    """No skill package of this name was found where resolution looks (fail closed: no fallback)."""


class SnapshotError(CorruptRunError):
    """A skill snapshot does not verify: a file changed after the run pinned it, or one is missing."""


__all__ += ["SkillNotFoundError", "SkillPackageError", "SnapshotError"]


# --- core runtime --------------------------------------------------------------------------------------


class UnknownDefinitionError(EngineError):
    """A run or child step names a workflow definition this runtime has not registered."""


__all__ += ["UnknownDefinitionError"]

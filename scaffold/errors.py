"""The harness's exceptions. Every message names the file, the field and what would fix it.

CometError
├── LoadError (ValueError)        a task, index, treatment or adapter file is invalid
│   ├── TaskError
│   ├── TreatmentError
│   └── ManifestError             a skill's eval.yaml (comet.eval/v1alpha1) is invalid
├── ProfileError (ValueError)     an unknown evaluation profile
├── SelectionError (ValueError)   --task / --treatment / --agent name nothing we know
├── WorkspaceError (RuntimeError) a workspace could not be prepared, used or cleaned
│   └── SkillLeakError            an image meant to be without the task's skills has a SKILL.md
├── AgentError (RuntimeError)     an agent could not be started or its output not read
├── GenerationError (RuntimeError) comet eval could not generate a skill's tasks (exit 3)
├── RecordError (ValueError)      a trial record is unreadable or of another schema
├── ReportError (ValueError)      no records, shards that must not be merged, a bad report setting
│   └── MixedError                treatments produced by different agents, models, backends, ...
└── GateError (ValueError)        a --gate expression that does not parse
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "AgentError",
    "CometError",
    "GateError",
    "GenerationError",
    "InputWarning",
    "LoadError",
    "ManifestError",
    "MixedError",
    "Problem",
    "ProfileError",
    "RecordError",
    "ReportError",
    "SelectionError",
    "SkillLeakError",
    "TaskError",
    "TreatmentError",
    "WorkspaceError",
]

_MISSING = object()


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with one input file: where, which key, which value, and what is allowed."""

    file: Path
    message: str
    key: str = ""
    value: object = _MISSING

    def __str__(self) -> str:
        where = f"{self.file}"
        if self.key:
            where += f": {self.key}"
        got = "" if self.value is _MISSING else f" (got {self.value!r})"
        return f"{where}: {self.message}{got}"


class CometError(Exception):
    """Base of every error the harness raises on purpose."""


class LoadError(CometError, ValueError):
    """One or more problems found while loading input files."""

    def __init__(self, problems: list[Problem] | tuple[Problem, ...]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class TaskError(LoadError):
    """A task folder, its task.toml or the tasks index is invalid."""


class TreatmentError(LoadError):
    """A treatments file is invalid."""


class ManifestError(LoadError):
    """A skill's evaluation manifest (eval.yaml) is invalid: every problem, each naming the file and path."""


class GenerationError(CometError, RuntimeError):
    """``comet eval`` could not generate tasks for a skill (twice an invalid answer, a failed generator agent).

    ``report_path`` is the partial report written for it; ``comet eval`` exits 3 (no answer was produced).
    """

    def __init__(self, message: str, report_path: Path | None = None) -> None:
        super().__init__(message)
        self.report_path = report_path


class ProfileError(CometError, ValueError):
    """An evaluation profile name that is not registered."""


class SelectionError(CometError, ValueError):
    """A selection (task, treatment, agent, backend) that matches nothing known."""


class WorkspaceError(CometError, RuntimeError):
    """A workspace could not be created, used or removed."""


class VerifierError(CometError, RuntimeError):
    """A Harbor-format verifier ended without a reward (no reward file, or an empty or unreadable one): a
    harness error, excluded from the statistics with its reason, never a failed trial."""


class SkillLeakError(WorkspaceError):
    """An image built (or picked) for a treatment without the task's own skills still holds a SKILL.md:
    the comparison with the skills would be void. *paths*: where, inside *image*."""

    def __init__(self, image: str, paths: tuple[str, ...] | list[str]) -> None:
        self.image = image
        self.paths = tuple(paths)
        shown = ", ".join(self.paths[:10]) + (f" and {len(self.paths) - 10} more" if len(self.paths) > 10 else "")
        super().__init__(
            f"the image {image}, built without the task's skills, still has a skill: {shown} (a Dockerfile line "
            "other than COPY/ADD skills puts it there, or the base image has it)"
        )


class AgentError(CometError, RuntimeError):
    """An agent could not be started, or its output could not be understood."""


class RecordError(CometError, ValueError):
    """A trial record that cannot be read."""


class ReportError(CometError, ValueError):
    """Reports cannot be made: no records, shards that must not be merged, or a bad report setting."""


class MixedError(ReportError):
    """Treatments that differ in more than the treatment (agent, model, ...): pairing them would credit the
    treatment with that difference. Raised unless mixed comparisons are allowed (``--allow-mixed``)."""


class GateError(CometError, ValueError):
    """A ``--gate`` expression that does not parse."""


class TracingError(CometError, RuntimeError):
    """A tracing suite (``--suite langsmith|langfuse``) cannot start: its SDK is missing, its credentials
    are not set or are refused. Raised before any trial; the message never holds a credential."""


class InputWarning(UserWarning):
    """A problem in an input file that this run does not use (a broken treatments file no selected task
    names): not an error, but never silent. ``-W error::scaffold.errors.InputWarning`` makes it one."""


class TaskWarning(UserWarning):
    """What loading a task noticed and accepted (scaffold.catalog.tasks.Task.warnings: an index.yaml entry that
    disagrees with task.toml, which wins): the task runs as its task.toml says, and the run says so once.
    ``-W error::scaffold.errors.TaskWarning`` makes it an error."""

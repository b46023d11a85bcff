"""The harness's exceptions. Every message names the file, the field and what would fix it.

CometError
├── LoadError (ValueError)        a task, index, treatment or adapter file is invalid
│   ├── TaskError
│   ├── TreatmentError
│   └── ManifestError             a skill's eval.yaml (comet.eval/v1alpha1) is invalid
├── ProfileError (ValueError)     an unknown evaluation profile
├── SelectionError (ValueError)   --task / --treatment / --agent name nothing we know
├── BusyError (RuntimeError)      an experiment is being run by another session
├── WorkspaceError (RuntimeError) a workspace could not be prepared, used or cleaned
│   ├── SkillLeakError            an image meant to be without the task's skills has a SKILL.md
│   └── ImageBuildError           a task's image cannot be built: a step of its Dockerfile failed
├── AgentError (RuntimeError)     an agent could not be started or its output not read
├── GenerationError (RuntimeError) comet eval could not generate a skill's tasks (exit 3)
├── RecordError (ValueError)      a trial record is unreadable or of another schema
├── ReportError (ValueError)      no records, shards that must not be merged, a bad report setting
│   └── MixedError                treatments produced by different agents, models, backends, ...
└── GateError (ValueError)        a --gate expression that does not parse

ExitStatus is the one table of how the harness's commands end (``comet``, ``comet eval``, the reporting
status of a pytest session); each command's ``--help`` and docs/reference/cli.md are made from, or tested
against, EXIT_MEANINGS.
"""

from __future__ import annotations

import enum
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = [
    "EXIT_MEANINGS",
    "AgentError",
    "BusyError",
    "CometError",
    "ExitStatus",
    "GateError",
    "GenerationError",
    "ImageBuildError",
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
    "exit_status_help",
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


class BusyError(CometError, RuntimeError):
    """An experiment folder is held by a live process of another session (scaffold.experiment.owner)."""


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


class ImageBuildError(WorkspaceError):
    """A task's image cannot be built: the builder ran its Dockerfile and a step failed (a RUN that exited
    non-zero, a COPY without a source, an instruction it does not know). The same content fails the same
    way again, so it is the task's (or the harness's) error, never environment noise: not retried, and not
    built again for the session's other trials. (An engine or network that fails under a build is a plain
    WorkspaceError.) *image*: the tag, which names the content; *step*: the failing instruction as the
    builder showed it ("" when it failed before any); *log*: the build log, its end when long."""

    def __init__(self, message: str, *, image: str, step: str = "", log: str = "") -> None:
        super().__init__(message)
        self.image = image
        self.step = step
        self.log = log

    def prefixed(self, prefix: str) -> ImageBuildError:
        """The same error, its message after *prefix* (``task NAME: ``)."""
        return ImageBuildError(prefix + str(self), image=self.image, step=self.step, log=self.log)


class AgentError(CometError, RuntimeError):
    """An agent could not be started, or its output could not be understood."""


class RecordError(CometError, ValueError):
    """A trial record that cannot be read."""


class ReportError(CometError, ValueError):
    """Reports cannot be made: no records, shards that must not be merged, or a bad report setting."""


class DiskFullError(CometError, OSError):
    """A file of state could not be written: its file system is full (or the user's disk quota is used).
    Also an OSError, so that code which already survives a failed write survives this one."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.written: tuple[Path, ...] = ()
        """The files of the same batch written before this one (a writer of several fills it in)."""
        super().__init__(
            f"no space left to write {path} ({reason}): the disk holding {path.parent} is full; "
            "that file was not written (an earlier version of it is unchanged)"
        )

    def __str__(self) -> str:
        return str(self.args[0])


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
    disagrees with task.toml, which wins; on docker, an image whose stand-in has another Python, both named):
    the task runs as it is, and the run says so once.
    ``-W error::scaffold.errors.TaskWarning`` makes it an error."""


class ExitStatus(enum.IntEnum):
    """How a command of the harness ends. A pytest session keeps pytest's own statuses (0-5) and adds
    REPORTING and TERMINATED; ``comet skill`` (the engine's command line) has a table of its own, beside
    it."""

    OK = 0
    FAILED = 1
    USAGE = 2
    NO_ANSWER = 3
    NOT_COMPARABLE = 4
    UNREADABLE = 5
    REPORTING = 6
    DISK_FULL = 7
    INTERRUPTED = 130
    BROKEN_PIPE = 141
    TERMINATED = 143


EXIT_MEANINGS: Final[Mapping[ExitStatus, str]] = {
    ExitStatus.OK: "every gate and quality gate passed; without a gate, the command did what it was asked "
    "(comet eval: the run produced an answer)",
    ExitStatus.FAILED: "a gate or quality gate failed (each is listed), a task could not run, or a check "
    "found problems (comet tasks check, comet engines check)",
    ExitStatus.USAGE: "a usage or configuration error (a bad option, target, manifest, gate, agent or "
    "missing credential): nothing ran",
    ExitStatus.NO_ANSWER: "comet eval could not produce an answer: task generation failed (a partial report "
    "is written), or every trial was excluded as environment noise or ended in a harness error",
    ExitStatus.NOT_COMPARABLE: "comet report: the treatments differ in more than the treatment (agent, "
    "model, backend, ...): nothing is written (--allow-mixed reports them anyway)",
    ExitStatus.UNREADABLE: "comet report: the gates passed (or there are none) but some record files could "
    "not be read: the reports are written from the others and list them",
    ExitStatus.REPORTING: "--suite langsmith|langfuse: the trials and local reports are complete and every "
    "gate passed, but reporting to the service failed (comet report --suite NAME DIR uploads again)",
    ExitStatus.DISK_FULL: "comet report: a disk was full: the message names the file not written and the "
    "disk; the trial records are untouched (run the command again once there is space)",
    ExitStatus.INTERRUPTED: "interrupted (Ctrl-C)",
    ExitStatus.BROKEN_PIPE: "the reader of the output went away (comet report ... | head -1); the reports "
    "are written all the same",
    ExitStatus.TERMINATED: "stopped by SIGTERM (a CI job cancelled, timeout, docker stop): the running trials "
    "were ended, the finished ones keep their records and the reports are written for them",
}
"""What each status means, for every command that can end with it."""


def exit_status_help(statuses: Iterable[ExitStatus] = tuple(ExitStatus)) -> str:
    """The ``exit status:`` part of a command's ``--help``: *statuses*, each with its meaning."""
    lines = ["exit status:"]
    for status in statuses:
        wrapped = textwrap.wrap(EXIT_MEANINGS[status], width=96)
        lines.append(f"  {int(status):<3}  {wrapped[0]}")
        lines.extend(f"       {line}" for line in wrapped[1:])
    return "\n".join(lines) + "\n"

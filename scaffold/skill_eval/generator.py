"""I/O. The task generator session: the selected agent writes 2-4 inline tasks for a skill, in its own workspace.

Never a subject trial: it has its own task folder (the built-in generic-skill-smoke environment, the
skill's snapshot copied in under ``skill-under-test/``), its own backend and workspace root, its own
timeout, and nothing of it is recorded as a trial. At most two attempts: the second carries the first
one's error (a repair), so one slip of the model is survivable and a model that cannot follow the
format costs two calls, not a loop.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from scaffold.agents import create_agent
from scaffold.agents.base import Agent, AgentRequest
from scaffold.catalog.builtin import builtin_environment
from scaffold.catalog.tasks import Task, load_task
from scaffold.catalog.treatments import Treatment
from scaffold.errors import AgentError, WorkspaceError
from scaffold.skill_eval.answer import AnswerError, check_tasks, find_tasks
from scaffold.skill_eval.prompt import OUTPUT_FILE, SKILL_DIR, generator_prompt
from scaffold.skill_eval.snapshot import SkillSnapshot
from scaffold.trajectory import Trajectory
from scaffold.workspaces.backends import create_backend
from scaffold.workspaces.base import Backend

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "GENERATOR_VERSION",
    "MAX_ATTEMPTS",
    "Attempt",
    "GeneratorResult",
    "GeneratorSettings",
    "run_generator",
]

GENERATOR_VERSION: Final = "comet-task-generator.v1"
DEFAULT_TIMEOUT_S: Final = 300.0
MAX_ATTEMPTS: Final = 2
_TASK_NAME: Final = "comet-task-generation"

Validate = Callable[[list[Any]], list[str]]
"""Problems of a candidate task list (empty: accepted); the cache module's manifest validation."""


@dataclass(frozen=True, slots=True)
class GeneratorSettings:
    """Who generates and where: the evaluation's agent, model and endpoint, on the run's backend."""

    agent: str
    model: str | None = None
    base_url: str | None = None
    backend: str = "local"
    timeout_s: float = DEFAULT_TIMEOUT_S
    workspace_root: Path | None = None
    """Where the generator's workspaces go; None: ``$TMPDIR/comet-eval`` (the sessions' default)."""


@dataclass(frozen=True, slots=True)
class Attempt:
    number: int
    duration_s: float
    exit_code: int | None
    timed_out: bool
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    error: str | None
    answer_source: str | None = None
    """Where the accepted JSON was read: the output file, or the agent's final text."""

    def to_json(self) -> dict[str, Any]:
        return {
            "attempt": self.number,
            "duration_seconds": round(self.duration_s, 3),
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_cost_usd": self.cost_usd,
            "error": self.error,
            "answer_source": self.answer_source,
        }


@dataclass(frozen=True, slots=True)
class GeneratorResult:
    tasks: tuple[Mapping[str, Any], ...]
    """The accepted tasks; empty when every attempt failed."""
    attempts: tuple[Attempt, ...]
    duration_s: float
    agent_version: str | None = None
    scratch: Path | None = None
    """The generator's own folder (its task, ``logs/attempt-N/agent.*``): the caller copies what it needs
    and removes it."""
    error: str | None = field(default=None)

    @property
    def ok(self) -> bool:
        return bool(self.tasks)


def run_generator(
    snapshot: SkillSnapshot,
    *,
    skill_name: str,
    profile: str | None,
    settings: GeneratorSettings,
    validate: Validate,
    env: Mapping[str, str] | None = None,
    environment_dir: Path | None = None,
) -> GeneratorResult:
    """Up to two attempts of the generator; the accepted tasks, or the last error (never raises for a
    bad answer or a failed agent; configuration errors such as missing credentials do raise)."""
    agent = create_agent(settings.agent, env, model=settings.model, base_url=settings.base_url)
    scratch = Path(tempfile.mkdtemp(prefix="comet-task-generation-"))
    started = time.monotonic()
    attempts: list[Attempt] = []
    version: str | None = None
    try:
        task = _generator_task(scratch, environment_dir or builtin_environment())
        backend = create_backend(
            settings.backend,
            workspace_root=settings.workspace_root or Path(tempfile.gettempdir()) / "comet-eval",
            network=agent.network,
            agent_install=agent.install,
        )
        error: str | None = None
        try:
            backend.prepare(task)
            for number in range(1, MAX_ATTEMPTS + 1):
                prompt = generator_prompt(snapshot, skill_name=skill_name, profile=profile, previous_error=error)
                trajectory, answers = _attempt(backend, agent, task, snapshot, prompt, settings, scratch, number)
                version = version or trajectory.agent_version
                tasks, error, source = _accept(trajectory, answers, validate)
                attempts.append(_attempt_record(number, trajectory, error, source))
                if tasks is not None:
                    return GeneratorResult(tuple(tasks), tuple(attempts), time.monotonic() - started, version, scratch)
        except (WorkspaceError, AgentError) as exc:
            # The generator's workspace or agent broke (an image that does not build, a CLI that does not
            # start): generation failed, which the caller reports like an invalid answer (exit 3).
            error = f"task_generation: the generator session failed: {type(exc).__name__}: {exc}"
        finally:
            backend.close()
        return GeneratorResult((), tuple(attempts), time.monotonic() - started, version, scratch, error)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise


def _generator_task(scratch: Path, environment: Path) -> Task:
    """A task folder of its own for the generator: the built-in environment, its answer file as the
    artifact (the task loader's rules hold for it like for any task; it is never validated or recorded)."""
    folder = scratch / _TASK_NAME
    (folder / "solution").mkdir(parents=True)
    shutil.copytree(environment, folder / "environment", symlinks=True)
    (folder / "instruction.md").write_text("Generate evaluation tasks (the prompt is given directly).\n")
    (folder / "solution" / "solve.sh").write_text("#!/bin/sh\n# The generator has no reference solution.\nexit 1\n")
    (folder / "task.toml").write_text(
        "[metadata]\n"
        f'name = "{_TASK_NAME}"\n'
        'description = "comet eval: the task generator session (never a subject trial)."\n'
        "\n[environment]\n"
        'dockerfile = "environment/Dockerfile"\n'
        "\n[validation]\n"
        f'target_artifacts = ["{OUTPUT_FILE}"]\n'
        "\n[evaluation]\n"
        'profile = "generic"\n'
    )
    return load_task(folder)


def _attempt(
    backend: Backend,
    agent: Agent,
    task: Task,
    snapshot: SkillSnapshot,
    prompt: str,
    settings: GeneratorSettings,
    scratch: Path,
    number: int,
) -> tuple[Trajectory, list[tuple[str, str]]]:
    """One generator run in a fresh workspace: its trajectory and the texts that may hold the answer."""
    log_dir = scratch / "logs" / f"attempt-{number}"
    log_dir.mkdir(parents=True)
    workspace = backend.create(task, f"{scratch.name}/attempt-{number}")
    try:
        for file in snapshot.files:
            workspace.write_text(f"{SKILL_DIR}/{file.path}", file.content)
        request = AgentRequest(
            task, Treatment("TASK_GENERATION", "no skills: the skill is given as files"), prompt,
            settings.timeout_s, log_dir, settings.model,
        )  # fmt: skip
        trajectory = agent.run(workspace, request)
        answers: list[tuple[str, str]] = []
        written = workspace.read_text(OUTPUT_FILE)
        if written and written.strip():
            answers.append((OUTPUT_FILE, written))
        if trajectory.final_text.strip():
            answers.append(("final_text", trajectory.final_text))
        return trajectory, answers
    finally:
        backend.destroy(workspace, keep=False)


def _accept(
    trajectory: Trajectory, answers: Sequence[tuple[str, str]], validate: Validate
) -> tuple[list[Any] | None, str | None, str | None]:
    """The accepted tasks (or None), the error to repair, and where the answer was read."""
    if not answers:
        if trajectory.exit_code not in (0, None) or trajectory.timed_out or trajectory.errors:
            how = "timed out" if trajectory.timed_out else f"exit {trajectory.exit_code}"
            detail = "; ".join(trajectory.errors)[-1000:]
            return None, f"task_generation: the generator agent failed ({how}): {detail or 'no output'}", None
        return None, "task_generation: the generator did not return JSON", None
    first_error: str | None = None
    for source, text in answers:
        try:
            tasks = find_tasks(text)
        except AnswerError as exc:
            first_error = first_error or str(exc)
            continue
        problems = check_tasks(tasks) or validate(tasks)
        if not problems:
            return tasks, None, source
        # The file and the final text usually say the same; the first one's problems are the ones to fix.
        first_error = first_error or "task_generation: the generated tasks are invalid:\n- " + "\n- ".join(problems)
    return None, first_error, None


def _attempt_record(number: int, trajectory: Trajectory, error: str | None, source: str | None) -> Attempt:
    tokens = trajectory.tokens
    return Attempt(
        number=number,
        duration_s=trajectory.duration_s,
        exit_code=trajectory.exit_code,
        timed_out=trajectory.timed_out,
        input_tokens=tokens.input if tokens else None,
        output_tokens=tokens.output if tokens else None,
        cost_usd=trajectory.cost_usd,
        error=error,
        answer_source=source,
    )

"""One trial, start to finish: workspace, skills, agent, validation, rubric, record, cleanup; and again, in
a fresh workspace, while it is excluded as noise a new attempt may not meet (``--retry-excluded``).

This is the library entry point the pytest plugin calls for every case; it never imports pytest.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal

from msgspec.structs import replace

from scaffold import __version__
from scaffold.agents.base import Agent, AgentRequest
from scaffold.catalog.builtin import distractor_pool
from scaffold.catalog.tasks import Task, TaskCatalog, render_instruction
from scaffold.catalog.treatment_kinds import draw_distractors, nudge_line
from scaffold.catalog.treatments import (
    CONTROL,
    TASK_SKILLS,
    SkillRef,
    Treatment,
    TreatmentCatalog,
    task_treatment,
)
from scaffold.errors import CometError, ImageBuildError, RecordError
from scaffold.experiment import (
    BUILD_LOG_FILE,
    CHANGES_FILE,
    INSTRUCTION_FILE,
    PROGRESS_FILE,
    TRANSCRIPT_FILE,
    Experiment,
    config_changes,
)
from scaffold.experiment.cases import Case
from scaffold.experiment.progress import TrialProgress
from scaffold.judge import Judge, JudgeRequest
from scaffold.records import AgentInfo, Endpoint, JudgeInfo, TrialError, TrialRecord, Verdict, WorkspaceInfo
from scaffold.records.files import read_record, stream_names, write_record
from scaffold.records.noise import UNCLASSIFIED, classify, retryable
from scaffold.reports.transcripts import write_transcript
from scaffold.rubrics import Dimension, RubricInput
from scaffold.rubrics.expected import expected_skills
from scaffold.rubrics.profiles import resolve_profile
from scaffold.rubrics.workflow_setup import (
    GUARD_SCRIPTS,
    hook_settings,
    hook_settings_file,
    instructions,
    with_profile_defaults,
)
from scaffold.trajectory import Trajectory
from scaffold.trial.attempts import clear_for_attempt, kept_attempts, set_aside
from scaffold.trial.changes import Changes, capture, diff_text, record_changes
from scaffold.trial.logs import cap_agent_logs
from scaffold.trial.self_written import PLACEHOLDER, SKILL_FOLDER, WrittenSkills, write_prompt, write_skills
from scaffold.trial.start_gate import StartGate
from scaffold.util.atomic import write_text_atomic
from scaffold.util.hashing import hash_json, hash_tree
from scaffold.validation.harbor import uv_shim_needed, verify
from scaffold.validation.results import ValidationOutcome
from scaffold.validation.runner import validate
from scaffold.workspaces.base import Backend, ValidationPolicy, Workspace

__all__ = ["KeepPolicy", "RetryNotStarted", "Runner", "Settings", "TrialResult", "TrialStopped"]

KeepPolicy = Literal["failed", "all", "none"]


_UNJUDGED: Final[tuple[tuple[Dimension, ...], JudgeInfo | None]] = ((), None)

NOT_THE_SKILL: Final = frozenset({".comet"})
"""Top-level entries of a skill folder that are not the skill: neither installed nor hashed."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Options that shape every trial of a session (and so belong in the configuration hash)."""

    backend: str = "local"
    agent: str = "oracle"
    profile: str | None = None
    model: str | None = None
    keep_workspaces: KeepPolicy = "failed"
    rerun_errors: bool = False
    baseline: str = CONTROL
    """The session's baseline treatment (rubrics may score it differently: scaffold.rubrics.RubricInput)."""
    judge: tuple[tuple[str, str], ...] = ()
    """The judge settings (agent, model, base URL without credentials) when any is set: recorded in each
    trial's configuration (the judge itself: Runner.judge)."""
    retry_excluded: int = 0
    """More attempts a trial may have while it is excluded as retryable noise (scaffold.records.noise.
    retryable); 0: none. Not in the configuration hash: it changes how often a trial is tried, not what
    a trial is. The session's default is ``--retry-excluded``'s, 2; a runner made by hand retries nothing."""


class TrialStopped(BaseException):
    """Raised in a trial the runner was told to stop (``Runner.stop``): it leaves no record, so a resumed
    session runs it again. A BaseException, as Ctrl-C is: the trial's error handling must not record it."""


class RetryNotStarted(Exception):
    """A retry the runner's ``admit_retry`` refused (a budget reached): the trial has no record, its earlier
    attempts are kept in its folder, and a resumed session goes on with them. ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class TrialResult:
    """A finished trial: its record, where the record is, and whether an earlier run wrote it."""

    record: TrialRecord
    record_path: Path
    resumed: bool = False


@dataclass
class Runner:
    """Runs cases of one experiment in one process (each pytest-xdist worker has its own)."""

    tasks: TaskCatalog
    treatments: TreatmentCatalog
    experiment: Experiment
    settings: Settings
    backend: Backend
    agent: Agent
    worker: str = "main"
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    judge: Judge | None = None
    """The LLM judge (scaffold.judge), None when it is off."""
    uv_binaries: Callable[[], Path] | None = None
    """A host folder with ``uv`` and ``uvx`` for the stand-in of Harbor verifiers that bootstrap uv from
    the internet (scaffold.validation.harbor); called only when a task needs it."""
    start_gate: StartGate | None = None
    """Spaces the starts of trials on one machine (scaffold.trial.start_gate); None: every trial starts at once.
    The session sets it for agents that call a model."""
    upcoming: Callable[[], Case | None] | None = None
    """The case this runner runs after the current one (pytest's next item; None from it: none follows),
    told to the backend before each workspace is made (``Backend.expect``); None: not known."""
    admit_retry: Callable[[Case], str | None] | None = None
    """Asked before each retry of a case: None, it may start (and is counted: a retry is a trial start to
    ``--max-trials`` and ``--max-cost``); else why not, and the runner raises RetryNotStarted. None: every
    retry starts."""
    _hashes: dict[Path, str] = field(default_factory=dict)
    # Each task's instruction.md as first read: the same text as the content hash in its records (an edit
    # during the session changes neither), read once instead of once a trial.
    _instructions: dict[Path, str] = field(default_factory=dict)
    _configs: dict[tuple[str, str], tuple[dict[str, Any], str]] = field(default_factory=dict)
    _prepared: set[tuple[str, bool]] = field(default_factory=set)
    _pools: dict[Path | None, tuple[SkillRef, ...]] = field(default_factory=dict)
    # Two trials of one runner may be in flight at once (pytest_comet.ahead): the backend's calls and the
    # caches are taken one thread at a time; the workspaces themselves are each trial's own.
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _live: dict[int, Workspace] = field(default_factory=dict)
    _stopped: threading.Event = field(default_factory=threading.Event)

    def stop(self) -> None:
        """Stop every trial in flight: end what their agents started; each then raises TrialStopped,
        leaving no record. For a trial started ahead of its item when the session ends without the
        item (Ctrl-C): the runner runs nothing after this."""
        self._stopped.set()
        with self._lock:
            live = list(self._live.values())
        for workspace in live:
            with contextlib.suppress(Exception):  # a workspace going away as it is stopped
                workspace.begin_validation(ValidationPolicy.STRICT)

    def _check_stopped(self) -> None:
        if self._stopped.is_set():
            raise TrialStopped

    def config_for(self, case: Case) -> dict[str, Any]:
        """The resolved configuration of a case: everything that could change its result, minus the trial."""
        task, treatment = self._resolve(case)
        profile = resolve_profile(task, self.settings.profile)
        effective = with_profile_defaults(task, profile).spec.interaction
        skills = [
            {"name": s.name, "content_hash": self._hash(s.path, skip=NOT_THE_SKILL), "variant": s.variant}
            for s in treatment.skills
        ]
        if treatment.self_written:  # written in the trial: named here, its content in the record's self_written
            skills.append({"name": PLACEHOLDER, "content_hash": None, "variant": "self-written"})
        return {
            "task": {"name": task.name, "content_hash": self._hash(task.root)},
            "treatment": {
                "name": treatment.name,
                "skills": skills,
                "claude_md_hash": hash_json(treatment.claude_md) if treatment.claude_md else None,
                # Only for a kind, so the configuration (and hash) of every other treatment is unchanged.
                **({"kind": self._kind_config(treatment)} if treatment.is_kind else {}),
            },
            "agent": {
                "name": self.agent.name,
                "model": self.agent.model or self.settings.model,
                "install": self.agent.install.key if self.agent.install else None,
            },
            "backend": self.backend.name,
            "profile": profile.name,
            "timeouts": {
                "agent_s": task.spec.environment.timeout_sec,
                "validation_s": task.spec.validation.timeout,
            },
            # Only when set, so the configuration (and its hash) of every other session is unchanged.
            **({"judge": dict(self.settings.judge)} if self.settings.judge else {}),
            # Only a baseline other than the default is named: the configuration (and so the hash) of
            # every experiment run before the baseline could change a score stays as it was.
            **({"baseline": self.settings.baseline} if self.settings.baseline != CONTROL else {}),
            # The profile's interaction defaults, only where they change the task's own.
            **(
                {"interaction": effective.model_dump(include={"mode", "max_turns", "simulator_prompt"})}
                if effective is not task.spec.interaction
                else {}
            ),
        }

    def _configured(self, case: Case) -> tuple[dict[str, Any], str]:
        """The case's configuration and its hash, worked out once per task and treatment: nothing in it
        changes during the runner's life (content hashes are taken once too), and the trial is not in it."""
        key = (case.task, case.treatment)
        found = self._configs.get(key)
        if found is None:
            config = self.config_for(case)
            found = self._configs[key] = (config, hash_json(config))
        return found

    def run(self, case: Case) -> TrialResult:
        """Run *case*, or return its existing record when the experiment already has one.

        Configuration errors (unknown profile) raise before anything is created; failures after the
        workspace exists are recorded with verdict ``error`` so ``--rerun-errors`` can retry them.

        An attempt excluded as retryable noise (scaffold.records.noise.retryable) is run again in a fresh
        workspace, up to ``settings.retry_excluded`` more times: its files move to ``attempts/<K>/`` of
        the trial folder with its own record, and the final record is the last attempt's, listing the
        earlier ones (``attempts``). A trial an earlier session left with attempts but no record (stopped
        mid-retry) goes on from them. Stopped (Ctrl-C, ``stop``) or refused a retry (RetryNotStarted), a
        trial leaves no record and keeps its attempts.
        """
        config, config_hash = self._configured(case)
        record_path = self.experiment.record_path(case)
        if record_path.exists():
            existing = read_record(record_path)
            if existing.config_hash != config_hash:
                # Name what changed, old and new: "a task, skill or option changed" leaves the user to guess.
                changes = config_changes(existing.config, config) or [
                    f"config_hash: {existing.config_hash} -> {config_hash}"
                ]
                raise RecordError(
                    f"{record_path}: this trial was recorded with another configuration; changed: "
                    + "; ".join(changes)
                    + ". Use a new --experiment-id, or delete the record to run it again"
                )
            if not (existing.verdict == "error" and self.settings.rerun_errors):
                return TrialResult(existing, record_path, resumed=True)
        trial_dir = self.experiment.trial_dir(case)
        # A rerun of an errored record starts over; a trial without a record goes on from its attempts.
        earlier = clear_for_attempt(
            trial_dir, kept_attempts(trial_dir, case, config_hash) if not record_path.exists() else []
        )
        while True:
            record = self._execute(case, config, config_hash, trial_dir, attempt=len(earlier) + 1)
            record = replace(record, attempts=tuple(earlier))
            if not (retryable(record.noise) and len(earlier) < self.settings.retry_excluded):
                break
            earlier.append(set_aside(trial_dir, record, len(earlier) + 1))
            _write_transcript(trial_dir / earlier[-1].folder, record)
            self._check_stopped()  # stopped (Runner.stop): no retry, and the attempts stay for a resume
            refused = self.admit_retry(case) if self.admit_retry is not None else None
            if refused is not None:
                raise RetryNotStarted(refused)
        write_record(record_path, record)
        # After the record, which the page is made from: a failed trial's test message names its transcript
        # (pytest_comet.trial), which must then be there to open.
        _write_transcript(trial_dir, record)
        (trial_dir / PROGRESS_FILE).unlink(missing_ok=True)  # the record says it all now
        return TrialResult(record, record_path)

    def _validate(
        self, task: Task, workspace: Workspace, trial_dir: Path, context: dict[str, Any]
    ) -> ValidationOutcome:
        if task.format == "harbor":
            # Harbor's contract: the verifier runs beside what the agent left running (a server it
            # started is part of what is tested), with the network the task allows.
            workspace.begin_validation(ValidationPolicy.SHARED)
            uv = self.uv_binaries() if self.uv_binaries is not None and uv_shim_needed(task) else None
            return verify(task, workspace, trial_dir, uv_binaries=uv)
        # The agent is done: nothing it started runs on, nothing reaches out, before validation looks.
        workspace.begin_validation(ValidationPolicy.STRICT)
        return validate(task, workspace, trial_dir, context)

    def _resolve(self, case: Case) -> tuple[Task, Treatment]:
        """The case's task and treatment as the trial runs them. TASK_SKILLS is the task's own skills; a
        Harbor task's image keeps its environment's skills under that treatment only (every other one,
        CONTROL and our YAML treatments, runs on an image without them)."""
        task = self.tasks.tasks[case.task]
        treatment = self.treatments.treatments[case.treatment]
        if case.treatment == TASK_SKILLS:
            treatment = task_treatment(task.skills_dir)
        elif treatment.is_kind:
            treatment = self._kind(task, treatment)
        if task.format == "harbor" and TASK_SKILLS not in (case.treatment, treatment.skills_of):
            task = dataclasses.replace(task, without_skills=True)
        return task, treatment

    def _kind(self, task: Task, treatment: Treatment) -> Treatment:
        """A treatment of a kind as *task*'s trials run it: the skills it builds on first (another
        treatment's, a Harbor task's own for TASK_SKILLS), then its own, then the distractors drawn for the task."""
        base: tuple[SkillRef, ...] = ()
        if treatment.skills_of == TASK_SKILLS:
            base = task_treatment(task.skills_dir).skills
        elif treatment.skills_of is not None:
            base = self.treatments.treatments[treatment.skills_of].skills
        skills = (*base, *treatment.skills)
        drawn: tuple[SkillRef, ...] = ()
        spec = treatment.distractors
        if spec is not None:
            pool = self._pool(spec.pool, task)
            drawn = draw_distractors(
                pool, spec, task=task.name, treatment=treatment.name, under_test=skills, where=spec.pool_words()
            )
        return dataclasses.replace(treatment, skills=skills, drawn=drawn)

    def _pool(self, folder: Path | None, task: Task) -> tuple[SkillRef, ...]:
        """The skills *task*'s distractors are drawn from (scaffold.catalog.builtin.distractor_pool); a
        folder's are read once for every trial."""
        if folder is None:
            others = (other.skills_dir for other in self.tasks.tasks.values() if other.name != task.name)
            return distractor_pool(None, others)
        with self._lock:
            if folder not in self._pools:
                self._pools[folder] = distractor_pool(folder, ())
            return self._pools[folder]

    def _kind_config(self, treatment: Treatment) -> dict[str, Any]:
        """What a kind adds to a trial's configuration: the drawn distractors by name and content hash (the
        draw is the seed's, task's and treatment's: the same for every trial of them), the nudge's wording,
        the self-written prompt's hash."""
        out: dict[str, Any] = {}
        if treatment.skills_of is not None:
            out["skills_of"] = treatment.skills_of
        if treatment.distractors is not None:
            out["distractors"] = {
                "count": treatment.distractors.count,
                "seed": treatment.distractors.seed,
                "pool": "folder" if treatment.distractors.pool is not None else "corpus",
                "drawn": [
                    {"name": s.name, "content_hash": self._hash(s.path, skip=NOT_THE_SKILL)} for s in treatment.drawn
                ],
            }
        if treatment.nudge:
            out["nudge"] = nudge_line(self.agent.traits.skills_dir)
        if treatment.self_written:
            out["self_written"] = {"prompt_hash": hash_json(write_prompt(""))}
        return out

    def _instruction_text(self, task: Task) -> str:
        path = task.instruction_path
        text = self._instructions.get(path)
        if text is None:
            text = self._instructions[path] = path.read_text(encoding="utf-8")
        return text

    def _hash(self, path: Path, *, skip: frozenset[str] = frozenset()) -> str:
        with self._lock:
            if path not in self._hashes:
                self._hashes[path] = hash_tree(path, skip=skip)
            return self._hashes[path]

    def _execute(  # noqa: PLR0915 - the phases of one trial, in order, in one place
        self, case: Case, config: dict[str, Any], config_hash: str, trial_dir: Path, *, attempt: int = 1
    ) -> TrialRecord:
        task, treatment = self._resolve(case)
        profile = resolve_profile(task, self.settings.profile)
        task = with_profile_defaults(task, profile)  # the interaction the trial runs: the task's, else its profile's
        # Before the trial's clock starts: a wait for the machine's cores is the harness's, not the trial's
        # time. Recorded (start_wait_s) when there was one; it is not part of duration_s.
        waited = self.start_gate.admit(*self.backend.start_slots()).waited if self.start_gate is not None else 0.0
        started, t0 = self.clock(), time.monotonic()
        progress = TrialProgress(  # comet status
            trial_dir / PROGRESS_FILE,
            case,
            self.worker,
            self.clock,
            retry=attempt - 1,
            retries=self.settings.retry_excluded,
        )
        phases: dict[str, float] = {"start_wait_s": waited} if waited else {}
        errors: list[TrialError] = []
        trajectory: Trajectory | None = None
        changed: Changes | None = None
        outcome: ValidationOutcome | None = None
        workspace: Workspace | None = None
        verdict: Verdict = "error"
        rubric, judged, keep = None, _UNJUDGED, False
        written: WrittenSkills | None = None
        try:
            if treatment.self_written:
                progress.phase("agent")
                mark = time.monotonic()
                self._check_stopped()
                written = self._write_skills(task, case, attempt, trial_dir)
                treatment = dataclasses.replace(treatment, skills=(*treatment.skills, *written.skills))
                phases["self_written_s"] = time.monotonic() - mark
            progress.phase("workspace")
            mark = time.monotonic()
            self._check_stopped()
            workspace = self._create(task, case, attempt)
            self._install(workspace, treatment, profile.name)
            phases["workspace_s"] = time.monotonic() - mark

            mark = time.monotonic()
            before = capture(workspace)  # what the agent starts from (scaffold.trial.changes: never raises)
            phases["changes_s"] = time.monotonic() - mark

            mark = time.monotonic()
            run_id = f"{self.experiment.id}-{case.id}"
            text = self._instruction_text(task)
            prompt = _instruction(text, task, treatment, case, workspace.root, run_id, trial_dir)
            request = AgentRequest(
                task, treatment, prompt, task.spec.environment.timeout_sec, trial_dir, self.settings.model
            )
            progress.phase("agent")
            try:
                with progress.watching(trial_dir):
                    trajectory = self.agent.run(workspace, request)
            finally:  # parsed and scrubbed by now: what is kept as evidence is bounded, however it ended
                with contextlib.suppress(OSError):
                    cap_agent_logs(trial_dir)
            phases["agent_s"] = time.monotonic() - mark
            self._check_stopped()  # its agent was ended by Runner.stop: what follows would measure nothing

            mark = time.monotonic()
            # Before validation adds its files; what the agent wrote of its own key is not repeated.
            changed = record_changes(workspace, before, trial_dir / CHANGES_FILE, self.agent.redact)
            phases["changes_s"] += time.monotonic() - mark

            progress.phase("validation")
            mark = time.monotonic()
            context = {"task": task.name, "treatment": treatment.name, "trial": case.trial, "run_id": run_id}
            outcome = self._validate(task, workspace, trial_dir, context)
            phases["validation_s"] = time.monotonic() - mark

            progress.phase("scoring")
            mark = time.monotonic()
            rubric = profile.score(
                RubricInput(
                    task,
                    treatment.skill_names,
                    self.agent.traits.invokes_skills,
                    trajectory,
                    outcome,
                    treatment=treatment.name,
                    skills_under_test=treatment.is_kind,
                    baseline=self.settings.baseline,
                    files=workspace,
                    outputs=outcome.outputs,
                )
            )
            phases["scoring_s"] = time.monotonic() - mark
            # The verdict is the rules' alone: the judge below can neither change nor fail it.
            verdict = "passed" if outcome.all_passed and not rubric.hard_failures else "failed"
            progress.phase("judge" if self.judge is not None else "scoring")
            judged = self._judge(
                JudgeRequest(
                    prompt,
                    task.spec.evaluation.rubric_criteria,
                    outcome,
                    workspace,
                    changes=diff_text(changed) if changed.error is None else "",
                    redact=self.agent.redact,
                ),
                profile.name,
                phases,
            )
        except CometError as exc:
            errors.append(TrialError(type(exc).__name__, str(exc)))
            if isinstance(exc, ImageBuildError):  # the image cannot be built: its log is the evidence
                _keep_build_log(trial_dir, exc)
        except Exception as exc:  # a harness bug must still leave a record saying what happened
            errors.append(TrialError(type(exc).__name__, f"unexpected: {exc!r}"))
        except BaseException:  # Ctrl-C or a stopped worker: no record, so a resume runs it again
            progress.remove()
            if workspace is not None:
                self._destroy(workspace, keep=False)
            raise
        if self._stopped.is_set():  # stopped while it failed (its agent ended): not a result either
            progress.remove()
            if workspace is not None:
                self._destroy(workspace, keep=False)
            raise TrialStopped
        if workspace is not None:
            policy = self.settings.keep_workspaces
            keep = policy == "all" or (policy == "failed" and verdict != "passed")
            self._destroy(workspace, keep=keep)
        progress.phase("done")  # the record is written next
        finished = self.clock()
        record = TrialRecord(
            experiment_id=self.experiment.id,
            case_id=case.id,
            task=case.task,
            treatment=case.treatment,
            trial=case.trial,
            config=config,
            config_hash=config_hash,
            verdict=verdict,
            profile=profile.name,
            started_at=started.isoformat(),
            finished_at=finished.isoformat(),
            duration_s=round(time.monotonic() - t0, 6),
            phases={k: round(v, 6) for k, v in phases.items()},
            agent=AgentInfo(
                self.agent.name,
                config["agent"]["model"],
                trajectory.agent_version if trajectory else None,
                self._endpoint(),
            ),
            trajectory=trajectory,
            checks=outcome.checks if outcome else (),
            expected_artifacts=dict(outcome.expected_artifacts) if outcome else {},
            # Judge dimensions after the rule ones; the weighted score is the rules' (it leaves them out).
            dimensions=(*(rubric.dimensions if rubric else ()), *judged[0]),
            weighted_score=rubric.weighted_score if rubric else None,
            judge=judged[1],
            hard_failures=rubric.hard_failures if rubric else (),
            errors=tuple(errors),
            workspace=WorkspaceInfo(
                self.backend.name,
                keep,
                str(workspace.host_path) if keep and workspace and workspace.host_path else None,
                self.backend.engine,
            ),
            changes=changed.counts if changed is not None and changed.error is None else None,
            worker=self.worker,
            harness_version=__version__,
            skill_sources={
                **(
                    {PLACEHOLDER: f"the agent, before the task ({trial_dir / SKILL_FOLDER})"}
                    if treatment.self_written
                    else {}
                ),
                **{s.name: s.source or str(s.path) for s in treatment.installed},
            },
            # The rubric's own rule, recorded for the reports' "skill used in x of y trials".
            expected_skills=(
                expected_skills(task, treatment.name, treatment.skill_names, under_test=treatment.is_kind).names
                if rubric is not None and self.agent.traits.invokes_skills
                else ()
            ),
            skill_evidence=self.agent.traits.invokes_skills,
            noise=UNCLASSIFIED,
            # Listed once here, so reports of 100,000 trials need not list every folder again.
            streams=stream_names(trial_dir),
            self_written=written.info if written is not None else None,
        )
        # Classified from the finished record, so re-classifying an old record gives the same answer.
        return replace(record, noise=classify(record))

    def _create(self, task: Task, case: Case, attempt: int, *, scratch: bool = False) -> Workspace:
        with self._lock:
            prepared = (task.name, task.without_skills)
            if prepared not in self._prepared:
                self.backend.prepare(task)
                self._prepared.add(prepared)
            if self.upcoming is not None and not scratch:
                following = self.upcoming()
                self.backend.expect(following.task if following is not None else None)
            key = self.experiment.workspace_key(case, attempt) + ("-self-written" if scratch else "")
            workspace = self.backend.create(task, key)
            self._live[id(workspace)] = workspace
            return workspace

    def _write_skills(self, task: Task, case: Case, attempt: int, trial_dir: Path) -> WrittenSkills:
        """The self-written pre-phase (scaffold.trial.self_written), in a scratch workspace of the task's kind
        that is gone before the task's own is made."""
        scratch = self._create(task, case, attempt, scratch=True)
        try:
            run_id = f"{self.experiment.id}-{case.id}-self-written"
            text = render_instruction(
                self._instruction_text(task),
                {
                    "run_id": run_id,
                    "task_name": task.name,
                    "treatment": case.treatment,
                    "trial": str(case.trial),
                    "workspace": scratch.root,
                },
            )
            written = write_skills(self.agent, scratch, task, text, trial_dir, self.settings.model)
        finally:
            self._destroy(scratch, keep=False)
        self._check_stopped()
        return written

    def _destroy(self, workspace: Workspace, *, keep: bool) -> None:
        with self._lock:
            self._live.pop(id(workspace), None)
            self.backend.destroy(workspace, keep=keep)

    def _judge(
        self, request: JudgeRequest, profile: str, phases: dict[str, float]
    ) -> tuple[tuple[Dimension, ...], JudgeInfo | None]:
        """The LLM judge's dimensions and record entry, while the workspace still exists (nothing when it
        is off). It never raises for a judge problem (scaffold.judge): the rule scores always stand."""
        if self.judge is None:
            return _UNJUDGED
        mark = time.monotonic()
        judged = self.judge.judge(dataclasses.replace(request, comet=profile == "comet-workflow"))
        phases["judge_s"] = time.monotonic() - mark
        return judged

    def _endpoint(self) -> Endpoint:
        """Where the agent's model is served, as a kind: never the URL, which may carry a key or a token.
        The kind is enough to tell a scripted run on this machine from a provider's model (reports refuse
        to compare the two); it comes from the agent's declared network, not from parsing its settings."""
        network = self.agent.network
        if not network.enabled:
            return "none"
        return "local" if network.on_this_machine else "remote"

    def _install(self, workspace: Workspace, treatment: Treatment, profile: str) -> None:
        """Put the treatment's skills where the agent looks, complete folders; write its instructions (the
        profile's first: scaffold.rubrics.workflow_setup) and register the workflow guard hook when it ships."""
        traits = self.agent.traits
        for skill in treatment.installed:
            dest = f"{traits.skills_dir}/{skill.folder_name}"
            if not (skill.path / ".comet").exists():
                workspace.put(skill.path, dest)
                continue
            # A skill folder that holds a .comet folder (comet eval's runs and cache, a project's engine
            # state) is installed without it: that is not the skill, may hold other trials' records, and
            # changes while trials run.
            for child in sorted(skill.path.iterdir()):
                if child.name not in NOT_THE_SKILL:
                    workspace.put(child, f"{dest}/{child.name}")
        text = instructions(profile, treatment.claude_md)
        if treatment.nudge:  # our one line, last: the question is whether the agent notices the skills
            text = (text + "\n" if text else "") + nudge_line(traits.skills_dir) + "\n"
        if text is not None:
            workspace.write_text(traits.instructions_file, text)
        entry = next((s for s in treatment.skills if s.name == "comet"), None)
        script = next(((rel, run) for rel, run in GUARD_SCRIPTS if entry and (entry.path / rel).is_file()), None)
        if script is not None:
            command = f"{script[1]} {workspace.root}/{traits.skills_dir}/comet/{script[0]}"
            file = hook_settings_file(self.agent.name)
            settings = hook_settings(self.agent.name, workspace.read_text(file), command) if file else None
            if settings is not None:
                workspace.write_text(*settings)


def _instruction(
    text: str, task: Task, treatment: Treatment, case: Case, root: str, run_id: str, trial_dir: Path
) -> str:
    """The prompt the agent is given (*text*, the task's instruction.md), rendered for this trial and kept
    in its folder for the transcript."""
    prompt = render_instruction(
        text,
        {
            "run_id": run_id,
            "task_name": task.name,
            "treatment": treatment.name,
            "trial": str(case.trial),
            "workspace": root,
        },
    )
    write_text_atomic(trial_dir / INSTRUCTION_FILE, prompt, durable=False)  # a view for the transcript
    return prompt


def _keep_build_log(trial_dir: Path, error: ImageBuildError) -> None:
    """The log of the image the trial could not be built in, kept in its folder (build.log), the failing
    step first; bounded by what the error keeps of it (scaffold.workspaces.docker.images.BUILD_LOG_LIMIT)."""
    head = f"# {error.image}: cannot be built; failing step: {error.step or '(before any step)'}\n"
    with contextlib.suppress(OSError):  # evidence beside the record, which says the same in short
        write_text_atomic(trial_dir / BUILD_LOG_FILE, head + error.log, durable=False)


def _write_transcript(trial_dir: Path, record: TrialRecord) -> None:
    """The trial's transcript.html, after its record: a view that can be written again (comet report
    --transcripts), so failing to write it is noted in the log and never fails the trial."""
    try:
        write_transcript(trial_dir, record)
    except Exception as exc:
        logging.getLogger(__name__).warning("%s: not written: %s", trial_dir / TRANSCRIPT_FILE, exc)

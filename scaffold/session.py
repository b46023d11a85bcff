"""One harness session: everything a run resolves before its first trial, the same for pytest and ``comet``.

The pytest plugin (a session per pytest process: the controller and each xdist worker) and every
``comet`` command build a :class:`HarnessSession` from :class:`Options` and ask it for what they need:
the catalogs, the cases, the agent, the experiment, the runner with its backend, the report settings.
So the defaults are decided here once:

* tasks folders: those given (``--tasks-dir``, ``comet tasks list DIR``...), else ``<root>/local/tasks``
  when it exists, else the built-in tasks (scaffold.catalog.builtin). Folders given *replace* the default:
  ``--tasks-dir ~/terminal-bench-2`` runs those tasks, not the built-in ones as well;
* treatments folders: those given, else the ``treatments/`` folder beside each tasks folder (for the
  default, ``<root>/local/treatments``, or the built-in treatments);
* experiments under ``<root>/local/logs`` unless ``--logs-dir``; workspaces under ``$TMPDIR/comet-eval``;
* the backend's network policy from what the agent must reach (scaffold.workspaces.base.AgentNetwork).

Everything is made on first use and kept: a session that never runs a trial never creates a backend,
and one that never compares never parses a gate. Problems are CometErrors naming what to fix; the
plugin turns them into pytest usage errors, the CLI into exit status 2.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from scaffold.agents import create_agent
from scaffold.agents.base import Agent
from scaffold.agents.credentials import load_environment
from scaffold.agents.install import require_program
from scaffold.catalog.builtin import (
    BUILTIN_TASKS_DIR,
    builtin_environment,
    builtin_folders,
    project_logs_dir,
    project_tasks_dir,
)
from scaffold.catalog.tasks import Task, TaskCatalog, load_catalog
from scaffold.catalog.treatments import (
    CONTROL,
    DYNAMIC_SKILL,
    TASK_SKILLS_PLACEHOLDER,
    Treatment,
    TreatmentCatalog,
    dynamic_treatment,
    kind_treatments,
    load_treatments,
    parse_skill_bases,
)
from scaffold.errors import AgentError, Problem, SelectionError
from scaffold.experiment import Experiment, new_experiment_id
from scaffold.experiment.cases import Broken, Case, parse_list, select_cases, unshown_problems
from scaffold.judge.config import judge_enabled, resolve_judge
from scaffold.judge.transport import JudgeRun, check_judge, declared_credentials
from scaffold.reports.config import ReportOutputs, resolve_outputs
from scaffold.skill_eval.project import COMET_FOLDER, comet_folder
from scaffold.skill_eval.resolve import (
    DEFAULT_AGENT,
    Choice,
    Explicit,
    resolve_settings,
    select_tasks,
    with_agent_endpoint,
)
from scaffold.trial.start_gate import DEFAULT_WINDOW_S, LOAD_ENV, StartGate
from scaffold.workspaces.backends import create_backend, sweep_crashed
from scaffold.workspaces.engines import Engine, order, resolve_pool, total_capacity
from scaffold.workspaces.image_aliases import resolve_image_aliases
from scaffold.workspaces.owners import state_root
from scaffold.workspaces.stand_ins import ImageChoice
from scaffold.workspaces.uv_tool import uv_binaries

if TYPE_CHECKING:
    from scaffold.reports.gates import Gate
    from scaffold.skill_eval.manifest import Manifest
    from scaffold.trial.runner import KeepPolicy, Runner, Settings
    from scaffold.workspaces.docker.pool import EngineStatus

__all__ = [
    "HarnessSession",
    "Options",
    "default_workspace_root",
    "refuse_without_solution",
    "task_folders",
    "treatment_folders",
]


@dataclass(frozen=True, slots=True)
class Options:
    """What a user chose for a session, from pytest's options or a ``comet`` command's flags."""

    root: Path
    """The project folder: pytest's rootdir, or the current folder for ``comet``."""
    tasks_dirs: tuple[Path, ...] = ()
    treatments_dirs: tuple[Path, ...] = ()
    skill_bases: tuple[str, ...] = ()
    """``NAME=DIR`` snapshot folders for treatment entries with ``base: NAME``."""
    skill_path: Path | None = None
    """A skill folder to evaluate as treatment DYNAMIC_SKILL, beside CONTROL."""
    skill_name: str | None = None
    distractors: int = 0
    """``--distractors N``: also run DYNAMIC_SKILL among N distractors (scaffold.catalog.treatment_kinds)."""
    skill_pool: Path | None = None
    """``--skill-pool DIR``: the distractors' pool; None: the skills of the corpus's other tasks and the
    built-in pool's (scaffold.catalog.builtin.distractor_pool)."""
    nudge: bool = False
    """``--nudge``: also run DYNAMIC_SKILL_NUDGE."""
    self_written: bool = False
    """``--self-written``: also run SELF_WRITTEN."""
    tasks: tuple[str, ...] = ()
    """Task patterns (comma lists, trailing ``*`` prefixes); empty: every task."""
    treatments: tuple[str, ...] = ()
    """Treatment patterns; empty: each task's default_treatments."""
    count: int = 1
    agent: str = "oracle"
    model: str | None = None
    base_url: str | None = None
    backend: str = "local"
    profile: str | None = None
    keep_workspaces: KeepPolicy = "failed"
    rerun_errors: bool = False
    retry_excluded: int = 2
    """``--retry-excluded``: more attempts a trial excluded as retryable noise may have; 0: none."""
    experiment_id: str | None = None
    """The experiment to write to (an existing one is resumed); None: a new id."""
    logs_dir: Path | None = None
    workspace_root: Path | None = None
    baseline: str = CONTROL
    gates: tuple[str, ...] = ()
    html: bool = False
    report_config: Path | None = None
    manifest: Path | None = None
    """A skill's eval.yaml (``--eval-manifest``): its tasks, its skill as DYNAMIC_SKILL, its quality gates."""
    quick: bool = False
    """With a manifest: run generic-skill-smoke only."""
    project_root: Path | None = None
    """Where a manifest's run files go (``<it>/.comet/eval/...``); default: the skill package root."""
    collect_only: bool = False
    """Nothing is written (pytest's --collect-only): a manifest's tasks are validated in memory."""
    judge_agent: str | None = None
    """The judge settings: validated and recorded in the experiment's configuration only (for now)."""
    judge_model: str | None = None
    judge_base_url: str | None = None
    judge_samples: int = 1
    """``--judge-samples``: answers per trial when the judge is on (scaffold.judge)."""
    image_aliases: tuple[str, ...] = ()
    """``--image-alias REF=LOCAL`` (docker backend): a Harbor Dockerfile's FROM image mapped to a local one."""
    image_alias_file: Path | None = None
    """``--image-alias-file``: a TOML ``[image-aliases]`` table (else ``$COMET_IMAGE_ALIAS_FILE``)."""
    docker_hosts: tuple[str, ...] = ()
    """``--docker-host URL[*N]``: the engines of a pool (scaffold.workspaces.engines)."""
    docker_pool: Path | None = None
    """``--docker-pool FILE``: a pool file (else ``$COMET_DOCKER_POOL``)."""
    require_all_engines: bool = False
    """Refuse to start when an engine of the pool is unreachable, rather than leave it out."""
    start_window: float = DEFAULT_WINDOW_S
    """``--start-window SECONDS``: at most one trial start per core of the machine running the agents in
    any such window, for agents that call a model (scaffold.trial.start_gate); 0 starts every trial at once."""


@dataclass(frozen=True, slots=True)
class EngineReport:
    """What the engines of a pool answered at the start of a session (HarnessSession.engine_report)."""

    live: list[str]
    """The URLs of the engines that answered: the ones the workers bind to."""
    lines: list[str]
    """The report for the terminal's header: the pool, then one line per engine."""
    left_out: list[str]
    """The lines of the engines left out (unreachable): said even under ``-q``."""


_AGENT_ID = re.compile(r"^[a-z][a-z0-9-]{1,31}$")


def task_folders(root: Path, given: Sequence[Path] = ()) -> list[Path]:
    """The tasks folders of a session: those *given*, else ``<root>/local/tasks`` when it exists, else the
    built-in tasks."""
    if given:
        return [Path(p).absolute() for p in given]
    return [project_tasks_dir(root)]


def refuse_without_solution(items: Sequence[Case | Broken], tasks: TaskCatalog) -> list[Case | Broken]:
    """*items* with the cases of each task that has no ``solution/solve.sh`` replaced, once per task, by
    one failing item saying so: the oracle agent runs the reference solution, and there is none to run."""
    out: list[Case | Broken] = []
    refused: set[str] = set()
    for item in items:
        task = tasks.tasks.get(item.task) if isinstance(item, Case) else None
        if task is None or task.has_solution:
            out.append(item)
            continue
        if task.name not in refused:
            refused.add(task.name)
            message = (
                f"the oracle agent runs the task's reference solution and task {task.name!r} has none; add "
                "solution/solve.sh or run the task with another --agent"
            )
            out.append(Broken(task.name, (Problem(task.solution_dir / "solve.sh", message),)))
    return out


def treatment_folders(tasks: Sequence[Path], given: Sequence[Path] = ()) -> list[Path]:
    """The treatments folders: those *given*, else the ``treatments/`` folder beside each tasks folder."""
    if given:
        return [Path(p).absolute() for p in given]
    found = [folder.parent / "treatments" for folder in tasks]
    return list(dict.fromkeys(folder for folder in found if folder.is_dir()))


def default_workspace_root() -> Path:
    return Path(tempfile.gettempdir()) / "comet-eval"


class HarnessSession:
    """The resolved state of one session (see the module docstring). *experiment_id* is the id a
    pytest-xdist controller handed its workers: every process of a session writes one experiment."""

    def __init__(
        self, options: Options, *, experiment_id: str | None = None, environ: Mapping[str, str] | None = None
    ) -> None:
        self.options = options
        # The process environment over ~/.comet/eval/.env: every default read from the environment.
        self._environ = load_environment() if environ is None else environ
        self._experiment_id = experiment_id
        self._catalogs: tuple[TaskCatalog, TreatmentCatalog] | None = None
        self._cases: list[Case | Broken] | None = None
        self._agent: Agent | None = None
        self._experiment: Experiment | None = None
        self._gates: tuple[Gate, ...] | None = None
        self._outputs: ReportOutputs | None = None
        self._manifest: Manifest | None = None
        self._resolved: Options | None = None
        self._patterns: list[str] = []
        self._pool: tuple[Engine, ...] | None = None

    # -- an eval.yaml

    def manifest(self) -> Manifest | None:
        """The ``--eval-manifest``, loaded and validated (ManifestError listing every problem), else None."""
        if self.options.manifest is None:
            return None
        if self._manifest is None:
            from scaffold.skill_eval.manifest_check import load_manifest

            self._manifest = load_manifest(self.options.manifest, builtin_tasks=self._builtin_names())
        return self._manifest

    def _builtin_dirs(self) -> list[Path]:
        if self.options.tasks_dirs:
            return task_folders(self.options.root, self.options.tasks_dirs)
        return [project_tasks_dir(self.options.root)]

    def _builtin_names(self) -> list[str]:
        dirs = self._builtin_dirs()
        return load_catalog(dirs, require_solution=builtin_folders(dirs)).names()

    def owner(self) -> Path:
        """The folder a manifest's run files go under: --project-root, else the skill package root."""
        manifest = self.manifest()
        base = self.options.project_root or (manifest.skill.root if manifest else self.options.root)
        return base.absolute()

    def eval_tasks_dir(self) -> Path:
        """Where a manifest's tasks are written: the experiment's own ``tasks/`` folder (so an experiment
        folder holds the tasks its trials ran, wherever ``--out`` puts it)."""
        return self.experiment().root / "tasks"

    @property
    def resolved(self) -> Options:
        """The options with a manifest's settings filled in where the command line left them unset, by the
        one precedence of scaffold.skill_eval.resolve (command line > manifest > environment > default), as
        ``comet eval`` resolves them: the agent (default claude-code), its model and API (the agent's own
        variables included: the generated tasks' cache key is the command's), the profile, the report
        configuration, the judge (BENCH_LLM_JUDGE and BENCH_JUDGE_* included) and the skill as DYNAMIC_SKILL.
        Without a manifest, the options as given."""
        if self._resolved is None:
            options, manifest = self.options, self.manifest()
            if manifest is not None:
                settings = resolve_settings(manifest, self._explicit(), self._environ, default_agent=DEFAULT_AGENT)
                settings = with_agent_endpoint(settings, self._environ)
                judge = settings.judge or (Choice(None, "default"),) * 3
                options = dataclasses.replace(
                    options,
                    agent=str(settings.agent.value),
                    model=settings.model.value,
                    base_url=settings.base_url.value,
                    profile=settings.profile.value,
                    report_config=Path(config) if (config := settings.report_config.declared) else None,
                    judge_agent=judge[0].value,
                    judge_model=judge[1].value,
                    judge_base_url=judge[2].value,
                    skill_path=manifest.skill.root,
                    skill_name=manifest.skill.name,
                )
            self._resolved = options
        return self._resolved

    def _explicit(self) -> Explicit:
        """What the command line set, as scaffold.skill_eval.resolve takes it."""
        options = self.options
        return Explicit(
            tasks=options.tasks,
            quick=options.quick,
            agent=options.agent,
            model=options.model,
            base_url=options.base_url,
            judge_agent=options.judge_agent,
            judge_model=options.judge_model,
            judge_base_url=options.judge_base_url,
            profile=options.profile,
            report_config=str(options.report_config) if options.report_config else None,
            backend=options.backend,
        )

    def _manifest_tasks(self) -> tuple[list[str], TaskCatalog]:
        """The task patterns a manifest selects (scaffold.skill_eval.resolve.select_tasks) and the catalog
        holding them."""
        from scaffold.skill_eval.materialize import plan_tasks, write_tasks

        manifest = self.manifest()
        assert manifest is not None
        options = self.options
        builtin_dirs = self._builtin_dirs()
        builtin = load_catalog(builtin_dirs, require_solution=builtin_folders(builtin_dirs))

        declared = manifest

        def generated() -> Sequence[str]:
            self._manifest = self._generated(declared)
            return self._manifest.task_names

        patterns = list(select_tasks(declared, self._explicit(), builtin.names(), generated).patterns)
        manifest = self._manifest or declared
        dest = self.eval_tasks_dir()
        if not manifest.tasks:
            return patterns, builtin
        environment = builtin_environment([*builtin_dirs, BUILTIN_TASKS_DIR])
        own: Mapping[str, Task]
        broken: Mapping[str, tuple[Problem, ...]] = {}
        if options.collect_only:
            own = plan_tasks(manifest, None, dest, environment=environment)
        else:
            written = load_catalog([write_tasks(manifest, None, dest, environment=environment)])
            own, broken = written.tasks, written.broken
        merged = TaskCatalog(
            tasks=dict(sorted({**builtin.tasks, **own}.items())),
            broken={**builtin.broken, **broken},
            general=builtin.general,
            dirs=(*builtin.dirs, dest),
            partial=builtin.partial,
        )
        return patterns, merged

    def _generated(self, manifest: Manifest) -> Manifest:
        """A manifest declaring no task: the generated tasks (scaffold.skill_eval.generated), from the cache,
        generated first on a miss, except under --collect-only, which never generates."""
        from scaffold.skill_eval import generated
        from scaffold.skill_eval.generator import GeneratorSettings

        options, names = self.resolved, self._builtin_names()
        owner = self.owner()
        hit = generated.cached(
            manifest,
            owner=owner,
            agent=options.agent,
            model=options.model,
            base_url=options.base_url,
            builtin_tasks=names,
        )
        if hit is None and options.collect_only:
            raise SelectionError(
                f"{manifest.file}: declares no task and no generated tasks are cached for these settings; "
                "a normal run (without --collect-only) generates them first"
            )
        if hit is None:
            settings = GeneratorSettings(
                agent=options.agent, model=options.model, base_url=options.base_url, backend=options.backend
            )
            hit = generated.ensure_generated(
                manifest,
                owner=owner,
                settings=settings,
                builtin_tasks=names,
                env=self._environ,
                experiment_id=self.experiment_id(),
                html_report=options.html,
            )
        tasks = generated.load_generated(hit, builtin_tasks=names).tasks
        return dataclasses.replace(manifest, tasks=tasks)

    # -- what to run

    def task_folders(self) -> list[Path]:
        return task_folders(self.options.root, self.options.tasks_dirs)

    def catalogs(self) -> tuple[TaskCatalog, TreatmentCatalog]:
        """The tasks and treatments; SelectionError when there is no tasks folder at all. Broken tasks are
        not errors here: each becomes one failing case that shows its problems."""
        if self._catalogs is None and self.options.manifest is not None:
            options = self.resolved
            self._patterns, tasks = self._manifest_tasks()
            tasks_dirs = list(tasks.dirs)
            treatments = load_treatments(
                treatment_folders(self._builtin_dirs(), options.treatments_dirs),
                skill_bases=parse_skill_bases(options.skill_bases),
            )
            assert options.skill_path is not None
            treatments = treatments.with_treatment(dynamic_treatment(options.skill_path, options.skill_name))
            self._catalogs = (tasks, self._with_kinds(treatments))
        if self._catalogs is None:
            options = self.options
            tasks_dirs = self.task_folders()
            if not options.tasks_dirs and not tasks_dirs[0].is_dir():
                raise SelectionError(
                    f"no tasks: {tasks_dirs[0]} does not exist; name a tasks folder "
                    "(pytest: --tasks-dir DIR; comet tasks list|check DIR)"
                )
            tasks = load_catalog(tasks_dirs, require_solution=builtin_folders(tasks_dirs))
            treatments = load_treatments(
                treatment_folders(tasks_dirs, options.treatments_dirs),
                skill_bases=parse_skill_bases(options.skill_bases),
            )
            if any(task.format == "harbor" for task in [*tasks.tasks.values(), *tasks.partial.values()]):
                treatments = treatments.with_treatment(TASK_SKILLS_PLACEHOLDER)
            if options.skill_path is not None:
                treatments = treatments.with_treatment(dynamic_treatment(options.skill_path, options.skill_name))
            self._catalogs = (tasks, self._with_kinds(treatments))
        return self._catalogs

    def _with_kinds(self, treatments: TreatmentCatalog) -> TreatmentCatalog:
        """*treatments* with the kinds the options ask for (``--distractors``, ``--nudge``, ``--self-written``),
        checked once every treatment is in (a ``skills_of`` naming none is a broken treatment)."""
        options = self.resolved
        for treatment in self._kinds():
            if treatment.skills_of == DYNAMIC_SKILL and options.skill_path is None:
                flag = "--nudge" if treatment.nudge else "--distractors"
                raise SelectionError(f"{flag} builds on the skill under test: give --skill-path DIR (or a manifest)")
            treatments = treatments.with_treatment(treatment)
        return treatments.checked()

    def _kinds(self) -> tuple[Treatment, ...]:
        options = self.options
        return kind_treatments(
            distractors=options.distractors,
            pool=options.skill_pool,
            nudge=options.nudge,
            self_written=options.self_written,
        )

    def cases(self) -> list[Case | Broken]:
        """Every case to run, sorted: the same list in every process of the session."""
        if self._cases is None:
            tasks, treatments = self.catalogs()
            options = self.resolved
            self._cases = select_cases(
                tasks,
                treatments,
                task_patterns=self._patterns if options.manifest is not None else parse_list(options.tasks),
                treatment_patterns=parse_list(options.treatments),
                count=options.count,
                # --skill-path asks one question, does this skill help: CONTROL against DYNAMIC_SKILL only,
                # not the task's other default treatments (docs/treatments.md).
                default_treatments=self._default_treatments(),
                profile=options.profile,
            )
            if options.agent == "oracle":
                self._cases = refuse_without_solution(self._cases, tasks)
            self._harbor_backend(tasks)
        return self._cases

    def _default_treatments(self) -> list[str] | None:
        """CONTROL, the skill under test and the kinds asked for; None (each task's own) without any."""
        kinds = [t.name for t in self._kinds()]
        if self.resolved.skill_path is None and not kinds:
            return None
        return [CONTROL, *([DYNAMIC_SKILL] if self.resolved.skill_path is not None else []), *kinds]

    def _harbor_backend(self, tasks: TaskCatalog) -> None:
        """Harbor-format tasks work in their image's own file system (/app, /root, /tests, /solution):
        only a container can hold them, so another backend is a usage error before any trial."""
        if self.options.backend == "docker":
            return
        assert self._cases is not None
        harbor = sorted({c.task for c in self._cases if isinstance(c, Case) and tasks.tasks[c.task].format == "harbor"})
        if harbor:
            shown = ", ".join(harbor[:5]) + (f" and {len(harbor) - 5} more" if len(harbor) > 5 else "")
            what = "is a Harbor-format task" if len(harbor) == 1 else "are Harbor-format tasks"
            composed = [name for name in harbor if _has_compose(tasks.tasks[name])]
            several = (
                f" ({', '.join(composed[:5])} also {'runs' if len(composed) == 1 else 'run'} several containers "
                "from a docker-compose.yaml)"
                if composed
                else ""
            )
            raise SelectionError(
                f"--backend={self.options.backend}: {shown} {what}, which work in their image's own file "
                f"system{several}; run them with --backend docker"
            )

    def input_warnings(self) -> list[str]:
        """Problems of input files that no selected case shows (a broken treatments file no selected task
        uses): they do not stop the run, so they are warnings; silence would hide them until they bite."""
        tasks, treatments = self.catalogs()
        return [str(p) for p in unshown_problems(tasks, treatments, self.cases())]

    def task_warnings(self) -> list[str]:
        """What loading the selected tasks noticed but accepted (an index.yaml entry that disagrees with
        task.toml, which wins): the run says it once, at collection (scaffold.errors.TaskWarning)."""
        tasks, _ = self.catalogs()
        chosen = sorted({item.task for item in self.cases() if isinstance(item, Case)})
        found = [str(p) for name in chosen for p in tasks.tasks[name].warnings]
        if self.resolved.backend == "docker":  # an image whose stand-in has another Python
            for name, choices in self.image_choices(chosen).items():
                found += [f"task {name}: {c.mismatch}" for c in choices if c.mismatch is not None]
        return found

    def image_choices(self, names: Sequence[str] | None = None) -> dict[str, tuple[ImageChoice, ...]]:
        """What the docker backend builds each task's FROM images on: the image alias, else the default
        stand-in (scaffold.workspaces.stand_ins), by task name; tasks built on the base image have none.
        *names*: these tasks of the catalog (default: all of them)."""
        from scaffold.workspaces.docker.base_image import BASE_TAG
        from scaffold.workspaces.docker.harbor_image import base_choices

        tasks, _ = self.catalogs()
        aliases = self.image_aliases()
        chosen = sorted(tasks.tasks) if names is None else names
        return {name: base_choices(tasks.tasks[name], aliases, BASE_TAG) for name in chosen}

    # -- how to run it

    def agent(self) -> Agent:
        """The agent, with its credentials resolved and its program found: an unknown agent, a missing
        credential or a CLI not installed where the run will look (scaffold.agents.install) fails here,
        before any workspace exists."""
        if self._agent is None:
            options = self.resolved
            agent = create_agent(options.agent, self._environ, model=options.model, base_url=options.base_url)
            require_program(agent, options.backend, self._environ)  # a missing CLI: a usage error, not N errors
            if options.backend == "docker" and agent.network.on_this_machine and not self.pool():
                _require_reachable(agent.network.endpoints)  # minutes of retries per trial, else
            self._agent = agent
        return self._agent

    def experiment_id(self) -> str:
        """The experiment of this session: the one handed over, the one asked for, or a new id (made once)."""
        if self._experiment_id is None:
            self._experiment_id = self.options.experiment_id or new_experiment_id()
        return self._experiment_id

    def experiment(self) -> Experiment:
        if self._experiment is None:
            default = None
            if self.options.manifest and not self.options.logs_dir:
                # Under the skill's .comet/, made ignored by git before its first file (as comet eval does);
                # a listing (--collect-only) writes nothing, so it makes nothing either.
                comet = self.owner() / COMET_FOLDER
                default = (comet if self.options.collect_only else comet_folder(self.owner())) / "eval" / "runs"
            logs = self.options.logs_dir or default or project_logs_dir(self.options.root)
            self._experiment = Experiment.under(logs, self.experiment_id())
        return self._experiment

    def settings(self) -> Settings:
        # scaffold.trial.runner (the runner, transcripts, validation) is imported by the first trial, not by
        # the collection that every xdist worker must finish before any trial starts (docs/scale.md).
        from scaffold.trial.runner import Settings

        options = self.resolved
        return Settings(
            backend=options.backend,
            baseline=options.baseline,
            agent=options.agent,
            profile=options.profile,
            model=options.model,
            keep_workspaces=options.keep_workspaces,
            rerun_errors=options.rerun_errors,
            retry_excluded=options.retry_excluded,
            judge=self.judge(),
        )

    def judge(self) -> tuple[tuple[str, str], ...]:
        """The judge settings to record: (key, value) pairs of those set, the base URL without credentials;
        a malformed one is a SelectionError here, before any trial."""
        options = self.resolved
        if self.manifest() is None and (
            judge_enabled({}, self._environ) or options.judge_agent or options.judge_model or options.judge_base_url
        ):
            # A plain pytest run: BENCH_JUDGE_* fill what the command line left unset (a manifest's
            # resolution already read them, with its own precedence).
            env = self._environ
            options = dataclasses.replace(
                options,
                judge_agent=options.judge_agent or env.get("BENCH_JUDGE_AGENT") or None,
                judge_model=options.judge_model or env.get("BENCH_JUDGE_MODEL") or None,
                judge_base_url=options.judge_base_url or env.get("BENCH_JUDGE_BASE_URL") or None,
            )
        out: list[tuple[str, str]] = []
        if options.judge_agent:
            if not _AGENT_ID.match(options.judge_agent):
                raise SelectionError(
                    f"judge agent {options.judge_agent!r}: an agent id is a lowercase letter, then 1-31 lowercase "
                    "letters, digits or '-'"
                )
            out.append(("agent", options.judge_agent))
        if options.judge_model:
            out.append(("model", options.judge_model))
        if options.judge_base_url:
            parts = urlsplit(options.judge_base_url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise SelectionError("judge base URL: must be an absolute http(s) URL (e.g. https://api.example.com)")
            port = f":{parts.port}" if parts.port else ""
            out.append(("base_url", f"{parts.scheme}://{parts.hostname}{port}{parts.path}"))
        return tuple(out)

    # -- the engine pool (docker)

    def pool(self) -> tuple[Engine, ...]:
        """The engines of the pool (scaffold.workspaces.engines), empty without one. ``--docker-host`` or
        ``--docker-pool`` with another backend is a SelectionError; the environment's pool is then unused."""
        if self._pool is None:  # resolved once: a pool file is read, and its errors raised, once a session
            options = self.options
            # The process environment only (as DOCKER_HOST and the TLS variables): the plugin decides from
            # it, before any harness session exists, whether to ask the pool's engines at the start.
            engines = resolve_pool(options.docker_hosts, options.docker_pool, os.environ)
            if engines and options.backend != "docker":
                if options.docker_hosts or options.docker_pool:
                    raise SelectionError("--docker-host and --docker-pool need --backend docker")
                engines = ()
            self._pool = engines
        return self._pool

    def engine_report(self) -> EngineReport:
        """Ask every engine of the pool whether it answers (at the start of a session: by the only
        process, or by a pytest-xdist controller for its workers). An unreachable engine is left out;
        with ``--require-all-engines``, or when none answers, that is a SelectionError."""
        engines = self.pool()
        if not engines:
            return EngineReport([], [], [])
        from scaffold.workspaces.docker.pool import probe_all

        statuses = probe_all(engines)
        live = [s.engine for s in statuses if s.reachable]
        down = [s for s in statuses if not s.reachable]

        def said(status: EngineStatus) -> str:
            state = f"docker {status.version}" if status.reachable else f"UNREACHABLE, left out: {status.problem}"
            return f"{status.engine.describe()}: {state}"

        lines = [f"engine pool: {len(live)} of {len(engines)} engines, capacity {total_capacity(live)}"]
        lines += [f"  {said(s)}" for s in statuses]
        if down and self.options.require_all_engines:
            raise SelectionError(
                "--require-all-engines: " + "; ".join(f"{s.engine.url} is unreachable ({s.problem})" for s in down)
            )
        if not live:
            raise SelectionError("no engine of the pool answers:\n" + "\n".join(lines[1:]))
        return EngineReport([e.url for e in live], lines, [said(s) for s in down])

    def open_runner(
        self, worker: str = "main", live_engines: Sequence[str] | None = None, session_token: str | None = None
    ) -> Runner:
        """The trial runner of this process, with a new backend whose network policy follows the agent's
        needs; the caller closes ``runner.backend`` when the session ends. With an engine pool the backend
        is bound to *worker*'s engine among *live_engines* (the URLs the controller found answering;
        None: asked here). *session_token*: the same in every process of the session (the docker backend
        builds a task image that cannot be built once under it); None: this process's own."""
        from scaffold.trial.runner import Runner

        tasks, treatments = self.catalogs()
        agent = self.agent()
        root = self.options.workspace_root or default_workspace_root()
        pool = self.pool()
        engines: list[Engine] = []
        if pool:
            live = set(self.engine_report().live if live_engines is None else live_engines)
            engines = order([e for e in pool if e.url in live], worker)
        backend = create_backend(
            self.options.backend,
            workspace_root=root.absolute(),
            network=agent.network,
            agent_install=agent.install,
            image_aliases=self.image_aliases(),
            engines=engines,
            pool=pool,
            say=_say,
            private=(self.experiment().root,),
            confine=agent.install is not None,  # the oracle and nop run the task's own solution, or nothing
            session_token=session_token,
        )
        return Runner(
            tasks,
            treatments,
            self.experiment(),
            self.settings(),
            backend,
            agent,
            worker=worker,
            judge=self.judge_run(),
            uv_binaries=uv_binaries,
            start_gate=self.start_gate(),
        )

    def start_gate(self) -> StartGate | None:
        """The gate that spaces trial starts (scaffold.trial.start_gate): for agents that call a model, shared by
        every worker and session of this user on this machine; None when off or needless."""
        window = self.options.start_window
        if window <= 0 or not self.agent().network.enabled:
            return None
        gate = StartGate(state_root() / "start-gate", window)
        if os.environ.get(LOAD_ENV) == "0":  # the process environment's, as the other COMET_DOCKER_* switches
            gate.crowded = None  # no wait for a free core: the window alone
        return gate

    def image_aliases(self) -> dict[str, str]:
        """The image aliases: the file (``--image-alias-file``, else ``$COMET_IMAGE_ALIAS_FILE``), then
        ``$COMET_IMAGE_ALIASES``, then ``--image-alias`` (scaffold.workspaces.image_aliases); a malformed one
        is a SelectionError before any trial. The docker backend applies them over the default stand-ins
        (:meth:`image_choices`)."""
        options = self.options
        return resolve_image_aliases(options.image_aliases, options.image_alias_file, self._environ)

    def judge_run(self) -> JudgeRun | None:
        """The LLM judge of this session's trials, None when it is off. It inherits nothing of the subject;
        the subject's declared credentials are named so that the judge's process never sees them. An agent
        that cannot judge, or a judge CLI that is not installed, fails here, before any trial."""
        config = resolve_judge(dict(self.judge()), self._environ, samples=self.options.judge_samples)
        if config is None:
            return None
        check_judge(config, self._environ)
        return JudgeRun(config, self._environ, declared_credentials(self.resolved.agent, self._environ))

    def sweep_crashed(self) -> None:
        """Another process of this session crashed: remove what it left in the backend's engines now."""
        sweep_crashed(self.options.backend, self.pool())

    # -- what to make of it

    def gates(self) -> tuple[Gate, ...]:
        """The ``--gate`` expressions, parsed (a bad one is a GateError before any trial runs)."""
        if self._gates is None:
            manifest = self.manifest()
            extra = manifest.quality_gates.gates if manifest is not None else ()
            expressions = (*self.options.gates, *extra)
            if expressions:  # the reports' model comes with it: not every worker's import (docs/scale.md)
                from scaffold.reports.gates import parse_gate

                self._gates = tuple(parse_gate(expression) for expression in expressions)
            else:
                self._gates = ()
        return self._gates

    def outputs(self) -> ReportOutputs:
        """Which reports to write: ``--html``, ``--report-config``, ``$COMET_EVAL_REPORT_CONFIG``."""
        if self._outputs is None:
            config = self.resolved.report_config
            self._outputs = resolve_outputs(html=self.options.html, config_file=config, environ=self._environ)
        return self._outputs

    def observes(self, treatment: str) -> bool:
        """Whether trials of *treatment* are observed, not tested: the baseline's, in a session without
        gates (their failures are reported as expected failures and do not fail the session)."""
        return treatment == self.options.baseline and not self.gates()


def _require_reachable(endpoints: Sequence[str]) -> None:
    """AgentError when the containers of this machine's Docker engine cannot reach a model endpoint on
    this machine's loopback (scaffold.workspaces.docker.reach); an engine elsewhere is not asked here."""
    from scaffold.workspaces.docker.engine import connect
    from scaffold.workspaces.engines import default_engine

    engine = default_engine(os.environ)
    if not engine.local:
        return
    from scaffold.workspaces.docker.reach import loopback_problem

    client = connect(engine)
    try:
        for endpoint in endpoints:
            problem = loopback_problem(endpoint, client)
            if problem is not None:
                raise AgentError(f"--backend docker: {problem}")
    finally:
        client.close()


def _say(message: str) -> None:
    """A worker's news the record cannot carry (an engine of the pool died): on stderr, where a single
    process shows it and pytest-xdist keeps it in the worker's output."""
    print(f"comet: {message}", file=sys.stderr, flush=True)


def _has_compose(task: Task) -> bool:
    return task.harbor is not None and task.harbor.compose is not None

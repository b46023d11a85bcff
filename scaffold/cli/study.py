"""I/O. ``comet study TASKS_DIR [options] [pytest options]``: a SkillsBench-style study in one command.

It runs the built-in suite's pytest session in this process, as ``comet run`` does (the same cases,
records and reports), on the tasks of TASKS_DIR that ship skills of their own, under CONTROL, TASK_SKILLS,
TASK_SKILLS_PLUS_N_DISTRACTORS and SELF_WRITTEN, K trials each; then it writes ``study.md`` beside the
session's summary.md (scaffold.reports.study).

The two kinds are defined in a treatments file the study writes into its own folder (the command line's
kind options build on DYNAMIC_SKILL, a single skill, where a corpus has each task's own); the file is
passed with ``--comet-treatments-dir`` and named in study.md, so the study can be run again by hand.

Tasks without skills of their own are left out of the whole study, and study.md names them: under
TASK_SKILLS they would run as CONTROL under another name (the session refuses that), and running them
under the other conditions only would compare the conditions on different tasks.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from scaffold.catalog.builtin import distractor_pool, project_logs_dir
from scaffold.catalog.tasks import load_catalog
from scaffold.catalog.treatment_kinds import Distractors, draw_distractors, kind_name
from scaffold.catalog.treatments import CONTROL, SELF_WRITTEN, TASK_SKILLS, task_treatment
from scaffold.cli.run import pytest_arguments
from scaffold.errors import SelectionError
from scaffold.experiment import EXPERIMENT_ID, new_experiment_id
from scaffold.experiment.cases import has_own_skills
from scaffold.reports.study import StudyCondition, StudyConfig, render_study
from scaffold.stats.paired import DEFAULT_SEED

__all__ = [
    "STUDY",
    "STUDY_COUNT",
    "StudyPlan",
    "add_commands",
    "plan_study",
    "study_arguments",
    "study_command",
    "write_study",
]

STUDY: Final = "study.md"
STUDY_COUNT: Final = 5
"""Trials per task and condition by default: SkillsBench ran 5 trials of each task under each condition."""
DISTRACTORS: Final = 3
DISTRACTOR_SEED: Final = 0


@dataclass(frozen=True, slots=True)
class StudyPlan:
    """What a study runs: its tasks, those left out, its conditions, where it writes."""

    tasks_dir: Path
    tasks: tuple[str, ...]
    left_out: tuple[str, ...]
    conditions: tuple[StudyCondition, ...]
    treatments: dict[str, dict[str, Any]]
    """The kinds' definitions, as the treatments file holds them."""
    count: int
    experiment_id: str
    logs_dir: Path
    backend: str
    """The backend the trials run on: the one asked for, else docker for a corpus with Harbor-format tasks."""

    @property
    def experiment_dir(self) -> Path:
        return self.logs_dir / "experiments" / self.experiment_id

    @property
    def treatments_dir(self) -> Path:
        """Beside the experiment, not in it: the session claims its experiment folder itself."""
        return self.logs_dir / "studies" / self.experiment_id


def add_commands(commands: Any) -> None:
    """``comet study``: its own options; every other argument is pytest's (scaffold.cli.main passes them)."""
    study = commands.add_parser(
        "study",
        help="a SkillsBench-style study: CONTROL, the tasks' skills, with distractors, self-written; study.md",
        description="Run the tasks of TASKS_DIR that ship skills (environment/skills) under CONTROL, TASK_SKILLS, "
        "TASK_SKILLS_PLUS_N_DISTRACTORS and SELF_WRITTEN, K trials each, and write study.md beside the usual "
        "reports: each condition against CONTROL (pass rates, the difference with its interval, the verdict, "
        "the tasks helped and hurt, skill loading) and the study's configuration. Tasks without skills are left "
        "out (study.md names them). Other options are pytest's or the plugin's (e.g. --model, --image-alias). "
        "Exit status: the pytest session's.",
        allow_abbrev=False,  # pytest's options must never be taken for an abbreviation of ours
    )
    study.add_argument("tasks_dir", type=Path, metavar="TASKS_DIR", help="the corpus: a folder of tasks")
    study.add_argument("--agent", metavar="NAME", help="the agent (default: the suite's, the oracle)")
    study.add_argument(
        "--count",
        type=int,
        default=STUDY_COUNT,
        metavar="K",
        help=f"trials of each task under each condition (default {STUDY_COUNT}, as SkillsBench ran)",
    )
    study.add_argument(
        "--backend",
        choices=("local", "docker"),
        help="where trials run (default: docker when the study's tasks include Harbor-format ones, which run "
        "in their own image, else local)",
    )
    study.add_argument(
        "--distractors",
        type=int,
        default=DISTRACTORS,
        metavar="N",
        help=f"distractor skills beside the task's own (default {DISTRACTORS}; 0 leaves the condition out)",
    )
    study.add_argument(
        "--skill-pool",
        type=Path,
        metavar="DIR",
        help="a folder of skill folders the distractors are drawn from (default: the other tasks' own skills "
        "and the built-in pool's eight)",
    )
    study.add_argument("--no-self-written", action="store_true", help="leave the SELF_WRITTEN condition out")
    study.add_argument("--out", type=Path, metavar="DIR", help="where experiments go (default: ./local/logs)")
    study.add_argument("-n", "--workers", type=int, metavar="N", help="trials in parallel (pytest-xdist)")
    study.add_argument("--experiment-id", metavar="ID", help="experiment to write to; an existing one is resumed")
    study.set_defaults(func=_run, pytest_args=[])


def plan_study(args: argparse.Namespace) -> StudyPlan:
    """The study *args* ask for; SelectionError (nothing run, nothing written) when it cannot run."""
    tasks_dir = args.tasks_dir.absolute()
    if not tasks_dir.is_dir():
        raise SelectionError(f"comet study {args.tasks_dir}: no such folder")
    if args.count < 1:
        raise SelectionError(f"--count must be at least 1 (got {args.count})")
    if args.distractors < 0 or args.distractors > 100:
        raise SelectionError(f"--distractors must be 0 to 100 (got {args.distractors})")
    experiment_id = args.experiment_id or new_experiment_id()
    if not EXPERIMENT_ID.match(experiment_id):
        raise SelectionError(f"--experiment-id {experiment_id!r}: use letters, digits, '.', '_' and '-'")
    catalog = load_catalog([tasks_dir])
    loaded = {**catalog.partial, **catalog.tasks}
    with_skills = tuple(name for name in sorted(loaded) if has_own_skills(loaded[name]))
    if not with_skills:
        raise SelectionError(
            f"no task of {tasks_dir} has skills of its own (environment/skills/<name>/SKILL.md): a study "
            "compares the tasks' skills with none; comet tasks list shows what the folder holds"
        )
    pool = args.skill_pool.absolute() if args.skill_pool is not None else None
    if pool is not None and not pool.is_dir():
        raise SelectionError(f"--skill-pool {args.skill_pool}: no such folder")
    treatments: dict[str, dict[str, Any]] = {}
    conditions = [
        StudyCondition(CONTROL, "No skills (baseline)"),
        StudyCondition(TASK_SKILLS, "The task's own skills (its environment/skills), as SkillsBench's curated skills"),
    ]
    if args.distractors:
        spec = Distractors(args.distractors, pool, DISTRACTOR_SEED)
        name = kind_name(TASK_SKILLS, distractors=args.distractors)
        _check_pool(spec, name, loaded, with_skills)
        definition = f"The task's own skills among {spec.describe()}"
        entry: dict[str, Any] = {"count": spec.count, "seed": spec.seed}
        if pool is not None:
            entry["pool"] = str(pool)
        treatments[name] = {"description": definition, "skills_of": TASK_SKILLS, "distractors": entry}
        conditions.append(StudyCondition(name, definition))
    if not args.no_self_written:
        definition = "A skill the agent writes itself before the task (SkillsBench's self-generated skills)"
        treatments[SELF_WRITTEN] = {"description": definition, "self_written": True}
        conditions.append(StudyCondition(SELF_WRITTEN, definition))
    return StudyPlan(
        tasks_dir,
        with_skills,
        tuple(name for name in sorted(catalog.names()) if name not in with_skills),
        tuple(conditions),
        treatments,
        args.count,
        experiment_id,
        (args.out or project_logs_dir(Path.cwd())).absolute(),
        args.backend or ("docker" if any(loaded[name].format == "harbor" for name in with_skills) else "local"),
    )


def _check_pool(spec: Distractors, name: str, loaded: dict[str, Any], tasks: tuple[str, ...]) -> None:
    """Draw each task's distractors now, as its trials will: a pool too small fails before any trial."""
    for task in tasks:
        own = task_treatment(loaded[task].skills_dir).skills
        pool = distractor_pool(spec.pool, (other.skills_dir for other in loaded.values() if other.name != task))
        try:
            draw_distractors(pool, spec, task=task, treatment=name, under_test=own, where=spec.pool_words())
        except SelectionError as exc:
            raise SelectionError(f"{exc}; or give --skill-pool DIR, or --distractors 0 to leave it out") from None


def study_arguments(plan: StudyPlan, args: argparse.Namespace) -> list[str]:
    """The session's options for *plan* (``--comet-`` forms), then the pytest options passed."""
    out = [
        f"--comet-tasks-dir={plan.tasks_dir}",
        f"--comet-treatments-dir={plan.treatments_dir}",
        "--comet-task=" + ",".join(plan.tasks),
        "--comet-treatment=" + ",".join(c.name for c in plan.conditions),
        f"--comet-count={plan.count}",
        f"--comet-backend={plan.backend}",
        f"--comet-logs-dir={plan.logs_dir}",
        f"--comet-experiment-id={plan.experiment_id}",
        f"--comet-baseline={CONTROL}",
        "--comet-html",
    ]
    if args.agent:
        out.append(f"--comet-agent={args.agent}")
    if args.workers:
        out += ["-n", str(args.workers)]
    return out + list(args.pytest_args)


def study_command(plan: StudyPlan, args: argparse.Namespace) -> str:
    """The ``comet study`` command line that runs *plan* again, every default spelled out."""
    words = ["comet", "study", str(plan.tasks_dir), f"--count={plan.count}", f"--backend={plan.backend}"]
    words += [f"--agent={args.agent}"] if args.agent else []
    words.append(f"--distractors={args.distractors}")
    words += [f"--skill-pool={args.skill_pool.absolute()}"] if args.skill_pool is not None else []
    words += ["--no-self-written"] if args.no_self_written else []
    words += [f"--out={plan.logs_dir}", f"--experiment-id={plan.experiment_id}"]
    words += [f"--workers={args.workers}"] if args.workers else []
    return shlex.join([*words, *args.pytest_args])


def _run(args: argparse.Namespace) -> int:
    import pytest

    plan = plan_study(args)
    plan.treatments_dir.mkdir(parents=True, exist_ok=True)
    treatments_file = plan.treatments_dir / "treatments.yaml"
    treatments_file.write_text(yaml.safe_dump(plan.treatments, sort_keys=False), encoding="utf-8")
    passed = study_arguments(plan, args)
    print(
        f"comet study: {len(plan.tasks)} task(s) x {len(plan.conditions)} conditions x {plan.count} trial(s), "
        f"on the {plan.backend} backend"
    )
    if plan.left_out:
        print(f"comet study: left out, no skills of their own: {', '.join(plan.left_out)}")
    code = int(pytest.main(pytest_arguments("local", Path.cwd(), passed)))
    config = StudyConfig(
        tasks_dir=str(plan.tasks_dir),
        tasks=plan.tasks,
        left_out=plan.left_out,
        conditions=plan.conditions,
        count=plan.count,
        distractor_seed=DISTRACTOR_SEED,
        statistics_seed=DEFAULT_SEED,
        treatments_file=str(treatments_file),
        command=study_command(plan, args),
    )
    written = write_study(plan.experiment_dir, config)
    if written is None:
        print(f"comet study: no trial record in {plan.experiment_dir}: no study report", file=sys.stderr)
    else:
        print(f"study: {written}")
    return code


def write_study(experiment_dir: Path, config: StudyConfig) -> Path | None:
    """study.md of the experiment in *experiment_dir*, built as its other reports are; None without records."""
    from scaffold.reports.analysis import build_analysis
    from scaffold.reports.comparable import Identities
    from scaffold.reports.load import load_experiments
    from scaffold.util.atomic import write_text_atomic

    if not (experiment_dir / "trials").is_dir():
        return None
    loaded = load_experiments([experiment_dir], link_base=experiment_dir)
    if not loaded.records:
        return None
    analysis = build_analysis(
        loaded.records,
        baseline=CONTROL,
        problems=loaded.problems,
        files=loaded.files,
        identities=Identities.of(loaded.records),
    )
    return write_text_atomic(experiment_dir / STUDY, render_study(analysis, config, experiment_dir.name))

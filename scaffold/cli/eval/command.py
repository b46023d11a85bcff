"""I/O. ``comet eval [TARGET] [options]``: evaluate one skill in one command.

The command resolves what to run (the target, its manifest, the tasks and where each came from, the
agent and judge settings), prints it, and then runs **the pytest plugin's session in-process**
(``pytest.main`` on the built-in suite with ``--comet-eval-manifest`` and the options): the same cases,
trials, records, reports and gates as ``pytest local/tests --eval-manifest=...``, never a second
implementation. It only adds what a command line needs around it: the header, one progress line per
finished trial (and a live line on a terminal), the verdicts, report paths and gate results at the end,
and an exit status CI can gate on.

This module is the command line (the ``eval`` subparser) and the run; the parts live beside it:
scaffold.cli.eval.target (TARGET read as a manifest), .resolve (the precedence and task selection,
shared with the session), .planner (all of it checked into an EvalPlan), .plan (EvalPlan and the header),
.progress (the pytest plugin showing progress), .outcome (the exit codes and the lines at the end).

Precedence, for every setting: the command line, then the manifest (``execution``, ``judge``,
``skill.profile``, ``reporting``), then the environment (the process, then ``~/.comet/eval/.env``), then
the default (``claude-code``, the ``local`` backend).

``--collect`` resolves and validates all of that and prints the task list without running pytest at
all: nothing is written (not even the user's ``.env`` template, which the first *run* creates), no agent,
container, socket or tracing SDK is started. Generated tasks come from the cache only there. It fails
(exit status 2) on whatever the run would refuse before its first trial, an agent that cannot start
included. A run makes ``<owner>/.comet/`` ignored by git (scaffold.skill_eval.project).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from scaffold.catalog.builtin import BUILTIN_TASKS_DIR, SUITES, builtin_task_names
from scaffold.catalog.treatments import CONTROL, DYNAMIC_SKILL
from scaffold.cli.eval.outcome import EVAL_STATUSES, finish
from scaffold.cli.eval.plan import GATE_EXAMPLE, EvalPlan, header_lines
from scaffold.cli.eval.planner import check_plan_judge, plan_eval
from scaffold.cli.eval.progress import Progress
from scaffold.cli.eval.target import UsageError
from scaffold.cli.user_env import ensure_user_env, user_env_file
from scaffold.errors import CometError, ExitStatus, GenerationError, exit_status_help
from scaffold.skill_eval.project import COMET_FOLDER, comet_folder
from scaffold.skill_eval.resolve import QUICK_TASK

__all__ = [
    "EvalPlan",
    "UsageError",
    "add_eval_command",
    "header_lines",
    "plan_eval",
    "pytest_arguments",
    "run_eval",
]


def add_eval_command(commands: Any) -> argparse.ArgumentParser:
    """The ``eval`` subcommand of ``comet`` (scaffold.cli.main)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "eval",
        help="evaluate a skill in one command: tasks (declared or generated), CONTROL vs the skill, reports",
        description="Evaluate a skill: its tasks (from comet/eval.yaml, or generated and cached when it "
        "declares none) run under CONTROL and under the skill, then the statistics, reports and gates. "
        "TARGET is a skill folder, its SKILL.md, or a manifest (comet/eval.yaml). Settings: command line > "
        "manifest > environment (process, then ~/.comet/eval/.env) > default (claude-code, local backend).",
        epilog=exit_status_help(EVAL_STATUSES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("target", nargs="?", type=Path, metavar="TARGET", help="skill folder, SKILL.md or eval.yaml")
    what = parser.add_argument_group("what to evaluate")
    what.add_argument("--manifest", type=Path, metavar="PATH", help="the manifest (instead of TARGET)")
    what.add_argument("--skill-path", type=Path, metavar="DIR", help="the skill folder (instead of TARGET)")
    what.add_argument("--skill-name", metavar="NAME", help="the name the skill is installed under")
    what.add_argument(
        "--project",
        type=Path,
        metavar="DIR",
        help="where .comet/eval/ (runs, generated tasks) goes (default: the skill)",
    )
    what.add_argument("--task", action="append", default=[], metavar="NAMES", help="only these tasks (comma list)")
    what.add_argument("--quick", action="store_true", help=f"run the built-in {QUICK_TASK} task only")
    what.add_argument("--treatment", action="append", default=[], metavar="NAMES", help="only these treatments")
    _add_kind_options(parser)
    what.add_argument(
        "--count",
        type=int,
        default=None,
        metavar="N",
        help="exactly N trials per task and treatment (a fixed design; default: run until decided, see --max-count)",
    )
    what.add_argument(
        "--until-decided",
        action="store_true",
        help="run the trials in rounds and stop each comparison as soon as an anytime-valid test decides it "
        "(the default unless --count or --quick is given)",
    )
    what.add_argument(
        "--max-count",
        type=int,
        default=None,
        metavar="N",
        help="when running until decided: at most N trials per task and treatment (default 10)",
    )
    agent = parser.add_argument_group("agent and judge")
    agent.add_argument(
        "--agent", metavar="NAME", help="the agent (default: execution.agent, $BENCH_EVAL_AGENT, claude-code)"
    )
    agent.add_argument("--model", metavar="NAME", help="its model (default: execution.model, its *_MODEL variables)")
    agent.add_argument(
        "--base-url", metavar="URL", help="its API (default: execution.baseUrl, its *_BASE_URL variables)"
    )
    agent.add_argument(
        "--judge-agent", metavar="NAME", help="the judge's agent (default: judge.agent, $BENCH_JUDGE_AGENT)"
    )
    agent.add_argument(
        "--judge-model", metavar="NAME", help="the judge's model (default: judge.model, $BENCH_JUDGE_MODEL)"
    )
    agent.add_argument(
        "--judge-base-url", metavar="URL", help="the judge's API (default: judge.baseUrl, $BENCH_JUDGE_BASE_URL)"
    )
    agent.add_argument(
        "--judge-samples", type=int, default=1, metavar="N", help="judge each trial N times (default: 1)"
    )
    agent.add_argument("--profile", metavar="NAME", help="evaluation profile (default: skill.profile, else the task's)")
    run = parser.add_argument_group("how to run it")
    run.add_argument("--backend", metavar="NAME", help="workspace backend: local (default) or docker")
    run.add_argument(
        "--image-alias",
        action="append",
        default=[],
        metavar="REF=LOCAL",
        help="docker backend: a Harbor task's FROM image REF built from the local image LOCAL; repeatable",
    )
    run.add_argument(
        "--image-alias-file", type=Path, metavar="FILE", help="image aliases: a TOML [image-aliases] table"
    )
    run.add_argument(
        "--docker-host",
        action="append",
        default=[],
        metavar="URL[*N]",
        help="docker backend: an engine of the pool, with the trials it runs at once; repeatable "
        "(also $COMET_DOCKER_HOSTS; docs/scale.md)",
    )
    run.add_argument("--docker-pool", type=Path, metavar="FILE", help="docker backend: a pool file of [[engines]]")
    run.add_argument(
        "--require-all-engines", action="store_true", help="refuse to start when an engine of the pool is down"
    )
    run.add_argument(
        "--start-window",
        type=float,
        metavar="SECONDS",
        help="at most one trial start per core in any such window, for agents that call a model (default 0.7; 0: off)",
    )
    run.add_argument("-n", "--workers", type=int, default=None, metavar="N", help="trials in parallel (pytest-xdist)")
    run.add_argument(
        "--in-flight",
        choices=("auto", "1", "2"),
        default=None,
        help="trials each worker process holds at once (default auto: above 2 workers per core, half as "
        "many processes with two trials each; docs/scale.md)",
    )
    run.add_argument("--experiment-id", metavar="ID", help="experiment to write to; an existing one is resumed")
    run.add_argument(
        "--max-trials",
        type=int,
        metavar="N",
        help="start at most N trials (the others are listed as not run; resuming the experiment runs them)",
    )
    run.add_argument(
        "--max-cost",
        type=float,
        metavar="USD",
        help="start no new trial once the trials have cost USD as their agent reports it (running ones finish)",
    )
    run.add_argument(
        "--retry-excluded",
        type=int,
        metavar="N",
        help="run a trial excluded as environment or runner noise (rate limit, timeout, network, container) "
        "again up to N more times; each attempt counts against the budgets (default: 2; 0: off)",
    )
    run.add_argument(
        "--out", type=Path, metavar="DIR", help="where experiments go (default: <project>/.comet/eval/runs)"
    )
    run.add_argument(
        "--collect", action="store_true", help="resolve, validate and list the tasks; run nothing, write nothing"
    )
    report = parser.add_argument_group("reports and gates")
    report.add_argument(
        "--suite",
        metavar="NAME",
        help="local (default), langsmith or langfuse: the same trials and reports, also sent to that service "
        "(default: reporting.suite)",
    )
    report.add_argument("--baseline", metavar="NAME", help=f"treatment to compare against (default: {CONTROL})")
    report.add_argument(
        "--gate",
        action="append",
        default=[],
        metavar="EXPR",
        help=f"a gate, e.g. {GATE_EXAMPLE!r} (the treatments are {CONTROL} and {DYNAMIC_SKILL}, the skill)",
    )
    report.add_argument("--html", action="store_true", help="also write report.html")
    report.add_argument("--report-config", type=Path, metavar="FILE", help="report outputs (default: reporting.config)")
    parser.set_defaults(func=run_eval)
    return parser


def _add_kind_options(parser: argparse.ArgumentParser) -> None:
    """The treatment kinds (scaffold.catalog.treatment_kinds) a command line can ask for."""
    kinds = parser.add_argument_group(
        "treatment kinds", "more treatments beside CONTROL and DYNAMIC_SKILL (docs/treatment-kinds.md)"
    )
    kinds.add_argument(
        "--distractors",
        type=int,
        default=0,
        metavar="N",
        help="also run DYNAMIC_SKILL_PLUS_N_DISTRACTORS: the skill among N others drawn (seeded) from --skill-pool",
    )
    kinds.add_argument(
        "--skill-pool",
        type=Path,
        metavar="DIR",
        help="a folder of skill folders the distractors are drawn from (default: the other tasks' own skills "
        "and the built-in pool's eight)",
    )
    kinds.add_argument(
        "--nudge",
        action="store_true",
        help="also run DYNAMIC_SKILL_NUDGE: the skill, and one line in the instructions file saying skills are there",
    )
    kinds.add_argument(
        "--self-written",
        action="store_true",
        help="also run SELF_WRITTEN: the agent first writes a skill for the task's kind, then does it with that",
    )


def _kind_arguments(args: argparse.Namespace) -> list[str]:
    """The session's options for the treatment kinds asked for."""
    out = [f"--comet-distractors={args.distractors}"] if args.distractors else []
    if args.skill_pool is not None:
        out.append(f"--comet-skill-pool={args.skill_pool.absolute()}")
    if args.nudge:
        out.append("--comet-nudge")
    if args.self_written:
        out.append("--comet-self-written")
    return out


def pytest_arguments(plan: EvalPlan, args: argparse.Namespace, manifest_file: Path | None) -> list[str]:
    """pytest's command line for the plan: the built-in suite, the manifest, every option (``--comet-`` forms,
    which exist whatever other plugins are installed)."""
    out = [
        str(SUITES[plan.suite]),
        f"--rootdir={plan.owner}",
        # The user's own pytest configuration (a pyproject.toml in the skill's project) is not ours to run.
        "-c",
        os.devnull,
        "-p",
        "no:cacheprovider",
        "-p",
        "no:terminal",
        "--import-mode=importlib",
        f"--comet-logs-dir={plan.runs_dir}",
        f"--comet-experiment-id={plan.experiment_id}",
        f"--comet-agent={plan.agent.value}",
        f"--comet-backend={plan.backend.value}",
        f"--comet-baseline={plan.baseline}",
        *(
            ["--comet-until-decided", f"--comet-max-count={plan.count}"]
            if plan.until_decided
            else [f"--comet-count={plan.count}"]
        ),
    ]
    if manifest_file is not None:
        out += [f"--comet-eval-manifest={manifest_file}", f"--comet-project-root={plan.owner}"]
    else:  # a synthesized manifest: the skill as --skill-path evaluates it
        out += [f"--comet-skill-path={plan.manifest.skill.root}", f"--comet-skill-name={plan.manifest.skill.name}"]
        out.append(f"--comet-tasks-dir={BUILTIN_TASKS_DIR}")
    if plan.tasks_source == "command line":
        out.append("--comet-task=" + ",".join(name for name, _ in plan.tasks))
    elif plan.tasks_source == "quick":
        out.append("--comet-quick" if manifest_file is not None else f"--comet-task={QUICK_TASK}")
    # The effective model and API, also when the environment decided them: the session then computes the
    # generated tasks' cache key from exactly what this command showed and generated with.
    for flag, setting in (("model", plan.model), ("base-url", plan.base_url)):
        if setting.value:
            out.append(f"--comet-{flag}={setting.value}")
    if plan.profile.value:
        out.append(f"--comet-profile={plan.profile.value}")
    if plan.judge is not None:
        for flag, setting in zip(("judge-agent", "judge-model", "judge-base-url"), plan.judge, strict=True):
            if setting.value:
                out.append(f"--comet-{flag}={setting.value}")
    if args.judge_samples != 1:
        out.append(f"--comet-judge-samples={args.judge_samples}")
    out += _kind_arguments(args)
    if args.treatment:
        out.append("--comet-treatment=" + ",".join(plan.treatments))
    out += [f"--comet-gate={gate}" for gate in args.gate]
    if args.html:
        out.append("--comet-html")
    if plan.report_config.value and plan.report_config.source in ("command line", "manifest"):
        out.append(f"--comet-report-config={plan.report_config.value}")
    out += [f"--comet-image-alias={alias}" for alias in args.image_alias]
    if args.image_alias_file:
        out.append(f"--comet-image-alias-file={args.image_alias_file}")
    out += [f"--comet-docker-host={host}" for host in args.docker_host]
    if args.docker_pool:
        out.append(f"--comet-docker-pool={args.docker_pool}")
    if args.require_all_engines:
        out.append("--comet-require-all-engines")
    if args.start_window is not None:
        out.append(f"--comet-start-window={args.start_window:g}")
    if args.max_trials is not None:
        out.append(f"--comet-max-trials={args.max_trials}")
    if args.max_cost is not None:
        out.append(f"--comet-max-cost={args.max_cost}")
    if args.retry_excluded is not None:
        out.append(f"--comet-retry-excluded={args.retry_excluded}")
    if args.in_flight is not None:
        out.append(f"--comet-in-flight={args.in_flight}")
    if plan.workers:
        out += ["-n", str(plan.workers)]
    return out


def run_eval(args: argparse.Namespace, *, out: TextIO | None = None) -> int:
    """``comet eval``: its exit status (one of EVAL_STATUSES)."""
    out = out or sys.stdout
    try:
        plan = plan_eval(args)
        check_plan_judge(plan, args.judge_samples)
    except CometError as exc:
        print(f"comet eval: {exc}", file=sys.stderr)
        return ExitStatus.USAGE
    if args.collect:
        return _collect(plan, out)
    created = ensure_user_env()
    if created is not None:
        print(f"Created your comet-eval settings file: {created}", file=out)
        print(
            "Edit it to keep your settings and credentials there (every line starts commented out); "
            "this run carries on with the environment as it is.",
            file=out,
        )
    if plan.credentials_problem:
        for line in header_lines(plan, mode="run"):
            print(line, file=out)
        print(f"comet eval: {plan.credentials_problem}", file=sys.stderr)
        return ExitStatus.USAGE
    if plan.tasks_source == "pending generation" or plan.runs_dir.is_relative_to(plan.owner / COMET_FOLDER):
        comet_folder(plan.owner)  # before the first file under it: made ignored by git
    for line in header_lines(plan, mode="run"):
        print(line, file=out)
    if plan.tasks_source == "pending generation":
        print("Generating tasks for the skill (once: the next runs reuse them) ...", file=out, flush=True)
        try:
            path = _generate(plan, args)
            from scaffold.skill_eval.generated import load_generated

            tasks = tuple((t.name, "generated") for t in load_generated(path, builtin_tasks=builtin_task_names()).tasks)
        except GenerationError as exc:
            print(f"comet eval: {exc}", file=sys.stderr)
            return ExitStatus.NO_ANSWER
        except CometError as exc:
            print(f"comet eval: {exc}", file=sys.stderr)
            return ExitStatus.USAGE
        plan = dataclasses.replace(plan, tasks_source="generated", tasks=tasks, generated=path)
        print(f"Tasks generated: {', '.join(name for name, _ in plan.tasks)}", file=out)
    # The session reads the manifest itself (its gates, baseline, settings; generated tasks from the cache);
    # a skill without eval.yaml has only the generated manifest to hand over, when its tasks are generated.
    manifest_file = plan.manifest.file or plan.generated
    print("", file=out, flush=True)
    return _run_pytest(plan, pytest_arguments(plan, args, manifest_file), out)


def _generate(plan: EvalPlan, args: argparse.Namespace) -> Path:
    from scaffold.skill_eval.generated import ensure_generated
    from scaffold.skill_eval.generator import GeneratorSettings

    settings = GeneratorSettings(
        agent=str(plan.agent.value),
        model=plan.model.value,
        base_url=plan.base_url.value,
        backend=str(plan.backend.value),
    )
    return ensure_generated(
        plan.manifest,
        owner=plan.owner,
        settings=settings,
        builtin_tasks=builtin_task_names(),
        experiment_id=plan.experiment_id,
        html_report=bool(args.html),
    )


def _collect(plan: EvalPlan, out: TextIO) -> int:
    for line in header_lines(plan, mode="collect"):
        print(line, file=out)
    file = user_env_file()
    if not file.is_file():
        print(f"Settings file: {file} does not exist yet (a normal run creates the template)", file=out)
    if plan.tasks_source == "pending generation":
        print(
            "No generated tasks are cached for these settings: a normal comet eval run generates them "
            "(--collect never calls the generator).",
            file=out,
        )
    print(
        f"Static collection only ({plan.suite}): no agent, container, network connection or tracing was "
        "started, and nothing was written.",
        file=out,
    )
    if plan.credentials_problem:  # the run refuses to start on it: so does its dry run
        print(f"comet eval: {plan.credentials_problem}", file=sys.stderr)
        return ExitStatus.USAGE
    return ExitStatus.OK


def _run_pytest(plan: EvalPlan, argv: list[str], out: TextIO) -> int:
    import pytest

    progress = Progress(out, len(plan.tasks) * len(plan.treatments) * plan.count, plan.experiment_dir)
    try:
        code = int(pytest.main(argv, plugins=[progress]))
    except KeyboardInterrupt:
        return ExitStatus.INTERRUPTED
    return finish(plan, code, progress, out)

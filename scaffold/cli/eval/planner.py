"""I/O. ``comet eval``'s resolution: the target, the settings and the tasks, checked, into an :class:`EvalPlan`.

The precedence and the task selection are scaffold.skill_eval.resolve's, the same the session applies;
this module adds what the command checks and shows beyond them: the agent known and its credentials and
program present, URLs well formed, ``--suite``, ``--treatment``, ``--baseline``, ``--gate``, the model and
API the agent takes from its environment, and the generated tasks of the cache (read, never generated:
I/O through scaffold.skill_eval.generated). Everything the session would refuse before its first trial is
refused here, with the session's own readers where it has them: the skill as it installs it, the profile
and backend, the gates' treatments, the limits, image aliases, engine pool and report configuration.
It reads files only: ``--collect`` is this.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Final

from scaffold.agents.credentials import load_environment
from scaffold.catalog.builtin import BUILTIN_TASKS_DIR, SUITES, builtin_task_names
from scaffold.catalog.treatments import CONTROL, DYNAMIC_SKILL, dynamic_treatment, kind_treatments
from scaffold.cli.eval.plan import GATE_EXAMPLE, EvalPlan
from scaffold.cli.eval.target import UsageError, resolve_target
from scaffold.cli.user_env import user_env_file
from scaffold.errors import AgentError, GateError, SelectionError
from scaffold.experiment import EXPERIMENT_ID, new_experiment_id
from scaffold.skill_eval.manifest import Manifest
from scaffold.skill_eval.resolve import (
    COMMAND_LINE,
    DEFAULT_AGENT,
    QUICK_TASK,
    Choice,
    EvalSettings,
    Explicit,
    resolve_settings,
    select_tasks,
    with_agent_endpoint,
)

__all__ = ["SUITE_SDKS", "plan_eval"]

SUITE_SDKS: Final[Mapping[str, str]] = {"langsmith": "langsmith", "langfuse": "langfuse"}
"""The SDK distribution each tracing suite needs (the extra of the same name installs it)."""
SUITE_KEYS: Final[Mapping[str, tuple[str, ...]]] = {
    "langsmith": ("LANGSMITH_API_KEY",),
    "langfuse": ("LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"),
}
"""The credentials each tracing suite needs from the environment (the process, then ~/.comet/eval/.env)."""


def _explicit(args: argparse.Namespace) -> Explicit:
    return Explicit(
        tasks=tuple(args.task),
        quick=bool(args.quick),
        agent=args.agent,
        model=args.model,
        base_url=args.base_url,
        judge_agent=args.judge_agent,
        judge_model=args.judge_model,
        judge_base_url=args.judge_base_url,
        profile=args.profile,
        report_config=str(args.report_config) if args.report_config else None,
        backend=args.backend,
    )


def _check_url(option: str, value: str | None) -> None:
    from urllib.parse import urlsplit

    if not value:
        return
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{option} {value!r}: must be an absolute http(s) URL")


def _check_agent_name(option: str, name: str, merged: Mapping[str, str]) -> None:
    from scaffold.agents import known_agents

    known = known_agents(merged)
    if name not in known:
        raise UsageError(f"{option} {name}: unknown agent; known: {', '.join(known)} (custom: ~/.comet/eval/adapters)")


def plan_eval(
    args: argparse.Namespace,
    *,
    process_env: Mapping[str, str] | None = None,
    builtin: Collection[str] | None = None,
) -> EvalPlan:
    """Resolve everything ``comet eval`` needs before running; reads files only (``--collect`` is this)."""
    process = dict(os.environ if process_env is None else process_env)
    merged = load_environment(process)
    builtin = builtin_task_names() if builtin is None else builtin
    if args.quick and args.task:
        raise UsageError(f"--quick runs {QUICK_TASK} only; --task {','.join(args.task)} contradicts it: pass one")
    _check_numbers(args)
    described, manifest = resolve_target(args, builtin)
    # The session's own check of the skill it installs (scaffold.session): what the run would refuse.
    dynamic_treatment(manifest.skill.root, manifest.skill.name)

    suite = _suite(args, manifest, merged)
    explicit = _explicit(args)
    settings = resolve_settings(
        manifest, explicit, merged, default_agent=DEFAULT_AGENT, process=process, env_file=str(user_env_file(process))
    )
    _check_backend(args, settings.backend)
    _check_profile(settings.profile, manifest)
    agent, model, base_url, credentials_problem = _check_agent(args, settings, merged)
    judge = settings.judge
    if judge is not None:
        assert judge[0].value is not None
        _check_agent_name("--judge-agent", judge[0].value, merged)
        _check_url("--judge-base-url", judge[2].value)

    owner = (args.project or manifest.skill.root).absolute()
    experiment_id = args.experiment_id or new_experiment_id()
    if not EXPERIMENT_ID.match(experiment_id):
        raise UsageError(f"--experiment-id {experiment_id!r}: use letters, digits, '.', '_' and '-' (at most 128)")
    runs_dir = (args.out or owner / ".comet" / "eval" / "runs").absolute()

    # The generated tasks' cache key takes the effective model and API (the environment's included), and
    # they are handed to the session explicitly, so that its own cache lookup uses the same key.
    assert agent.value is not None
    hit: list[Path] = []

    def generated() -> Sequence[str] | None:
        from scaffold.skill_eval.generated import cached, load_generated

        assert agent.value is not None
        found = cached(
            manifest, owner=owner, agent=agent.value, model=model.value, base_url=base_url.value, builtin_tasks=builtin
        )
        if found is None:
            return None
        hit.append(found)
        return tuple(t.name for t in load_generated(found, builtin_tasks=builtin).tasks)

    selection = select_tasks(manifest, explicit, builtin, generated)
    if selection.unknown:
        pool = {*builtin, *(t.name for t in manifest.tasks), *manifest.recommended_tasks}
        raise UsageError(f"--task {selection.unknown[0]}: no such task; known: {', '.join(sorted(pool))}")
    if selection.origin == "quick" and QUICK_TASK not in builtin:
        raise UsageError(f"--quick: the built-in task {QUICK_TASK} is missing from {BUILTIN_TASKS_DIR}")
    treatments = _treatments(args, manifest)
    baseline = args.baseline or CONTROL
    if args.baseline and baseline not in treatments:
        raise UsageError(f"--baseline {baseline}: not one of the treatments run ({', '.join(treatments)})")
    gates = (*manifest.quality_gates.gates, *args.gate)
    _check_gates(args.gate, manifest)
    _check_run_files(args, settings, merged)
    return EvalPlan(
        target=described,
        manifest=manifest,
        owner=owner,
        tasks_source=selection.origin,
        tasks=selection.tasks,
        treatments=treatments,
        settings=dataclasses.replace(settings, agent=agent, model=model, base_url=base_url),
        suite=suite,
        baseline=baseline,
        count=_count(args),
        until_decided=_until_decided(args),
        workers=args.workers,
        gates=gates,
        experiment_id=experiment_id,
        runs_dir=runs_dir,
        generated=hit[0] if hit else None,
        credentials_problem=credentials_problem,
    )


def _suite(args: argparse.Namespace, manifest: Manifest, merged: Mapping[str, str]) -> str:
    """The suite, its test file present, and a tracing suite's SDK installed and keys set (checked without
    importing the SDK or opening a connection: ``--collect`` is this too)."""
    suite: str = args.suite or manifest.reporting.suite or "local"
    if suite not in SUITES:
        raise UsageError(f"--suite {suite}: unknown suite; use one of {', '.join(SUITES)}")
    if manifest.reporting.suite and args.suite and manifest.reporting.suite != args.suite:
        raise UsageError(
            f"reporting.suite is {manifest.reporting.suite!r} in {manifest.file}, but the selected suite is "
            f"{args.suite!r} (--suite): make them agree"
        )
    if not SUITES[suite].is_file():
        raise UsageError(f"--suite {suite}: {SUITES[suite]} is missing from this installation")
    sdk = SUITE_SDKS.get(suite)
    if sdk is not None:
        from importlib import metadata

        try:
            metadata.version(sdk)
        except metadata.PackageNotFoundError:
            raise UsageError(f"--suite {suite} needs the {sdk} SDK: pip install 'comet-eval[{suite}]'") from None
    missing = [name for name in SUITE_KEYS.get(suite, ()) if not merged.get(name)]
    if suite == "langsmith" and merged.get("LANGSMITH_TEST_TRACKING", "").strip().lower() == "false":
        missing = []  # the SDK's own switch: the suite runs and sends nothing, so it needs no key
    if missing:
        raise UsageError(
            f"--suite {suite} needs {' and '.join(missing)}: set {'it' if len(missing) == 1 else 'them'} in "
            f"the environment or in {user_env_file()} (comet-eval never writes them anywhere)"
        )
    return suite


def _check_agent(
    args: argparse.Namespace, settings: EvalSettings, merged: Mapping[str, str]
) -> tuple[Choice, Choice, Choice, str | None]:
    """The agent, its model and API (the environment's shown when neither the command line nor the
    manifest sets them), and what is wrong with its credentials (None: fine)."""
    agent = settings.agent
    assert agent.value is not None
    _check_agent_name("--agent" if agent.source == COMMAND_LINE else f"agent ({agent.source})", agent.value, merged)
    _check_url("--base-url", settings.base_url.value)
    from scaffold.agents import create_agent
    from scaffold.agents.install import require_program

    settings = with_agent_endpoint(settings, merged)
    model, base_url = settings.model, settings.base_url
    try:
        made = create_agent(agent.value, merged, model=model.value, base_url=base_url.value)
    except AgentError as exc:
        return agent, model, base_url, str(exc)
    try:
        # Where a run will look for its program: file lookups only (no --version asked), so --collect says it.
        require_program(made, args.backend or "local", merged)
    except AgentError as exc:
        return agent, model, base_url, str(exc)
    return agent, model, base_url, None


DEFAULT_MAX_COUNT = 10


def _until_decided(args: argparse.Namespace) -> bool:
    """``comet eval`` runs until decided unless told a fixed number of trials (--count) or a smoke run
    (--quick). Why the default: one trial per task and treatment can never answer "does the skill help",
    and a fixed number large enough to answer it for a small effect is wasted on a large one; running
    until an anytime-valid test decides spends trials only while the answer is open, never more than
    --max-count, and stays valid however often the trials are looked at."""
    return bool(args.until_decided) or (args.count is None and not args.quick)


def _count(args: argparse.Namespace) -> int:
    if _until_decided(args):
        return int(args.max_count or DEFAULT_MAX_COUNT)
    return int(args.count or 1)


def check_plan_judge(plan: EvalPlan, samples: int, process_env: Mapping[str, str] | None = None) -> None:
    """The session's own check of its judge (scaffold.session.judge_run): an agent that cannot judge, or
    a judge CLI that is not installed, is refused by the run before any trial, and so by --collect. Not
    part of plan_eval: the plan says what was asked for; whether this machine can run it is the run's."""
    from scaffold.judge.config import resolve_judge
    from scaffold.judge.transport import check_judge

    merged = load_environment(dict(os.environ if process_env is None else process_env))
    names = ("agent", "model", "base_url")
    settings = {n: str(s.value) for n, s in zip(names, plan.settings.judge or (), strict=False) if s.value}
    config = resolve_judge(settings, merged, samples=samples)
    if config is None:
        return
    try:
        check_judge(config, merged)
    except (AgentError, SelectionError) as exc:
        raise UsageError(f"the judge: {exc}") from exc


def _check_numbers(args: argparse.Namespace) -> None:
    """The numbers of the command line, as the session checks them before any trial."""
    numbers = (("--count", args.count), ("--max-count", args.max_count), ("--workers", args.workers))
    for flag, value in (*numbers, ("--judge-samples", args.judge_samples)):
        if value is not None and value < 1:
            raise UsageError(f"{flag} {value}: must be 1 or more")
    if args.until_decided and args.count is not None:
        raise UsageError("--count with --until-decided: say how many trials at most with --max-count instead")
    if args.max_count is not None and not _until_decided(args):
        raise UsageError(f"--max-count {args.max_count}: goes with running until decided, not with --count or --quick")
    if args.max_trials is not None and args.max_trials < 0:
        raise UsageError(f"--max-trials {args.max_trials}: must be 0 or more")
    if args.retry_excluded is not None and args.retry_excluded < 0:
        raise UsageError(f"--retry-excluded {args.retry_excluded}: must be 0 or more (0 turns retries off)")
    if args.max_cost is not None and not args.max_cost >= 0:
        raise UsageError(f"--max-cost {args.max_cost:g}: must be a number of US dollars, 0 or more")
    if args.start_window is not None and not args.start_window >= 0:
        raise UsageError(f"--start-window {args.start_window:g}: use 0 (off) or a number of seconds")


def _check_backend(args: argparse.Namespace, backend: Choice) -> None:
    """A backend the session can make, and the docker options only with the docker backend."""
    from scaffold.workspaces.backends import known_backends

    known = known_backends()
    if backend.value not in known:
        raise UsageError(f"--backend {backend.value}: unknown backend; known: {', '.join(known)}")
    if backend.value != "docker" and (args.docker_host or args.docker_pool):
        given = "--docker-host" if args.docker_host else "--docker-pool"
        raise UsageError(f"{given} needs --backend docker (the backend is {backend.value})")


def _check_profile(profile: Choice, manifest: Manifest) -> None:
    """A profile the rubrics know (comet eval runs the built-in suite: no conftest registers another)."""
    from scaffold.rubrics.profiles import known_profiles

    if profile.value is None or profile.value in known_profiles():
        return
    where = "--profile" if profile.source == COMMAND_LINE else f"skill.profile of {manifest.file}"
    raise UsageError(f"{where} {profile.value!r}: unknown evaluation profile; known: {', '.join(known_profiles())}")


def _check_gates(given: Sequence[str], manifest: Manifest) -> None:
    """Every gate parses and names treatments comet eval runs (CONTROL and DYNAMIC_SKILL): a gate on any
    other name fails after every trial has run, for want of that treatment's trials."""
    from scaffold.reports.gates import parse_gate

    runnable = (CONTROL, DYNAMIC_SKILL)
    expressions = [(f"--gate {e!r}", e) for e in given]
    expressions += [
        (f"evaluation.qualityGates.gates[{i}] {e!r} of {manifest.file}", e)
        for i, e in enumerate(manifest.quality_gates.gates)
    ]
    for where, expression in expressions:
        try:
            gate = parse_gate(expression)  # a bad --gate is a usage error before anything runs
        except GateError as exc:
            raise UsageError(f"{exc}; comet eval's treatments are {CONTROL} and {DYNAMIC_SKILL}") from None
        for name in (gate.treatment, gate.baseline):
            if name and name not in runnable:
                raise UsageError(
                    f"{where}: names treatment {name!r}, which comet eval does not run; its treatments are "
                    f"{CONTROL} and {DYNAMIC_SKILL} (the skill {manifest.skill.name}), e.g. {GATE_EXAMPLE!r}"
                )


def _check_run_files(args: argparse.Namespace, settings: EvalSettings, merged: Mapping[str, str]) -> None:
    """The files and variables the session reads before its first trial (image aliases, the engine pool,
    the report configuration), read here with the session's own readers: their errors are usage errors
    of this command, and --collect shows them."""
    from scaffold.reports.config import resolve_outputs
    from scaffold.workspaces.engines import resolve_pool
    from scaffold.workspaces.image_aliases import resolve_image_aliases

    resolve_image_aliases(tuple(args.image_alias), args.image_alias_file, merged)
    if settings.backend.value == "docker":
        # The process environment only, as the session reads the pool (DOCKER_HOST and its TLS variables).
        resolve_pool(tuple(args.docker_host), args.docker_pool, os.environ)
    declared = settings.report_config.declared
    resolve_outputs(html=bool(args.html), config_file=Path(declared) if declared else None, environ=merged)


def _treatments(args: argparse.Namespace, manifest: Manifest) -> tuple[str, ...]:
    """CONTROL and the skill (DYNAMIC_SKILL), as --skill-path evaluates a skill, and the kinds asked for
    (--distractors, --nudge, --self-written: scaffold.catalog.treatment_kinds); --treatment narrows them."""
    try:
        kinds = kind_treatments(
            distractors=args.distractors, pool=args.skill_pool, nudge=args.nudge, self_written=args.self_written
        )
    except SelectionError as exc:
        raise UsageError(str(exc)) from None
    available = (CONTROL, DYNAMIC_SKILL, *(t.name for t in kinds))
    if not args.treatment:
        return available
    from scaffold.experiment.cases import parse_list

    chosen: list[str] = []
    for pattern in parse_list(tuple(args.treatment)):
        matched = [t for t in available if t == pattern or (pattern.endswith("*") and t.startswith(pattern[:-1]))]
        if not matched:
            raise UsageError(
                f"--treatment {pattern}: comet eval runs {', '.join(available[:-1])} and {available[-1]} (the skill "
                f"{manifest.skill.name}); pick among them"
            )
        chosen += [t for t in matched if t not in chosen]
    return tuple(t for t in available if t in chosen)

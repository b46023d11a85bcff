"""I/O. ``comet eval [TARGET] [options]``: evaluate one skill in one command.

The command resolves what to run (the target, its manifest, the tasks and where each came from, the
agent and judge settings), prints it, and then runs **the pytest plugin's session in-process**
(``pytest.main`` on the built-in suite with ``--comet-eval-manifest`` and the options): the same cases,
trials, records, reports and gates as ``pytest local/tests --eval-manifest=...``, never a second
implementation. It only adds what a command line needs around it: the header, one progress line per
finished trial (and a live line on a terminal), the verdicts, report paths and gate results at the end,
and an exit status CI can gate on.

Precedence, for every setting: the command line, then the manifest (``execution``, ``judge``,
``skill.profile``, ``reporting``), then the environment (the process, then ``~/.comet/eval/.env``), then
the default (``claude-code``, the ``local`` backend).

``--collect`` resolves and validates all of that and prints the task list without running pytest at
all: nothing is written (not even the user's ``.env`` template, which the first *run* creates), no agent,
container, socket or tracing SDK is started. Generated tasks come from the cache only there.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sys
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TextIO

from scaffold.agents.credentials import load_environment
from scaffold.errors import AgentError, CometError, GenerationError, SelectionError
from scaffold.experiment import EXPERIMENT_ID, new_experiment_id
from scaffold.session import BUILTIN_TASKS_DIR, QUICK_TASK
from scaffold.skill_eval.manifest import Manifest, find_manifest, load_manifest, synthesize_manifest
from scaffold.skill_eval.user_env import ensure_user_env, user_env_file
from scaffold.treatments import CONTROL, DYNAMIC_SKILL

__all__ = [
    "EXIT_FAILED",
    "EXIT_NO_ANSWER",
    "EXIT_OK",
    "EXIT_USAGE",
    "EvalPlan",
    "UsageError",
    "add_eval_command",
    "builtin_task_names",
    "plan_eval",
    "run_eval",
]

EXIT_OK: Final = 0
"""Every gate and quality gate passed (or there were none and the run produced an answer)."""
EXIT_FAILED: Final = 1
"""A gate or quality gate failed (listed), or a task could not run."""
EXIT_USAGE: Final = 2
"""A usage or configuration error: nothing ran."""
EXIT_NO_ANSWER: Final = 3
"""The run could not produce an answer: task generation failed, or every trial was excluded or errored."""
EXIT_INTERRUPTED: Final = 130

DEFAULT_AGENT: Final = "claude-code"
SUITES: Final = ("local", "langsmith", "langfuse")
SUITE_DIR: Final = BUILTIN_TASKS_DIR.parent / "tests"
"""The built-in suite pytest runs: local/tests beside the built-in tasks."""

EXIT_CODES_HELP: Final = """\
exit status:
  0  every gate and quality gate passed (without any gate: the run produced an answer)
  1  a gate or quality gate failed (each is listed), or a task could not run
  2  usage or configuration error (a bad target, option, manifest, agent or credential): nothing ran
  3  the run could not produce an answer: task generation failed (a partial report is written), or every
     trial was excluded as noise or ended in a harness error
"""


class UsageError(SelectionError):
    """A command line that contradicts itself or names nothing usable (exit status 2)."""


# --- the command line -----------------------------------------------------------------------------------


def add_eval_command(commands: Any) -> argparse.ArgumentParser:
    """The ``eval`` subcommand of ``comet`` (scaffold.cli)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "eval",
        help="evaluate a skill in one command: tasks (declared or generated), CONTROL vs the skill, reports",
        description="Evaluate a skill: its tasks (from comet/eval.yaml, or generated and cached when it "
        "declares none) run under CONTROL and under the skill, then the statistics, reports and gates. "
        "TARGET is a skill folder, its SKILL.md, or a manifest (comet/eval.yaml). Settings: command line > "
        "manifest > environment (process, then ~/.comet/eval/.env) > default (claude-code, local backend).",
        epilog=EXIT_CODES_HELP,
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
    what.add_argument("--count", type=int, default=None, metavar="N", help="trials per task and treatment (default 1)")
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
    agent.add_argument("--profile", metavar="NAME", help="evaluation profile (default: skill.profile, else the task's)")
    run = parser.add_argument_group("how to run it")
    run.add_argument("--backend", metavar="NAME", help="workspace backend: local (default) or docker")
    run.add_argument("-n", "--workers", type=int, default=None, metavar="N", help="trials in parallel (pytest-xdist)")
    run.add_argument("--experiment-id", metavar="ID", help="experiment to write to; an existing one is resumed")
    run.add_argument(
        "--out", type=Path, metavar="DIR", help="where experiments go (default: <project>/.comet/eval/runs)"
    )
    run.add_argument(
        "--collect", action="store_true", help="resolve, validate and list the tasks; run nothing, write nothing"
    )
    report = parser.add_argument_group("reports and gates")
    report.add_argument("--suite", metavar="NAME", help="local (default); langsmith and langfuse are not available yet")
    report.add_argument("--baseline", metavar="NAME", help=f"treatment to compare against (default: {CONTROL})")
    report.add_argument(
        "--gate", action="append", default=[], metavar="EXPR", help="a gate, e.g. 'SKILL not worse than CONTROL'"
    )
    report.add_argument("--html", action="store_true", help="also write report.html")
    report.add_argument("--report-config", type=Path, metavar="FILE", help="report outputs (default: reporting.config)")
    parser.set_defaults(func=run_eval)
    return parser


# --- resolution -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Choice:
    """A resolved value and where it came from (``command line``, ``manifest``, ``environment (NAME)``,
    ``<.env file> (NAME)``, ``default``)."""

    value: str | None
    source: str


@dataclass(frozen=True, slots=True)
class EvalPlan:
    """Everything ``comet eval`` resolved before running (and all ``--collect`` prints)."""

    target: str
    """``manifest <path>`` or ``skill <path>``."""
    manifest: Manifest
    owner: Path
    tasks_source: str
    """``command line``, ``quick``, ``authored``, ``recommended``, ``generated cache``, ``pending generation``."""
    tasks: tuple[tuple[str, str], ...]
    """(task name, what it is) in run order; empty while generation is pending."""
    treatments: tuple[str, ...]
    agent: Choice
    model: Choice
    base_url: Choice
    judge: tuple[Choice, Choice, Choice] | None
    """agent, model, base URL of the judge when it is enabled."""
    profile: Choice
    backend: Choice
    suite: str
    report_config: Choice
    baseline: str
    count: int
    workers: int | None
    gates: tuple[str, ...]
    experiment_id: str
    runs_dir: Path
    generated: Path | None = None
    """The cached generated manifest the tasks come from, when they do."""
    credentials_problem: str | None = None
    """Why the agent cannot start (a credential missing, its program not installed); None: it can."""

    @property
    def experiment_dir(self) -> Path:
        return self.runs_dir / "experiments" / self.experiment_id


def builtin_task_names(folder: Path = BUILTIN_TASKS_DIR) -> tuple[str, ...]:
    """The built-in tasks, which recommendedTasks may name and a manifest's own tasks must not (the names
    the session checks manifests against too)."""
    if not folder.is_dir():
        return ()
    from scaffold.tasks import load_catalog

    return tuple(load_catalog([folder]).names())


def _resolve_target(args: argparse.Namespace, builtin: Collection[str]) -> tuple[str, Manifest]:
    """The manifest to evaluate and how the target reads (see the module docstring); UsageError for a
    contradiction, naming both sides."""
    target: Path | None = args.target
    if target is not None and (args.manifest or args.skill_path):
        given = " and ".join(
            f"{flag} {value}"
            for flag, value in (("--manifest", args.manifest), ("--skill-path", args.skill_path))
            if value
        )
        raise UsageError(f"TARGET {target} and {given} both name what to evaluate: pass one of them")
    if args.manifest and args.skill_path:
        raise UsageError(
            f"--manifest {args.manifest} and --skill-path {args.skill_path} both name what to evaluate: pass one "
            "(a manifest names its skill in skill.source)"
        )
    explicit_manifest: Path | None = args.manifest
    skill: Path | None = args.skill_path
    if target is not None:
        if not target.exists():
            raise UsageError(
                f"TARGET {target}: no such file or folder (a skill folder, its SKILL.md or comet/eval.yaml)"
            )
        if target.is_dir():
            skill = target
        elif target.name == "SKILL.md":
            skill = target.parent
        elif target.suffix in (".yaml", ".yml"):
            explicit_manifest = target
        else:
            raise UsageError(f"TARGET {target}: not a skill folder, a SKILL.md or a manifest (.yaml/.yml)")
    if explicit_manifest is None and skill is None:
        raise UsageError(
            "name the skill to evaluate: comet eval ./my-skill (a skill folder, its SKILL.md or comet/eval.yaml)"
        )
    if explicit_manifest is not None:
        manifest = dataclasses.replace(load_manifest(explicit_manifest, builtin_tasks=builtin), source="explicit")
        described = f"manifest {manifest.file}"
    else:
        assert skill is not None
        if not skill.is_dir():
            raise UsageError(f"--skill-path {skill}: no such folder")
        found = find_manifest(skill)
        if found is not None:
            manifest = dataclasses.replace(load_manifest(found, builtin_tasks=builtin), source="auto-detected")
        else:
            manifest = synthesize_manifest(skill)
        described = f"skill {skill.absolute()}"
    if args.skill_name:
        if manifest.file is not None and args.skill_name != manifest.skill.name:
            raise UsageError(
                f"--skill-name {args.skill_name} contradicts skill.name {manifest.skill.name!r} of {manifest.file}: "
                "drop --skill-name or change the manifest"
            )
        manifest = dataclasses.replace(manifest, skill=dataclasses.replace(manifest.skill, name=args.skill_name))
    return described, manifest


def _from_env(names: Sequence[str], process: Mapping[str, str], merged: Mapping[str, str]) -> Choice | None:
    for name in names:
        if process.get(name):
            return Choice(process[name], f"environment ({name})")
        if merged.get(name):
            return Choice(merged[name], f"{user_env_file(process)} ({name})")
    return None


def _pick(
    cli: str | None, manifest: str | None, env: Choice | None, default: str | None, default_source: str = "default"
) -> Choice:
    if cli:
        return Choice(cli, "command line")
    if manifest:
        return Choice(manifest, "manifest")
    if env is not None:
        return env
    return Choice(default, default_source)


def _judge_enabled(args: argparse.Namespace, manifest: Manifest, merged: Mapping[str, str]) -> bool:
    judge = manifest.judge
    return bool(
        args.judge_agent
        or args.judge_model
        or args.judge_base_url
        or judge.agent
        or judge.model
        or judge.base_url
        or merged.get("BENCH_LLM_JUDGE", "").strip().lower() in ("1", "true", "yes", "on")
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
    for flag, value in (("--count", args.count), ("--workers", args.workers)):
        if value is not None and value < 1:
            raise UsageError(f"{flag} {value}: must be 1 or more")
    described, manifest = _resolve_target(args, builtin)

    suite = _suite(args, manifest)
    agent, model, base_url, credentials_problem = _agent_settings(args, manifest, process, merged)
    judge = _judge_settings(args, manifest, process, merged) if _judge_enabled(args, manifest, merged) else None

    profile = _pick(args.profile, manifest.skill.profile, None, None, "the task's")
    backend = _pick(args.backend, None, None, "local")
    report_config = _pick(
        str(args.report_config) if args.report_config else None,
        str(manifest.reporting.config) if manifest.reporting.config else None,
        _from_env(["COMET_EVAL_REPORT_CONFIG"], process, merged),
        None,
    )
    owner = (args.project or manifest.skill.root).absolute()
    experiment_id = args.experiment_id or new_experiment_id()
    if not EXPERIMENT_ID.match(experiment_id):
        raise UsageError(f"--experiment-id {experiment_id!r}: use letters, digits, '.', '_' and '-' (at most 128)")
    runs_dir = (args.out or owner / ".comet" / "eval" / "runs").absolute()

    # The generated tasks' cache key takes the effective model and API (the environment's included), and
    # they are handed to the session explicitly, so that its own cache lookup uses the same key.
    assert agent.value is not None
    source, tasks, generated = _select_tasks(args, manifest, builtin, owner, agent.value, model.value, base_url.value)
    treatments = _treatments(args, manifest)
    baseline = args.baseline or CONTROL
    if args.baseline and baseline not in treatments:
        raise UsageError(f"--baseline {baseline}: not one of the treatments run ({', '.join(treatments)})")
    gates = (*manifest.quality_gates.gates, *args.gate)
    from scaffold.reports.gates import parse_gate

    for expression in args.gate:
        parse_gate(expression)  # a bad --gate is a usage error before anything runs
    return EvalPlan(
        target=described,
        manifest=manifest,
        owner=owner,
        tasks_source=source,
        tasks=tasks,
        treatments=treatments,
        agent=agent,
        model=model,
        base_url=base_url,
        judge=judge,
        profile=profile,
        backend=backend,
        suite=suite,
        report_config=report_config,
        baseline=baseline,
        count=args.count or 1,
        workers=args.workers,
        gates=gates,
        experiment_id=experiment_id,
        runs_dir=runs_dir,
        generated=generated,
        credentials_problem=credentials_problem,
    )


def _suite(args: argparse.Namespace, manifest: Manifest) -> str:
    suite: str = args.suite or manifest.reporting.suite or "local"
    if suite not in SUITES:
        raise UsageError(f"--suite {suite}: unknown suite; use local (langsmith and langfuse come later)")
    if manifest.reporting.suite and args.suite and manifest.reporting.suite != args.suite:
        raise UsageError(
            f"reporting.suite is {manifest.reporting.suite!r} in {manifest.file}, but the selected suite is "
            f"{args.suite!r} (--suite): make them agree"
        )
    if suite != "local":
        raise UsageError(
            f"--suite {suite}: not available yet (tracing to LangSmith and Langfuse is a later release); "
            "use --suite local (the default): the same trials and reports, on this machine"
        )
    return suite


def _agent_settings(
    args: argparse.Namespace, manifest: Manifest, process: Mapping[str, str], merged: Mapping[str, str]
) -> tuple[Choice, Choice, Choice, str | None]:
    """The agent, its model and API (the environment's shown when neither the command line nor the
    manifest sets them), and what is wrong with its credentials (None: fine)."""
    agent = _pick(args.agent, manifest.execution.agent, _from_env(["BENCH_EVAL_AGENT"], process, merged), DEFAULT_AGENT)
    assert agent.value is not None
    _check_agent_name("--agent" if agent.source == "command line" else f"agent ({agent.source})", agent.value, merged)
    model = _pick(args.model, manifest.execution.model, None, None)
    base_url = _pick(args.base_url, manifest.execution.base_url, None, None)
    _check_url("--base-url", base_url.value)
    from scaffold.agent_install import require_program
    from scaffold.agents import create_agent

    try:
        made = create_agent(agent.value, merged, model=model.value, base_url=base_url.value)
    except AgentError as exc:
        return agent, model, base_url, str(exc)
    if model.value is None and made.model:
        model = Choice(made.model, "environment")
    env_url = _env_base_url(agent.value, merged) if base_url.value is None else None
    if env_url:
        base_url = Choice(env_url, "environment")
    try:
        # Where a run will look for its program: file lookups only (no --version asked), so --collect says it.
        require_program(made, args.backend or "local", merged)
    except AgentError as exc:
        return agent, model, base_url, str(exc)
    return agent, model, base_url, None


def _judge_settings(
    args: argparse.Namespace, manifest: Manifest, process: Mapping[str, str], merged: Mapping[str, str]
) -> tuple[Choice, Choice, Choice]:
    """The judge's agent, model and API; validated here, judged with in a later release."""
    agent = _pick(
        args.judge_agent, manifest.judge.agent, _from_env(["BENCH_JUDGE_AGENT"], process, merged), DEFAULT_AGENT
    )
    assert agent.value is not None
    _check_agent_name("--judge-agent", agent.value, merged)
    model = _pick(
        args.judge_model, manifest.judge.model, _from_env(["BENCH_JUDGE_MODEL"], process, merged), None, "missing"
    )
    url = _pick(
        args.judge_base_url, manifest.judge.base_url, _from_env(["BENCH_JUDGE_BASE_URL"], process, merged), None
    )
    _check_url("--judge-base-url", url.value)
    return agent, model, url


def _env_base_url(agent: str, env: Mapping[str, str]) -> str | None:
    from scaffold.agents.builtin import BUILTIN_CLI_AGENTS, builtin_spec
    from scaffold.agents.custom import load_adapters

    if agent in BUILTIN_CLI_AGENTS:
        names: Sequence[str] = builtin_spec(agent, env).base_url_env
    else:
        spec = load_adapters(env).specs.get(agent)
        names = spec.base_url_env if spec else ()
    return next((env[n] for n in names if env.get(n)), None)


def _treatments(args: argparse.Namespace, manifest: Manifest) -> tuple[str, ...]:
    """CONTROL and the skill (DYNAMIC_SKILL), as --skill-path evaluates a skill; --treatment narrows them."""
    available = (CONTROL, DYNAMIC_SKILL)
    if not args.treatment:
        return available
    from scaffold.cases import parse_list

    chosen: list[str] = []
    for pattern in parse_list(tuple(args.treatment)):
        matched = [t for t in available if t == pattern or (pattern.endswith("*") and t.startswith(pattern[:-1]))]
        if not matched:
            raise UsageError(
                f"--treatment {pattern}: comet eval runs {CONTROL} and {DYNAMIC_SKILL} (the skill "
                f"{manifest.skill.name}); pick among them"
            )
        chosen += [t for t in matched if t not in chosen]
    return tuple(t for t in available if t in chosen)


def _select_tasks(
    args: argparse.Namespace,
    manifest: Manifest,
    builtin: Collection[str],
    owner: Path,
    agent: str,
    model: str | None,
    base_url: str | None,
) -> tuple[str, tuple[tuple[str, str], ...], Path | None]:
    """Which tasks run and where they come from: --task > --quick > evaluation.tasks with recommendedTasks >
    generated (from the cache here; a normal run generates on a miss)."""
    from scaffold.cases import parse_list
    from scaffold.skill_eval.manifest import InlineTask

    declared = {t.name: ("inline" if isinstance(t, InlineTask) else f"source {t.folder}") for t in manifest.tasks}
    for name in manifest.recommended_tasks:
        declared.setdefault(name, "built-in (recommended)")
    if args.task:
        rows: list[tuple[str, str]] = []
        for pattern in parse_list(tuple(args.task)):
            pool = {**dict.fromkeys(builtin, "built-in"), **declared}
            matched = [n for n in pool if n == pattern or (pattern.endswith("*") and n.startswith(pattern[:-1]))]
            if not matched:
                known = ", ".join(sorted(pool))
                raise UsageError(f"--task {pattern}: no such task; known: {known}")
            rows += [(n, pool[n]) for n in sorted(matched) if (n, pool[n]) not in rows]
        return "command line", tuple(rows), None
    if args.quick:
        if QUICK_TASK not in builtin:
            raise UsageError(f"--quick: the built-in task {QUICK_TASK} is missing from {BUILTIN_TASKS_DIR}")
        return "quick", ((QUICK_TASK, "built-in"),), None
    if manifest.tasks or manifest.recommended_tasks:  # merged, as the session does
        label = "authored" if manifest.tasks else "recommended"
        if manifest.tasks and manifest.recommended_tasks:
            label = "authored + recommended"
        return label, tuple(declared.items()), None
    from scaffold.skill_eval.generated import cached, load_generated

    hit = cached(manifest, owner=owner, agent=agent, model=model, base_url=base_url, builtin_tasks=builtin)
    if hit is None:
        return "pending generation", (), None
    generated = load_generated(hit, builtin_tasks=builtin)
    return "generated cache", tuple((t.name, "generated") for t in generated.tasks), hit


# --- the header ---------------------------------------------------------------------------------------------


def header_lines(plan: EvalPlan, *, mode: str) -> list[str]:
    manifest = plan.manifest
    source = {"explicit": "explicit", "auto-detected": "auto-detected", "synthesized": "synthesized (no eval.yaml)"}
    rows: list[tuple[str, str]] = [
        ("Target", plan.target),
        (
            "Manifest",
            f"{source.get(manifest.source, manifest.source)}" + (f": {manifest.file}" if manifest.file else ""),
        ),
        ("Mode", mode),
        ("Suite", plan.suite),
        ("Tasks", f"{plan.tasks_source}" + (f" ({len(plan.tasks)})" if plan.tasks else "")),
    ]
    lines_after = [f"  - {name}  ({what})" for name, what in plan.tasks]
    if plan.tasks_source == "pending generation":
        lines_after.append("  (a normal comet eval run generates 2-4 tasks for this skill first, and caches them)")
    skill = f"{DYNAMIC_SKILL} (skill {manifest.skill.name})"
    shown = [
        skill if t == DYNAMIC_SKILL else t + (" (baseline)" if t == plan.baseline else "") for t in plan.treatments
    ]
    rest: list[tuple[str, str]] = [
        ("Treatments", ", ".join(shown)),
        ("Agent", f"{plan.agent.value} ({plan.agent.source})"),
        ("Model", f"{plan.model.value} ({plan.model.source})" if plan.model.value else "default"),
        ("API", "default" if not plan.base_url.value else f"custom ({plan.base_url.source})"),
    ]
    if plan.credentials_problem:
        rest.append(("Agent check", f"fails: {plan.credentials_problem}"))
    if plan.judge is not None:
        judge_agent, judge_model, judge_url = plan.judge
        rest += [
            ("Judge agent", f"{judge_agent.value} ({judge_agent.source})"),
            ("Judge model", f"{judge_model.value} ({judge_model.source})" if judge_model.value else "missing"),
            ("Judge API", "default" if not judge_url.value else f"custom ({judge_url.source})"),
        ]
    rest += [
        ("Profile", plan.profile.value or "the task's (generic unless it says otherwise)"),
        ("Backend", f"{plan.backend.value}"),
        ("Trials", f"{plan.count} per task and treatment" + (f", {plan.workers} workers" if plan.workers else "")),
        ("Gates", "; ".join(filter(None, [_quality_text(manifest), *plan.gates])) or "none"),
        ("Experiment", str(plan.experiment_dir)),
    ]
    if plan.report_config.value:
        rest.append(("Report config", f"{plan.report_config.value} ({plan.report_config.source})"))
    width = max(len(k) for k, _ in [*rows, *rest]) + 1
    out = [f"{k + ':':<{width}} {v}" for k, v in rows]
    out += lines_after
    out += [f"{k + ':':<{width}} {v}" for k, v in rest]
    return out


def _quality_text(manifest: Manifest) -> str:
    gates = manifest.quality_gates
    parts = [
        f"{name} {value:g}"
        for name, value in (
            ("minWeightedScore", gates.min_weighted_score),
            ("minPassAt1", gates.min_pass_at_1),
            ("maxInstabilityGap", gates.max_instability_gap),
        )
        if value is not None
    ]
    return ", ".join(parts)


def _has_gates(plan: EvalPlan) -> bool:
    return bool(plan.gates) or not plan.manifest.quality_gates.empty


# --- running ---------------------------------------------------------------------------------------------------


def pytest_arguments(plan: EvalPlan, args: argparse.Namespace, manifest_file: Path | None) -> list[str]:
    """pytest's command line for the plan: the built-in suite, the manifest, every option (``--comet-`` forms,
    which exist whatever other plugins are installed)."""
    out = [
        str(SUITE_DIR / "test_tasks.py"),
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
        f"--comet-count={plan.count}",
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
    if args.treatment:
        out.append("--comet-treatment=" + ",".join(plan.treatments))
    out += [f"--comet-gate={gate}" for gate in args.gate]
    if args.html:
        out.append("--comet-html")
    if plan.report_config.value and plan.report_config.source in ("command line", "manifest"):
        out.append(f"--comet-report-config={plan.report_config.value}")
    if plan.workers:
        out += ["-n", str(plan.workers)]
    return out


def run_eval(args: argparse.Namespace, *, out: TextIO | None = None) -> int:
    """``comet eval``: the exit status (EXIT_*)."""
    out = out or sys.stdout
    try:
        plan = plan_eval(args)
    except CometError as exc:
        print(f"comet eval: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.collect:
        return _collect(plan, out)
    created = ensure_user_env()
    if created is not None:
        print(f"Created your comet-eval settings file: {created}", file=out)
        print(
            "Edit it to add your model credentials (every line starts commented out), then run comet eval again.",
            file=out,
        )
    if plan.credentials_problem:
        for line in header_lines(plan, mode="run"):
            print(line, file=out)
        print(f"comet eval: {plan.credentials_problem}", file=sys.stderr)
        return EXIT_USAGE
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
            return EXIT_NO_ANSWER
        except CometError as exc:
            print(f"comet eval: {exc}", file=sys.stderr)
            return EXIT_USAGE
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
    return EXIT_OK


# --- the pytest session in this process ----------------------------------------------------------------------


class _Progress:
    """A pytest plugin for the in-process session: one line per finished trial, a live line on a terminal,
    and what the controller's reporter decided, read at the end."""

    def __init__(self, out: TextIO, total: int, experiment_dir: Path) -> None:
        self.out = out
        self.total = total
        self.done = 0
        self.records: list[Path] = []
        self.invalid = 0
        self.collect_errors: list[str] = []
        self.config: Any = None
        self.started = time.monotonic()
        self._running: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._live = out.isatty()
        self._experiment_dir = experiment_dir
        self._thread: threading.Thread | None = None

    # pytest hooks

    def pytest_configure(self, config: Any) -> None:
        self.config = config

    def pytest_sessionstart(self) -> None:
        if self._live:
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()

    def pytest_collection_finish(self, session: Any) -> None:
        # Under pytest-xdist the controller collects nothing (the workers do): keep the planned count then.
        if session.items:
            self.total = len(session.items)

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.collect_errors.append(str(report.longrepr).strip().splitlines()[-1] if report.longrepr else "")

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        with self._lock:
            self._running[nodeid] = time.monotonic()

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when != "call" and not (report.when == "setup" and report.failed):
            return
        props = dict(report.user_properties)
        with self._lock:
            # The trial runs in the comet_trial fixture (setup): its time is since the item started.
            started = self._running.pop(report.nodeid, None)
            elapsed = time.monotonic() - started if started is not None else report.duration
            self.done += 1
            verdict = str(props.get("comet_verdict", "error" if report.failed else "passed"))
            if verdict == "invalid":
                self.invalid += 1
            if props.get("comet_record"):
                self.records.append(Path(str(props["comet_record"])))
            score = props.get("comet_weighted_score")
            scored = f"  score {score:.2f}" if isinstance(score, float) else ""
            resumed = "  (from an earlier run)" if props.get("comet_resumed") else ""
            case = report.nodeid.rpartition("[")[2].rstrip("]") or report.nodeid
            self._clear()
            print(
                f"[{self.done}/{self.total}] {case}: {verdict}{scored}  {elapsed:.0f} s{resumed}",
                file=self.out,
                flush=True,
            )

    def pytest_sessionfinish(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        self._clear()

    # the live line

    def _clear(self) -> None:
        if self._live:
            self.out.write("\r\x1b[K")
            self.out.flush()

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            line = self.live_line(time.monotonic())
            if line:
                width = shutil.get_terminal_size((100, 20)).columns - 1
                with self._lock:
                    self.out.write("\r\x1b[K" + line[:width])
                    self.out.flush()

    def live_line(self, now: float) -> str:
        """What the live line says at *now*: the trials in progress (the first three: each one's time and
        its agent's turns so far) and the session's elapsed time; empty when no trial is running."""
        with self._lock:
            running = sorted(self._running.items(), key=lambda kv: kv[1])
        if not running:
            return ""
        names = ", ".join(
            f"{n.rpartition('[')[2].rstrip(']')} {_clock(now - t)}{_turns(self._experiment_dir, n)}"
            for n, t in running[:3]
        )
        more = f" +{len(running) - 3}" if len(running) > 3 else ""
        return f"running {len(running)}: {names}{more}  [{_clock(now - self.started)} elapsed]"


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}:{secs:02d}"


def _turns(experiment_dir: Path, nodeid: str) -> str:
    """The agent's model turns so far, counted in the stream it is writing (assistant messages; Codex's
    completed turns); empty when there is none yet. A display hint only: never recorded."""
    case = nodeid.rpartition("[")[2].rstrip("]")
    folder = experiment_dir / "trials" / case
    count = 0
    try:
        for stream in folder.glob("agent.*"):
            with stream.open("rb") as handle:
                for line in handle:
                    if b'"type":"assistant"' in line or b'"type": "assistant"' in line or b'"turn.completed"' in line:
                        count += 1
    except OSError:
        return ""
    return f" ({count} turns)" if count else ""


def _run_pytest(plan: EvalPlan, argv: list[str], out: TextIO) -> int:
    import pytest

    progress = _Progress(out, len(plan.tasks) * len(plan.treatments) * plan.count, plan.experiment_dir)
    try:
        code = int(pytest.main(argv, plugins=[progress]))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    reporter = progress.config.pluginmanager.get_plugin("comet-reporter") if progress.config else None
    return _finish(plan, code, progress, reporter, out)


def _finish(plan: EvalPlan, code: int, progress: _Progress, reporter: Any, out: TextIO) -> int:
    """The lines after the run and the exit status, from pytest's status and what the reporter decided."""
    for message in progress.collect_errors:
        print(f"comet eval: {message}", file=sys.stderr)
    if code == 4:  # pytest's usage error: already printed by pytest (a credential, a manifest, a gate)
        return EXIT_USAGE
    if code == 2:
        print("comet eval: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    if code not in (0, 1):
        print(f"comet eval: the pytest session ended with status {code} (no trial could run)", file=sys.stderr)
        return EXIT_NO_ANSWER
    if reporter is not None:
        for line in reporter.identities:
            print(f"treatment {line}", file=out)
        for line in reporter.verdicts:
            print(f"verdict: {line}", file=out)
        for path in reporter.paths:
            print(f"{path.stem.replace('_', ' ')}: {path}", file=out)
        if reporter.report_error:
            print(f"reports not written: {reporter.report_error}", file=out)
        for result in reporter.gate_results:
            print(f"gate {'PASS' if result.passed else 'FAIL'}: {result.gate.expression}: {result.message}", file=out)
        for line in reporter.quality:
            print(line, file=out)
    answered = _answered(progress.records)
    if not answered:
        print(
            "comet eval: no answer: every trial was excluded as environment noise or ended in a harness error "
            f"(see {plan.experiment_dir})",
            file=sys.stderr,
        )
        return EXIT_NO_ANSWER
    if _has_gates(plan):
        return EXIT_OK if code == 0 else EXIT_FAILED
    if progress.invalid:
        print(f"comet eval: {progress.invalid} item(s) could not run (invalid tasks)", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _answered(records: Sequence[Path]) -> bool:
    """Whether any trial counts: scored (not a harness error) and not excluded as noise."""
    from scaffold.errors import RecordError
    from scaffold.record_files import read_record

    for path in records:
        try:
            record = read_record(path)
        except (RecordError, OSError):
            continue
        if record.verdict != "error" and record.noise.category != "excluded":
            return True
    return False

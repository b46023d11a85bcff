"""The ``comet`` command line.

    comet --version
    comet tasks list  [DIR ...] [--json]
    comet tasks check [DIR ...] [--treatments-dir DIR] [--skill-base NAME=DIR] [--json]
    comet tasks show  NAME [DIR ...] [--json]
    comet trajectory --agent NAME FILE... [--json]
    comet model-server --script FILE [--host H] [--port P] [--log FILE]
    comet trace-server [--host H] [--port P] [--log FILE] [--decoded FILE] [--fail ROUTE=STATUS[xN]]...
                       [--delay ROUTE=SECONDS[xN]]... [--no-multipart] [--zstd]
    comet agents list [--json]
    comet agents install [NAME ...] [--prefix DIR]
    comet eval [TARGET] [options]     (scaffold.cli.eval.command)
    comet env [--json]                the settings as resolved (environment > ~/.comet/eval/.env > default)
    comet images build-base [--release bookworm|trixie] [--tag TAG] [--mirror URL] [--force]
    comet report EXPERIMENT_DIR... [--out DIR] [--baseline NAME] [--html] [--report-config FILE] [--gate EXPR]...
                 [--allow-mixed] [--suite langfuse] [--transcripts]
    comet status EXPERIMENT... [--logs-dir DIR] [--json]   where a run stands (from another shell too)
    comet skill add|show|run|continue|check ...   (comet_engine.skills.cli; its own exit statuses)

Exit statuses: scaffold.errors.ExitStatus, one table for every command (``comet --help`` lists it; each
command's ``--help`` the statuses it can end with).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from scaffold import __version__
from scaffold.catalog.builtin import project_logs_dir
from scaffold.catalog.tasks import Task, TaskCatalog
from scaffold.catalog.treatments import TreatmentCatalog
from scaffold.errors import CometError, ExitStatus, Problem, exit_status_help
from scaffold.experiment.cases import profile_problems, unknown_treatment_problems
from scaffold.session import HarnessSession, Options

__all__ = ["entry", "main"]

REPORT_STATUSES = (
    ExitStatus.OK,
    ExitStatus.FAILED,
    ExitStatus.USAGE,
    ExitStatus.NOT_COMPARABLE,
    ExitStatus.UNREADABLE,
    ExitStatus.REPORTING,
    ExitStatus.BROKEN_PIPE,
)
"""The statuses ``comet report`` ends with (scaffold.errors.ExitStatus)."""


class _Retained:
    """What a command leaves for the process's end to reclaim (see entry): `comet report` puts its records
    here, only while entry() runs (main() called in-process, as tests do, keeps nothing)."""

    active = False
    items: ClassVar[list[object]] = []


def entry() -> None:
    """The ``comet`` console script: ``main``, then the process's exit.

    After ``comet report`` of 100,000 trials, millions of objects are left; the interpreter's teardown
    would free them one by one (about a second) for memory the operating system reclaims at once. So when
    a command retained its data, the output is flushed and the process ends with ``os._exit``, skipping
    the teardown. Only ``report`` does, and it starts nothing that needs an exit handler; every other
    command exits normally (Docker sessions, for one, sweep their containers in an ``atexit`` hook).

    When the reader of the output goes away (``comet report ... | head -1``), the command ends quietly
    with status 141, as a shell reports a process stopped by SIGPIPE, rather than with a traceback.
    """
    import os

    _Retained.active = True
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # Python's advice for this case: point stdout at /dev/null so the flush at exit cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = ExitStatus.BROKEN_PIPE
    if not _Retained.items:
        raise SystemExit(code)
    sys.stderr.flush()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = _parser(skill_commands=words[:1] == ["skill"])
    args = parser.parse_args(words)
    if not getattr(args, "func", None):
        parser.print_help()
        return ExitStatus.USAGE
    try:
        code: int = args.func(args)
    except CometError as exc:
        print(f"comet: {exc}", file=sys.stderr)
        return ExitStatus.USAGE
    return code


def _parser(*, skill_commands: bool = True) -> argparse.ArgumentParser:
    """The command line; the ``skill`` commands are built only when asked for (*skill_commands*): they
    import comet_engine, about 0.2 s that every other command, ``comet report`` first, need not pay."""
    parser = argparse.ArgumentParser(
        prog="comet",
        description="comet-eval: does this skill make agents better?",
        epilog=exit_status_help() + "comet skill has statuses of its own: comet skill --help",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"comet-eval {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    _tasks_parsers(commands)

    trajectory = commands.add_parser(
        "trajectory", help="re-parse saved raw agent streams into the normalized trajectory"
    )
    trajectory.add_argument("--agent", required=True, help="the agent that wrote the streams (claude-code, codex, ...)")
    trajectory.add_argument(
        "files",
        nargs="+",
        type=Path,
        metavar="FILE",
        help="raw stream files; several files are the turns of one conversation, in order",
    )
    trajectory.add_argument("--json", action="store_true", help="print the trajectory as JSON")
    trajectory.set_defaults(func=_trajectory)

    server = commands.add_parser(
        "model-server", help="serve a scripted model (Anthropic Messages and OpenAI Responses) for offline runs"
    )
    server.add_argument("--script", required=True, type=Path, help="the script file (YAML)")
    server.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    server.add_argument("--port", type=int, default=0, help="port (default: any free port)")
    server.add_argument("--log", type=Path, default=None, help="append one JSON line per request to this file")
    server.add_argument(
        "--latency", type=float, default=None, metavar="SECONDS", help="wait before answering each model call"
    )
    server.set_defaults(func=_model_server)

    from scaffold.traceserver.__main__ import add_arguments as trace_server_arguments

    trace_server = commands.add_parser(
        "trace-server", help="record what the LangSmith and Langfuse SDKs send, offline (a stand-in for both)"
    )
    trace_server_arguments(trace_server)
    trace_server.set_defaults(func=_trace_server)

    _agents_commands(commands)
    _eval_commands(commands)

    _engines_commands(commands)

    images = commands.add_parser("images", help="Docker images for the docker backend")
    image_commands = images.add_subparsers(title="images commands", metavar="COMMAND")
    base = image_commands.add_parser(
        "build-base", help="build the base image offline from Debian packages (debootstrap + import)"
    )
    base.add_argument(
        "--release",
        default="bookworm",
        choices=("bookworm", "trixie"),
        help="Debian release: bookworm (Python 3.11, our own tasks' base) or trixie (Python 3.13) (default: bookworm)",
    )
    base.add_argument("--tag", default=None, help="image tag (default: comet-eval/base:RELEASE)")
    base.add_argument("--mirror", default=None, help="Debian mirror URL (default: the one apt uses)")
    base.add_argument("--force", action="store_true", help="rebuild even when the tag exists")
    base.set_defaults(func=_images_build_base)

    report = commands.add_parser(
        "report",
        help="write the reports of one or more experiment directories (merging CI shards) and check gates",
        description="Merge the trial records of every EXPERIMENT_DIR and write summary.md, "
        "comparison_report.md, results.jsonl and (with --html) report.html. Treatments are compared only "
        "when everything but the treatment is the same (agent, agent version, model, endpoint, backend, "
        "harness version, task content).",
        epilog=exit_status_help(REPORT_STATUSES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    report.add_argument("dirs", nargs="+", type=Path, metavar="EXPERIMENT_DIR", help="experiment directories")
    report.add_argument(
        "--out", type=Path, default=None, help="folder for the reports (default: the experiment directory, if one)"
    )
    report.add_argument("--baseline", default="CONTROL", metavar="NAME", help="treatment to compare against")
    report.add_argument("--html", action="store_true", help="also write report.html")
    report.add_argument(
        "--transcripts",
        action="store_true",
        help="also (re)write every trial's transcript.html in its trial folder (e.g. for experiments run "
        "before transcripts were written)",
    )
    report.add_argument("--report-config", type=Path, default=None, metavar="FILE", help="report outputs (JSON)")
    report.add_argument(
        "--gate",
        action="append",
        default=[],
        metavar="EXPR",
        help="e.g. 'SKILL not worse than CONTROL' or 'pass@1 of SKILL >= 0.8' (repeatable; README: gates)",
    )
    report.add_argument(
        "--allow-mixed",
        action="store_true",
        help="report treatments that differ in more than the treatment (agent, model, backend, ...): their "
        "verdicts say 'not comparable: <field> differs', never improvement or regression, and comparison "
        "gates between them fail",
    )
    report.add_argument(
        "--suite",
        default=None,
        choices=("langfuse", "langsmith"),
        help="also upload each experiment (its trials' traces and scores, the summary with the gates) to that "
        "service again, from its records, e.g. after a reporting failure (exit status 6 when the upload fails)",
    )
    report.set_defaults(func=_report)

    _status_parser(commands)

    skill = commands.add_parser("skill", help="skill packages and their engine runs (comet skill --help)")
    if skill_commands:
        from comet_engine.skills.cli import add_commands

        add_commands(skill)
    return parser


def _agents_commands(commands: Any) -> None:
    agents = commands.add_parser("agents", help="the agent CLIs: what is installed, and installing them")
    agent_commands = agents.add_subparsers(title="agents commands", metavar="COMMAND")
    agents_list = agent_commands.add_parser(
        "list", help="every agent: its program (found or not, its version) and credentials (set or not, masked)"
    )
    agents_list.add_argument("--json", action="store_true", help="print JSON")
    agents_list.set_defaults(func=_agents_list)
    agents_install = agent_commands.add_parser(
        "install",
        help="install the pinned agent CLIs (npm, pip) into a prefix runs look in by default",
        description="Install the programs of the agents named (default: the built-in CLIs with a pinned "
        "version) into DIR (default: ~/.comet/eval/agents, which runs look in without any setting).",
    )
    agents_install.add_argument("names", nargs="*", metavar="NAME", help="agents (default: the pinned built-ins)")
    agents_install.add_argument("--prefix", type=Path, default=None, metavar="DIR", help="install folder")
    agents_install.set_defaults(func=_agents_install)


def _eval_commands(commands: Any) -> None:
    from scaffold.cli.eval.command import add_eval_command

    add_eval_command(commands)
    env = commands.add_parser(
        "env",
        help="every setting comet-eval reads, its value and where it comes from; secrets masked",
        description="The settings as a run resolves them: the process environment, then ~/.comet/eval/.env "
        "(COMET_EVAL_HOME moves it), then the default. Credentials are shown as ******** (set) or 'not set', "
        "never their value. Reads only: the file is created by the first comet eval run.",
    )
    env.add_argument("--json", action="store_true", help="print JSON")
    env.set_defaults(func=_env)
    profiles = commands.add_parser(
        "profiles",
        help="the evaluation profiles: their rubric dimensions and weights, and their default interaction",
        description="Each profile a task can be scored by. Which one scores a task: --profile, else the "
        "manifest's skill.profile, else the task.toml's [evaluation] profile, else inferred (category "
        "'comet' or a name starting 'comet-': comet-workflow; otherwise generic).",
    )
    profiles.add_argument("--json", action="store_true", help="print JSON")
    profiles.set_defaults(func=_profiles)


def _profiles(args: argparse.Namespace) -> int:
    from scaffold.rubrics.profiles import get_profile, known_profiles

    found = [get_profile(name) for name in known_profiles()]
    if args.json:
        data = [
            {
                "name": p.name,
                "description": p.description,
                "dimensions": [{"name": n, "weight": w} for n, w in p.weights],
                "weight_sum": round(sum(w for _, w in p.weights), 6),
                "interaction": p.interaction,
                "max_turns": p.max_turns,
            }
            for p in found
        ]
        print(json.dumps(data, indent=2))
        return 0
    for profile in found:
        total = sum(w for _, w in profile.weights)
        print(f"{profile.name}: {profile.description}")
        print(f"  default interaction: {profile.interaction}, max_turns {profile.max_turns}")
        print(f"  {len(profile.weights)} dimensions (weights sum to {total:g}):")
        width = max((len(n) for n, _ in profile.weights), default=0)
        for name, weight in profile.weights:
            print(f"    {name:<{width}}  {weight:g}")
    return 0


def _env(args: argparse.Namespace) -> int:
    from scaffold.cli.user_env import environment_report, sections, user_env_file

    settings = environment_report()
    file = user_env_file()
    if args.json:
        data = [s.as_json() for s in settings]
        print(json.dumps({"file": str(file), "exists": file.is_file(), "settings": data}, indent=2))
        return 0
    state = "" if file.is_file() else " (not created yet: the first comet eval run creates it from the template)"
    print(f"settings file: {file}{state}")
    print("order: the process environment, then that file, then the default")
    width = max(len(s.name) for s in settings)
    for title, rows in sections(settings):
        print(f"\n[{title}]")
        for row in rows:
            if row.source == "not set":
                print(f"  {row.name:<{width}}  not set")
            else:
                print(f"  {row.name:<{width}}  {row.shown}  ({row.source})")
    return 0


def _tasks_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``comet tasks list|check|show``."""
    tasks = commands.add_parser("tasks", help="list and check task folders")
    task_commands = tasks.add_subparsers(title="tasks commands", metavar="COMMAND")

    listing = task_commands.add_parser("list", help="the tasks of one or more tasks folders")
    _dirs_arguments(listing)
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(func=_tasks_list, treatments_dir=[], skill_base=[])

    check = task_commands.add_parser("check", help="every problem in every task; exit 1 when there is any")
    _dirs_arguments(check)
    check.add_argument(
        "--treatments-dir",
        action="append",
        default=[],
        type=Path,
        metavar="DIR",
        help="treatments folder(s) to check default_treatments against (default: treatments/ beside each DIR)",
    )
    check.add_argument("--skill-base", action="append", default=[], metavar="NAME=DIR")
    check.add_argument("--json", action="store_true", help="print JSON: each task's format, problems and warnings")
    check.set_defaults(func=_tasks_check)

    show = task_commands.add_parser("show", help="one task as loaded: its format, settings and unused keys")
    show.add_argument("name", metavar="NAME", help="the task's name")
    _dirs_arguments(show)
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(func=_tasks_show, treatments_dir=[], skill_base=[])


def _dirs_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dirs", nargs="*", type=Path, metavar="DIR", help="tasks folder(s) (default: local/tasks)")


def _session(args: argparse.Namespace) -> HarnessSession:
    """The harness session of a ``comet tasks`` command: its folders resolve as a pytest run's do."""
    options = Options(
        root=Path(),
        tasks_dirs=tuple(args.dirs),
        treatments_dirs=tuple(args.treatments_dir),
        skill_bases=tuple(args.skill_base),
    )
    return HarnessSession(options)


def _tasks_list(args: argparse.Namespace) -> int:
    session = _session(args)
    catalog, _ = session.catalogs()
    rows: list[dict[str, Any]] = []
    for name in catalog.names():
        task = catalog.tasks.get(name)
        if task is None:
            rows.append({"name": name, "status": "invalid", "problems": len(catalog.broken[name])})
            continue
        meta = task.spec.metadata
        rows.append(
            {
                "name": name,
                "status": "ok",
                "format": task.format,
                "category": meta.category,
                "difficulty": meta.difficulty,
                "default_treatments": list(meta.default_treatments),
                "description": meta.description,
                "path": str(task.root),
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("no tasks found in " + ", ".join(str(d) for d in session.task_folders()))
        return 0
    width = max(len(r["name"]) for r in rows)
    # At least 8 wide, as before; wider for Harbor's categories ("software-engineering").
    category = max([8, *(len(r["category"]) for r in rows if r["status"] == "ok")])
    for row in rows:
        if row["status"] == "invalid":
            print(f"{row['name']:<{width}}  INVALID ({row['problems']} problems; run: comet tasks check)")
        else:
            treatments = ",".join(row["default_treatments"])
            print(
                f"{row['name']:<{width}}  {row['format']:<6} {row['category']:<{category}} {row['difficulty']:<6} "
                f"{treatments:<30} {row['description']}"
            )
    return 0


def _tasks_check(args: argparse.Namespace) -> int:
    """Every problem, then every warning (accepted: an index.yaml entry that disagrees with task.toml),
    then one line per task with its format and state; exit 1 when there is any problem."""
    catalog, treatments = _session(args).catalogs()
    problems: list[Problem] = []
    cross = _cross_problems(catalog, treatments)
    for problem in [*catalog.problems(), *treatments.problems(), *(p for found in cross.values() for p in found)]:
        if problem not in problems:  # an unreadable treatments file is also named beside each task it may break
            problems.append(problem)
    loaded = {**catalog.partial, **catalog.tasks}
    rows: list[dict[str, Any]] = []
    for name in catalog.names():
        task = loaded.get(name)
        rows.append(
            {
                "name": name,
                "format": task.format if task is not None else None,
                "status": "invalid" if name in catalog.broken or name in cross else "ok",
                "problems": [str(p) for p in (*catalog.broken.get(name, ()), *cross.get(name, ()))],
                "warnings": [str(w) for w in task.warnings] if task is not None else [],
            }
        )
    if args.json:
        shown = {"tasks": rows, "problems": [str(p) for p in problems]}
        print(json.dumps(shown, indent=2))
        return 1 if problems else 0
    for problem in problems:
        print(problem)
    for row in rows:
        for warning in row["warnings"]:
            print(f"warning: {warning}")
    width = max((len(row["name"]) for row in rows), default=0)
    for row in rows:
        state = "INVALID" if row["status"] == "invalid" else "ok"
        notes = f" ({len(row['warnings'])} warning(s))" if row["warnings"] else ""
        print(f"  {row['name']:<{width}}  {row['format'] or '?':<6}  {state}{notes}")
    if problems:
        print(f"\n{len(problems)} problem(s); {len(catalog.names())} task(s) checked", file=sys.stderr)
        return 1
    print(f"{len(catalog.tasks)} task(s) OK; {len(treatments.treatments)} treatment(s) OK")
    return 0


def _tasks_show(args: argparse.Namespace) -> int:
    """One task as loaded: what the runtime reads (the mapped spec, Harbor's settings), what was left
    unused (a Harbor task's keys we do not act on, kept as written), its warnings and problems."""
    catalog, _ = _session(args).catalogs()
    task = catalog.tasks.get(args.name) or catalog.partial.get(args.name)
    if task is None and args.name not in catalog.broken:
        known = ", ".join(catalog.names()) or "none"
        print(f"comet: no task {args.name!r}; known: {known}", file=sys.stderr)
        return 2
    shown: dict[str, Any] = {
        "name": args.name,
        "format": task.format if task is not None else None,
        "path": str(task.root) if task is not None else None,
        "spec": task.spec.model_dump(mode="json") if task is not None else None,
        "harbor": _plain_harbor(task),
        "template": dict(task.template) if task is not None else {},
        "warnings": [str(w) for w in task.warnings] if task is not None else [],
        "problems": [str(p) for p in catalog.broken.get(args.name, ())],
    }
    if args.json:
        print(json.dumps(shown, indent=2, default=str))
    else:
        for key, value in shown.items():
            if isinstance(value, dict):
                print(f"{key}:")
                for sub, item in value.items():
                    print(f"  {sub}: {json.dumps(item, default=str)}")
            elif isinstance(value, list):
                print(f"{key}:" + ("" if value else " none"))
                for item in value:
                    print(f"  {item}")
            else:
                print(f"{key}: {value}")
    return 1 if shown["problems"] else 0


def _plain_harbor(task: Task | None) -> dict[str, Any] | None:
    if task is None or task.harbor is None:
        return None
    settings = task.harbor
    # The env tables by name only: SkillsBench's [solution.env] holds API keys, and nothing the harness
    # prints may show a secret.
    return {
        "verifier_env": [name for name, _ in settings.verifier_env],
        "solution_env": [name for name, _ in settings.solution_env],
        "environment_env": [name for name, _ in settings.environment_env],
        "allow_internet": settings.allow_internet,
        "docker_image": settings.docker_image,
        "build_timeout_sec": settings.build_timeout_sec,
        "distractor_skills": list(settings.distractor_skills),
        "uv_shim": settings.uv_shim,
        "unused": dict(settings.unused),
    }


def _trajectory(args: argparse.Namespace) -> int:
    from scaffold.agents.streams import parser_for
    from scaffold.agents.streams.events import merge_turns

    parse = parser_for(args.agent)
    turns = []
    for file in args.files:
        try:
            with file.open(encoding="utf-8", errors="replace") as handle:
                turns.append(parse(handle))
        except OSError as exc:
            raise CometError(f"{file}: cannot be read: {exc.strerror}") from None
    trajectory = merge_turns(turns)
    summary = trajectory.summary()
    if args.json:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
        return 0
    tokens = trajectory.tokens
    lines = [
        f"agent:            {trajectory.agent} {trajectory.agent_version or ''}".rstrip(),
        f"session:          {trajectory.session_id or 'N/A'}",
        f"conversation:     {trajectory.conversation_turns} turn(s); model calls {_na(trajectory.turns)}",
        f"tool calls:       {len(trajectory.tool_calls)}"
        + (f" ({', '.join(sorted({c.name for c in trajectory.tool_calls}))})" if trajectory.tool_calls else ""),
        f"commands:         {len(trajectory.commands)}",
        f"skills invoked:   {', '.join(trajectory.skills_invoked) or 'none'}",
        *(
            # Failed or unanswered skill calls: shown beside the invocations, never counted as one.
            [f"skills attempted: {', '.join(trajectory.skills_attempted)} (the call failed; not invoked)"]
            if trajectory.skills_attempted
            else []
        ),
        "tokens:           "
        + (
            f"input {tokens.input}, output {tokens.output}, cache read {tokens.cache_read}, "
            f"cache write {tokens.cache_write}"
            if tokens
            else "N/A"
        ),
        f"cost (USD):       {_na(trajectory.cost_usd)}",
        f"completed:        {trajectory.completed}",
        f"malformed lines:  {trajectory.malformed_lines}",
    ]
    lines += [f"command:          {c}" for c in trajectory.commands[:20]]
    lines += [f"permission denied: {d}" for d in trajectory.permission_denials]
    lines += [f"error:            {e}" for e in trajectory.errors]
    if trajectory.final_text:
        lines.append("final text:       " + trajectory.final_text.strip().replace("\n", "\n                  ")[:2000])
    print("\n".join(lines))
    return 0


def _model_server(args: argparse.Namespace) -> int:
    from scaffold.modelserver.__main__ import main as serve

    argv = ["--script", str(args.script), "--host", args.host, "--port", str(args.port)]
    if args.log:
        argv += ["--log", str(args.log)]
    if args.latency is not None:
        argv += ["--latency", str(args.latency)]
    return serve(argv)


def _trace_server(args: argparse.Namespace) -> int:
    from scaffold.traceserver.__main__ import serve

    return serve(args)


def _agents_list(args: argparse.Namespace) -> int:
    from scaffold.agents.install import agent_statuses

    statuses, problems = agent_statuses()
    if args.json:
        print(json.dumps([status.as_json() for status in statuses], indent=2))
        return 0
    for status in statuses:
        if status.install is None:
            print(f"{status.name}  ({status.origin}; runs no program of its own)")
            continue
        install = status.install
        package = f"{install.kind} {install.package}@{install.version or 'latest'}" if install.package else "none"
        print(f"{status.name}  ({status.origin}; {package})")
        found = status.lookup.found if status.lookup else None
        if found:
            print(f"  program      {install.executable}: {found}, version {status.version or 'unknown'}")
        else:
            print(f"  program      {install.executable}: not found (comet agents install {status.name})")
        print("  credentials  one of: " + ", ".join(c.shown() for c in status.credentials))
    for problem in problems:
        print(f"invalid adapter: {problem}")
    return 0


def _agents_install(args: argparse.Namespace) -> int:
    from scaffold.agents.install import install_agents

    return install_agents(args.names, args.prefix)


def _engines_commands(commands: Any) -> None:
    engines = commands.add_parser("engines", help="the Docker engines of a pool (docs/scale.md)")
    engine_commands = engines.add_subparsers(title="engines commands", metavar="COMMAND")
    check = engine_commands.add_parser(
        "check",
        help="for each engine: reachable, version, bind or copy mode, base and task images, capacity, and the "
        "round trip of one container; exit 1 when one is unreachable",
    )
    check.add_argument(
        "--docker-host",
        action="append",
        default=[],
        metavar="URL[*N]",
        help="an engine of the pool, repeatable (default: $COMET_DOCKER_HOSTS, else the pool file, else DOCKER_HOST)",
    )
    check.add_argument("--docker-pool", type=Path, metavar="FILE", help="a pool file of [[engines]] tables")
    check.add_argument("--json", action="store_true", help="one JSON object per engine, in a list")
    check.set_defaults(func=_engines_check)


def _engines_check(args: argparse.Namespace) -> int:
    from concurrent.futures import ThreadPoolExecutor

    from scaffold.agents.credentials import load_environment
    from scaffold.session import default_workspace_root
    from scaffold.workspaces.docker.pool import check_engine
    from scaffold.workspaces.engines import default_engine, resolve_pool, total_capacity

    environ = load_environment()
    engines = list(resolve_pool(args.docker_host, args.docker_pool, environ)) or [default_engine(environ)]
    root = default_workspace_root().absolute()
    with ThreadPoolExecutor(max_workers=min(16, len(engines))) as pool:
        found = list(pool.map(lambda engine: check_engine(engine, root), engines))
    if args.json:
        print(json.dumps([c.to_json() for c in found], indent=2))
    else:
        for c in found:
            if not c.reachable:
                print(f"{c.engine.describe()}: UNREACHABLE: {c.problem}")
                continue
            base = ", ".join(c.base_images) or "none"
            missing = f" (missing: {', '.join(c.missing_base)})" if c.missing_base else ""
            trip = f"{c.round_trip_ms:.0f} ms" if c.round_trip_ms is not None else "not measured (no base image)"
            swept = f", swept {c.swept} left by dead sessions" if c.swept else ""
            tls = "on" if c.engine.tls else "off"
            print(f"{c.engine.describe()}: docker {c.version}, {c.mode or 'mode unknown'} mode, TLS {tls}")
            print(f"  base images {base}{missing}; {c.task_images} task images; {c.cpus} CPUs, {c.memory_gb:g} GB")
            print(f"  capacity {c.engine.capacity}; one container: {trip}{swept}")
        live = [c.engine for c in found if c.reachable]
        print(
            f"pool: {len(live)} of {len(found)} engines reachable, capacity {total_capacity(live)} "
            f"of {total_capacity(engines)}"
        )
    return 0 if all(c.reachable for c in found) else 1


def _images_build_base(args: argparse.Namespace) -> int:
    from scaffold.workspaces.docker.base_image import base_tag, build_base_image

    release = args.release
    image = build_base_image(args.tag or base_tag(release), mirror=args.mirror, suite=release, force=args.force)
    verb = "built" if image.built else "already present, reused"
    print(f"{image.tag} {verb} ({image.image_id[:19]}, {image.duration_s:.0f} s)")
    return 0


def _report(args: argparse.Namespace) -> int:
    from scaffold.agents.credentials import load_environment
    from scaffold.errors import MixedError, ReportError
    from scaffold.reports.comparable import identity_line
    from scaffold.reports.config import resolve_outputs
    from scaffold.reports.gates import evaluate_gates, parse_gate
    from scaffold.reports.write import report_experiments

    gates = [parse_gate(expression) for expression in args.gate]  # parse errors before any work
    if args.suite == "langfuse":
        from scaffold.tracing.langfuse_report import settings_from

        settings_from(load_environment())  # so are missing keys of --suite
    elif args.suite == "langsmith" and not load_environment().get("LANGSMITH_API_KEY"):
        from scaffold.errors import TracingError

        raise TracingError(
            "comet report --suite langsmith needs LANGSMITH_API_KEY: set it in the environment or in "
            "~/.comet/eval/.env (comet-eval never writes it anywhere)"
        )
    # $COMET_EVAL_REPORT_CONFIG from the process environment, then ~/.comet/eval/.env, as in a pytest run.
    outputs = resolve_outputs(html=args.html, config_file=args.report_config, environ=load_environment())
    dirs: list[Path] = args.dirs
    if args.out is None and len(dirs) > 1:
        raise ReportError("several experiment directories are merged: say where the reports go with --out DIR")
    out: Path = args.out if args.out is not None else dirs[0]
    keep = _Retained.active
    try:
        reported = report_experiments(
            dirs, out, baseline=args.baseline, outputs=outputs, keep_records=keep, allow_mixed=args.allow_mixed
        )
    except MixedError as exc:
        print(f"comet: {exc}", file=sys.stderr)
        return ExitStatus.NOT_COMPARABLE
    if keep:
        _Retained.items.append(reported)  # freed by the process's end (entry), not object by object
    written = reported.written
    analysis = written.analysis
    print(f"{reported.trials} trial(s) of {len(analysis.tasks)} task(s) from {len(reported.dirs)} directory(ies)")
    for treatment in analysis.reports:
        if treatment.identity is not None:
            print(f"{treatment.name}: {identity_line(treatment.identity)}")
    for note in analysis.notes:
        print(f"note: {note}")
    for problem in reported.problems:
        field = f"field {problem.field}: " if problem.field else ""
        print(f"unreadable: {problem.file}: {field}{problem.reason}", file=sys.stderr)
    for verdict in analysis.verdicts:
        print(f"{verdict.treatment} vs {verdict.baseline}: {verdict.label}")
    for path in written.paths:
        print(f"wrote {path}")
    if args.transcripts:
        from scaffold.reports.transcripts import write_transcripts

        transcripts = write_transcripts(dirs)
        print(f"wrote {transcripts.written} transcript(s)")
        for line in transcripts.problems:
            print(f"transcript not written: {line}", file=sys.stderr)
    results = evaluate_gates(gates, analysis)
    for result in results:
        print(f"gate {'PASS' if result.passed else 'FAIL'}: {result.gate.expression}: {result.message}")
    upload_failed = args.suite is not None and _upload_again(args.suite, dirs, results)
    if not all(r.passed for r in results):
        return 1  # a failed gate is the answer CI asks for first; unreadable records are listed above
    if upload_failed:
        return ExitStatus.REPORTING
    if reported.problems:
        print(
            f"comet: {len(reported.problems)} record file(s) could not be read; the reports list them and "
            f"leave them out (exit status {int(ExitStatus.UNREADABLE)})",
            file=sys.stderr,
        )
        return ExitStatus.UNREADABLE
    return 0


def _status_parser(commands: Any) -> None:
    status = commands.add_parser(
        "status",
        help="where a run stands: trials done, running (phase, turn), queued, elapsed, ETA, spend",
        description="Read an experiment folder while its trials run (or after): the records, the progress "
        "file of each running trial and the session's plan.json. Several folders (CI shards) are added up. "
        "Exit status 0; 2 when an EXPERIMENT is neither a folder nor an experiment under --logs-dir.",
    )
    status.add_argument(
        "experiments",
        nargs="+",
        metavar="EXPERIMENT",
        help="an experiment folder, or an experiment id under --logs-dir",
    )
    status.add_argument(
        "--logs-dir",
        type=Path,
        default=project_logs_dir(Path()),
        help="where experiment ids are looked up (default: local/logs)",
    )
    status.add_argument("--json", action="store_true", help="the figures as JSON, for scripts")
    status.set_defaults(func=_status)


def _status(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from scaffold.errors import SelectionError
    from scaffold.experiment import EXPERIMENT_ID
    from scaffold.experiment.status import read_status, status_json, status_line, status_view

    roots: list[Path] = []
    for given in args.experiments:
        folder = Path(given)
        by_id = args.logs_dir / "experiments" / given
        if folder.is_dir():
            roots.append(folder.absolute())
        elif EXPERIMENT_ID.match(given) and by_id.is_dir():
            roots.append(by_id.absolute())
        else:
            raise SelectionError(
                f"{given}: neither an experiment folder nor an experiment id under {args.logs_dir / 'experiments'} "
                "(pass the folder, or --logs-dir DIR)"
            )
    status = read_status(roots, datetime.now(UTC))
    if args.json:
        print(json.dumps(status_json(status), indent=2))
        return 0
    print(status_line(status))
    for line in status_view(status):
        print(line)
    return 0


def _upload_again(suite: str, dirs: list[Path], results: Any) -> bool:
    """``comet report --suite``: upload each experiment again; True when an upload failed (listed)."""
    from scaffold.agents.credentials import load_environment

    if suite == "langsmith":
        return _upload_again_langsmith(dirs)
    from scaffold.tracing.langfuse_report import connect, reupload, settings_from

    settings = settings_from(load_environment())  # TracingError: a usage error, nothing sent
    reporter = connect(settings, check=True)
    failed = False
    try:
        for folder in dirs:
            sent = reupload(folder, settings, results, reporter)
            ok = len([u for u in sent.uploads if not u.error])
            print(f"{suite}: {ok} of {len(sent.uploads)} trial trace(s) of {folder} sent to {settings.shown_url}")
            for upload in sent.uploads:
                if upload.error:
                    print(f"{suite} FAILED: {upload.case_id}: {upload.error}", file=sys.stderr)
            if sent.summary[1]:
                print(f"{suite} FAILED: experiment summary: {sent.summary[1]}", file=sys.stderr)
            print(f"tracing status: {sent.status_file}")
            failed = failed or sent.failed
    finally:
        reporter.close()
    return failed


def _upload_again_langsmith(dirs: list[Path]) -> bool:
    """``comet report --suite langsmith``: each experiment's trials as runs of a new LangSmith experiment
    (the suite's dataset and examples); True when anything failed (listed, in our words, never the key)."""
    from scaffold.agents.credentials import load_environment
    from scaffold.tracing.langsmith_report import reupload

    failed = False
    for folder in dirs:
        sent = reupload(folder, load_environment())
        print(f"langsmith: {sent.trials} trial run(s) of {folder} sent to experiment {sent.experiment}")
        for failure in sent.failures:
            print(f"langsmith FAILED: {failure}", file=sys.stderr)
        failed = failed or bool(sent.failures)
    return failed


def _na(value: object) -> str:
    return "N/A" if value is None else str(value)


def _cross_problems(catalog: TaskCatalog, treatments: TreatmentCatalog) -> dict[str, list[Problem]]:
    """Problems that only show when tasks meet treatments and profiles, by task, for broken tasks whose
    task.toml is valid too: the same checks (scaffold.experiment.cases) as the INVALID item of a pytest run."""
    problems: dict[str, list[Problem]] = {}
    everything = {**catalog.tasks, **catalog.partial}
    for name in sorted(everything):
        task = everything[name]
        found = unknown_treatment_problems(task, task.spec.metadata.default_treatments, treatments)
        found.extend(profile_problems(task))
        if found:
            problems[name] = found
    return problems


if __name__ == "__main__":
    entry()

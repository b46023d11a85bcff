"""``comet skill``: install, show, run, continue and check skill-package runs.

    comet skill add PATH [--project DIR] [--force]
    comet skill show NAME|PATH [--project DIR]
    comet skill run NAME|PATH (--run-id ID | --change DIR [--run-id ID]) [--project DIR] [--input JSON]
    comet skill continue (--run-id ID | --change DIR) [--project DIR]
            [--status S [--action-id ID] [--summary TEXT] [--artifact NAME=VALUE]... [--output JSON] [--digest D]]
            | [--propose KIND:REF [--input JSON]] | [--complete] | [--upgrade NAME|PATH]
    comet skill check (--run-id ID | --change DIR) [--project DIR] [--scope progress|step|completion]

Every command takes ``--json`` (one JSON object on stdout; errors as ``{"error": {...}}``).

Exit codes: 0 done (the run is waiting for its next action, or completed with every completion check
passing; every check passed); 1 the run is blocked, failed or cancelled, or a check FAILed; 2 usage or
validation error (a bad package, an unknown skill or run, a choice not offered); 3 conflict (the run
already exists or has ended, the report is for another action or a stale proposal, an outcome differs
from the one recorded, an upgrade guard refused); 4 integrity (a snapshot was tampered with, a run file is damaged).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from comet_engine.errors import (
    ConflictError,
    CorruptRunError,
    DefinitionError,
    EngineError,
    RejectedError,
    RunExistsError,
    RunNotFoundError,
    SkillNotFoundError,
    UnsafePathError,
)
from comet_engine.skills.install import install
from comet_engine.skills.layout import RunLayout
from comet_engine.skills.resolve import resolve
from comet_engine.skills.snapshot import skill_hash

if TYPE_CHECKING:
    from comet_engine.skills.session import Report

__all__ = ["EXIT_BLOCKED", "EXIT_CONFLICT", "EXIT_INTEGRITY", "EXIT_OK", "EXIT_USAGE", "add_commands", "main"]

EXIT_OK, EXIT_BLOCKED, EXIT_USAGE, EXIT_CONFLICT, EXIT_INTEGRITY = 0, 1, 2, 3, 4
#: Refusals that are the guardrails speaking (the run is blocked), and refusals of a malformed request.
_BLOCKED_CODES = {"iteration-budget", "not-declared", "confirmation-required", "retry-budget"}
_EPILOG = """\
exit codes:
  0  the run waits for its next action, or completed with its completion checks passing
  1  blocked by a guardrail, failed or cancelled, or a check FAILed
  2  usage or validation error (invalid package, unknown skill or run, a choice not offered)
  3  conflict (the run exists or has ended, a stale action id or proposal digest, an upgrade guard)
  4  integrity (a tampered snapshot, a damaged run file)
every command takes --json"""
_USAGE_CODES = {"invalid-choice", "invalid-kind", "invalid-outcome", "invalid-verdict", "nothing-pending"}


def add_commands(parser: argparse.ArgumentParser) -> None:
    """Add the ``skill`` subcommands to *parser* (the ``comet skill`` parser of the harness CLI)."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = _EPILOG
    commands = parser.add_subparsers(title="skill commands", metavar="COMMAND")

    add = commands.add_parser("add", help="validate a skill package and install it into the project")
    add.add_argument("path", type=Path, metavar="PATH", help="the package folder (SKILL.md + comet/skill.yaml)")
    _project(add)
    add.add_argument("--force", action="store_true", help="replace an installed package of the same name")
    add.set_defaults(skill_func=_add)

    show = commands.add_parser("show", help="a package as resolved: steps, guardrails, checks, hash")
    show.add_argument("ref", metavar="NAME|PATH")
    _project(show)
    show.set_defaults(skill_func=_show)

    run = commands.add_parser("run", help="start a run: snapshot the package and propose its first action")
    run.add_argument("ref", metavar="NAME|PATH")
    _address(run)
    run.add_argument("--input", type=_json_object, default=None, metavar="JSON", help="the run's input object")
    run.set_defaults(skill_func=_run)

    cont = commands.add_parser(
        "continue", help="report the pending action, decide a question, propose, complete or upgrade; or show"
    )
    _address(cont)
    verb = cont.add_mutually_exclusive_group()
    verb.add_argument(
        "--status",
        metavar="S",
        help="answer the pending item: succeeded | failed for an action, one of the offered choices for a question",
    )
    verb.add_argument(
        "--propose", metavar="KIND:REF", help="adaptive runs: propose the next action (invoke_skill|call_tool|handoff)"
    )
    verb.add_argument("--complete", action="store_true", help="adaptive runs: end the run (completion checks run)")
    verb.add_argument("--upgrade", metavar="NAME|PATH", help="move the run to another version of its skill")
    cont.add_argument("--action-id", metavar="ID", help="the pending id you are reporting on (refused if stale)")
    cont.add_argument("--summary", metavar="TEXT", help="what was done (stored as the step's output)")
    cont.add_argument(
        "--artifact", action="append", default=[], metavar="NAME=VALUE", help="an artifact produced (repeatable)"
    )
    cont.add_argument("--output", type=_json_object, default=None, metavar="JSON", help="the step's output object")
    cont.add_argument("--input", type=_json_object, default=None, metavar="JSON", help="with --propose: its input")
    cont.add_argument("--digest", metavar="D", help="the proposal digest the user decided on (pending-action.json)")
    cont.set_defaults(skill_func=_continue)

    check = commands.add_parser("check", help="evaluate the run's runtime checks: PASS/FAIL per check")
    _address(check)
    check.add_argument("--scope", choices=("progress", "step", "completion"), default="progress")
    check.set_defaults(skill_func=_check)

    parser.set_defaults(func=_dispatch, skill_parser=parser)


def main(argv: list[str] | None = None) -> int:
    """Run ``comet skill ...`` on its own (the harness's ``comet`` calls ``add_commands`` instead)."""
    parser = argparse.ArgumentParser(prog="comet skill", description="skill packages and their runs")
    add_commands(parser)
    args = parser.parse_args(argv)
    return int(args.func(args))


# --- arguments ------------------------------------------------------------------------------------------


def _project(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--project", type=Path, default=Path(), metavar="DIR", help="project root (default: .)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def _address(parser: argparse.ArgumentParser) -> None:
    _project(parser)
    parser.add_argument("--run-id", metavar="ID", help="standalone run: <project>/.comet/runs/<ID>/")
    parser.add_argument("--change", type=Path, metavar="DIR", help="change mode: the run of DIR, stored in DIR/.comet/")


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError('expected a JSON object, e.g. \'{"key": "value"}\'')
    return value


def _layout(args: argparse.Namespace) -> RunLayout:
    if args.change is not None:
        return RunLayout.change(args.project, args.change, args.run_id)
    if not args.run_id:
        raise _Usage("name the run: --run-id ID (standalone) or --change DIR (change mode)")
    return RunLayout.standalone(args.project, args.run_id)


class _Usage(EngineError):
    """A command line that cannot be acted on."""


# --- dispatch and errors --------------------------------------------------------------------------------


def _dispatch(args: argparse.Namespace) -> int:
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "skill_func", None)
    if func is None:
        args.skill_parser.print_help()
        return EXIT_USAGE
    try:
        return func(args)
    except EngineError as exc:
        return _fail(args, exc)
    except OSError as exc:
        return _fail(args, exc)


def _fail(args: argparse.Namespace, exc: Exception) -> int:
    code = _exit_code(exc)
    kind = getattr(exc, "code", None) or type(exc).__name__
    if getattr(args, "json", False):
        body: dict[str, Any] = {"type": type(exc).__name__, "code": kind, "message": str(exc), "exit": code}
        problems = getattr(exc, "problems", None)
        if problems:
            body["problems"] = list(problems)
        print(json.dumps({"error": body}, indent=2, ensure_ascii=False))
    else:
        print(f"comet skill: {exc}", file=sys.stderr)
    return code


def _exit_code(exc: Exception) -> int:
    if isinstance(exc, CorruptRunError):
        return EXIT_INTEGRITY
    if isinstance(exc, (RunExistsError, ConflictError)):
        return EXIT_CONFLICT
    if isinstance(exc, RejectedError):
        if exc.code in _BLOCKED_CODES:
            return EXIT_BLOCKED
        return EXIT_USAGE if exc.code in _USAGE_CODES else EXIT_CONFLICT
    if isinstance(exc, (DefinitionError, SkillNotFoundError, RunNotFoundError, UnsafePathError, _Usage, OSError)):
        return EXIT_USAGE
    return EXIT_USAGE


# --- commands -------------------------------------------------------------------------------------------


def _add(args: argparse.Namespace) -> int:
    installed = install(args.path, args.project, force=args.force)
    if args.json:
        print(
            json.dumps(
                {
                    "skill": installed.name,
                    "version": installed.version,
                    "path": str(installed.root),
                    "skillHash": skill_hash(installed),
                },
                indent=2,
            )
        )
    else:
        print(
            f"installed {installed.name} {installed.version} at {installed.root} (skill hash {skill_hash(installed)})"
        )
    return EXIT_OK


def _show(args: argparse.Namespace) -> int:
    found = resolve(args.ref, args.project)
    package = found.package
    rails = package.guardrails
    data = {
        "skill": package.name,
        "version": package.version,
        "source": found.source,
        "path": str(package.root),
        "skillHash": skill_hash(package),
        "description": package.definition.metadata.description,
        "goal": package.definition.goal.model_dump(mode="json"),
        "orchestration": package.mode,
        "entry": package.definition.orchestration.entry,
        "steps": [
            {"id": s.id, "type": s.action.type, "ref": s.action.ref, "question": s.action.question, "next": s.next}
            for s in package.steps
        ],
        "skills": list(package.definition.skills),
        "agents": list(package.definition.agents),
        "tools": [t.model_dump(mode="json", by_alias=True) for t in package.tools],
        "guardrails": {
            "allowedSkills": list(rails.allowed_skills),
            "allowedAgents": list(rails.allowed_agents),
            "allowedTools": list(rails.allowed_tools),
            "maxIterations": rails.max_iterations,
            "maxRetriesPerAction": rails.max_retries_per_action,
            "confirmationRequiredFor": list(rails.confirmation_required_for),
        },
        "checksFile": package.checks_file,
        "checks": [{"id": c.id, "scope": c.scope, "type": c.type} for c in package.checks],
        "evalManifest": package.eval_manifest,
    }
    if args.json:
        print(json.dumps(data, indent=2, ensure_ascii=False, default=str))
        return EXIT_OK
    lines = [
        f"{package.name} {package.version}  ({found.source}: {package.root})",
        f"goal:         {package.definition.goal.statement}",
        f"skill hash:   {data['skillHash']}",
        f"mode:         {package.mode}" + (f", entry {data['entry']}" if data["entry"] else ""),
    ]
    lines += [
        f"  step {s.id}: {s.action.type} {s.action.ref or s.action.question or ''}".rstrip() + f" -> {s.next or 'end'}"
        for s in package.steps
    ]
    lines += [
        f"guardrails:   maxIterations {rails.max_iterations}, maxRetriesPerAction {rails.max_retries_per_action}",
        f"  allowed skills: {', '.join(rails.allowed_skills) or 'none'}; agents: "
        f"{', '.join(rails.allowed_agents) or 'none'}; tools: {', '.join(rails.allowed_tools) or 'none'}",
        f"checks:       {package.checks_file or 'none'}"
        + "".join(f"\n  {c.id} ({c.scope}, {c.type})" for c in package.checks),
        f"eval.yaml:    {'present (authoring manifest; run it with comet eval)' if package.eval_manifest else 'none'}",
    ]
    print("\n".join(lines))
    return EXIT_OK


def _run(args: argparse.Namespace) -> int:
    # The runtime (and jsonschema) load only for the commands that drive runs: `comet --help` stays fast.
    from comet_engine.skills.session import start_run

    return _print_report(args, start_run(_layout(args), args.ref, input=args.input))


def _continue(args: argparse.Namespace) -> int:
    from comet_engine.skills.session import complete_run, propose_action, report_outcome, show_run, upgrade_run

    layout = _layout(args)
    if args.status is not None:
        report = report_outcome(
            layout,
            args.status,
            action_id=args.action_id,
            summary=args.summary,
            artifacts=_artifacts(args.artifact),
            output=args.output,
            digest=args.digest,
        )
    elif args.propose is not None:
        kind, sep, ref = args.propose.partition(":")
        if not sep or not kind or not ref:
            raise _Usage(f"--propose {args.propose!r}: write KIND:REF, e.g. --propose invoke_skill:notes-writer")
        report = propose_action(layout, kind, ref, args.input)
    elif args.complete:
        report = complete_run(layout)
    elif args.upgrade is not None:
        report = upgrade_run(layout, args.upgrade)
    else:
        report = show_run(layout)
    return _print_report(args, report)


def _check(args: argparse.Namespace) -> int:
    from comet_engine.skills.session import check_run

    report = check_run(_layout(args), args.scope)
    failed = [c for c in report.checks if not c.passed]
    if args.json:
        body = report.to_json() | {"scope": args.scope, "passed": not failed}
        print(json.dumps(body, indent=2, ensure_ascii=False))
    else:
        if not report.checks:
            print(f"run {report.state['runId']}: no {args.scope} checks declared")
        for c in report.checks:
            print(f"{c.status}  {c.id}  ({c.type}) {c.evidence}")
        if report.checks:
            print(f"{len(report.checks) - len(failed)}/{len(report.checks)} {args.scope} check(s) passed")
    return EXIT_BLOCKED if failed else EXIT_OK


def _artifacts(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise _Usage(f"--artifact {item!r}: write NAME=VALUE, e.g. --artifact draft=notes/v1.2.md")
        out[name] = value
    return out


def _print_report(args: argparse.Namespace, report: Report) -> int:
    code = _report_code(report)
    if args.json:
        print(json.dumps(report.to_json() | {"exit": code}, indent=2, ensure_ascii=False))
        return code
    state = report.state
    where = " ".join(report.layout.address())
    print(
        f"run {state['runId']} ({report.package.name} {report.package.version}): {report.status}"
        + (f" at step {state.get('currentStep')}" if state.get("currentStep") else "")
        + f" [revision {report.revision}]"
    )
    pending = report.pending
    if pending is not None and pending["kind"] == "action":
        print(f"pending action {pending['id']}: {pending['type']} {pending['ref']} (attempt {pending['attempt']})")
        if pending["description"]:
            print(f"  {pending['description']}")
        if pending["answers"]:
            print(
                f"report it: comet skill continue {where} --action-id {pending['id']} --status succeeded "
                '--summary "..." [--artifact NAME=VALUE]'
            )
    elif pending is not None:
        print(f"pending {pending['kind']} {pending['id']}: {pending['question']}")
        print(f"answer it: comet skill continue {where} --status {'|'.join(pending['answers'])}")
    if report.message:
        print(report.message)
    for c in report.to_json()["checks"]:
        print(f"{c['status']}  {c['id']}  ({c['scope']}) {c['evidence']}")
    print(f"files: {report.layout.run_dir}")
    return code


def _report_code(report: Report) -> int:
    if report.status in ("failed", "cancelled"):
        return EXIT_BLOCKED
    if report.status == "completed":
        completion = [c for c in (report.state.get("checks") or {}).values() if c.get("scope") == "completion"]
        return EXIT_BLOCKED if any(c["status"] != "PASS" for c in completion) else EXIT_OK
    return EXIT_OK

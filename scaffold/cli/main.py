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
    comet run [--suite NAME] [pytest options]   the built-in suite through pytest (scaffold.cli.run)
    comet study TASKS_DIR [options] [pytest options]   a SkillsBench-style study, study.md (scaffold.cli.study)
    comet env [--json]                the settings as resolved (environment > ~/.comet/eval/.env > default)
    comet images [list] [--json]
    comet images aliases [DIR ...] [--image-alias REF=LOCAL] [--image-alias-file FILE] [--rules] [--json]
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
import sys
from collections.abc import Sequence

from scaffold import __version__
from scaffold.cli import agents, docker, report, run, servers, settings, status, study, tasks, trajectory
from scaffold.cli.eval.command import add_eval_command
from scaffold.cli.report import Retained
from scaffold.errors import CometError, ExitStatus, exit_status_help

__all__ = ["entry", "main"]


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

    Retained.active = True
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # Python's advice for this case: point stdout at /dev/null so the flush at exit cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = ExitStatus.BROKEN_PIPE
    if not Retained.items:
        raise SystemExit(code)
    sys.stderr.flush()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = _parser(skill_commands=words[:1] == ["skill"])
    args, passed = parser.parse_known_args(words)
    if passed:  # only ``comet run`` takes options it does not know: pytest's
        if not hasattr(args, "pytest_args"):
            parser.error(f"unrecognized arguments: {' '.join(passed)}")
        args.pytest_args = passed
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

    for group in (tasks, trajectory, servers, agents):
        group.add_commands(commands)
    add_eval_command(commands)
    run.add_commands(commands)
    study.add_commands(commands)
    for group in (settings, docker, report, status):
        group.add_commands(commands)

    skill = commands.add_parser("skill", help="skill packages and their engine runs (comet skill --help)")
    if skill_commands:
        from comet_engine.skills.cli import add_commands as add_skill_commands

        add_skill_commands(skill)
    return parser


if __name__ == "__main__":
    entry()

"""``comet report``: the reports of one or more experiment folders (CI shards merged) or Harbor jobs and
Inspect logs (scaffold.imports), their gates, and the upload to a tracing service again."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from scaffold.errors import DiskFullError, ExitStatus, exit_status_help

if TYPE_CHECKING:  # the command imports its modules when it runs (comet starts fast)
    from scaffold.imports import ImportInput
    from scaffold.reports.load import Loaded

__all__ = ["REPORT_STATUSES", "Retained", "add_commands"]


REPORT_STATUSES = (
    ExitStatus.OK,
    ExitStatus.FAILED,
    ExitStatus.USAGE,
    ExitStatus.NOT_COMPARABLE,
    ExitStatus.UNREADABLE,
    ExitStatus.REPORTING,
    ExitStatus.DISK_FULL,
    ExitStatus.BROKEN_PIPE,
)
"""The statuses ``comet report`` ends with (scaffold.errors.ExitStatus)."""


class Retained:
    """What a command leaves for the process's end to reclaim (see entry): `comet report` puts its records
    here, only while entry() runs (main() called in-process, as tests do, keeps nothing)."""

    active = False
    items: ClassVar[list[object]] = []


def add_commands(commands: Any) -> None:
    """``comet report EXPERIMENT_DIR...``."""
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
    report.add_argument(
        "dirs",
        nargs="+",
        type=Path,
        metavar="INPUT",
        help="experiment directories; also Harbor job folders (or a jobs folder) and Inspect AI eval logs "
        "(.eval or .json, or a folder of them): docs/imports.md",
    )
    report.add_argument(
        "--as",
        dest="as_names",
        action="append",
        default=[],
        metavar="TREATMENT",
        help="the treatment of a Harbor job or Inspect log, once per such input in their order (default: "
        "Harbor's agent and its skills, e.g. oracle.my-skill; the Inspect eval's metadata.treatment, else its "
        "model, solver and task arguments)",
    )
    report.add_argument(
        "--out",
        type=Path,
        default=None,
        help="folder for the reports (default: the experiment directory, if one; required with Harbor or "
        "Inspect inputs)",
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
        help="e.g. 'SKILL not worse than CONTROL' or 'pass@1 of SKILL >= 0.8' (repeatable; docs/verdicts.md: gates)",
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


def _report(args: argparse.Namespace) -> int:
    from scaffold.reports.write import disk_full_message

    try:
        return _report_or_fail(args)
    except DiskFullError as exc:
        print(f"comet report: {disk_full_message(exc, args.dirs)} and run the command again", file=sys.stderr)
        return ExitStatus.DISK_FULL


def _report_or_fail(args: argparse.Namespace) -> int:
    from scaffold.agents.credentials import load_environment
    from scaffold.errors import MixedError
    from scaffold.reports.comparable import identity_line
    from scaffold.reports.config import resolve_outputs
    from scaffold.reports.gates import parse_gate
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
    dirs, imported = _split_inputs(args.dirs, args.as_names)
    out = _out_folder(args, dirs, imported)
    keep = Retained.active
    try:
        reported = report_experiments(
            dirs,
            out,
            baseline=args.baseline,
            outputs=outputs,
            keep_records=keep,
            allow_mixed=args.allow_mixed,
            gates=gates,
            imported=_load_imports(imported) if imported else None,
        )
    except MixedError as exc:
        print(f"comet: {exc}", file=sys.stderr)
        return ExitStatus.NOT_COMPARABLE
    if keep:
        Retained.items.append(reported)  # freed by the process's end (entry), not object by object
    written = reported.written
    analysis = written.analysis
    parts = [f"{len(reported.dirs)} directory(ies)"] if reported.dirs or not imported else []
    parts += [f"{len(imported)} Harbor job or Inspect log input(s)"] if imported else []
    sources = " and ".join(parts)
    print(f"{reported.trials} trial(s) of {len(analysis.tasks)} task(s) from {sources}")
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
    results = written.gate_results  # answered with the reports, and written into them (gates.json too)
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


def _out_folder(args: argparse.Namespace, dirs: list[Path], imported: list[ImportInput]) -> Path:
    """Where the reports go: ``--out``, else the one experiment folder given (never a Harbor job or an
    Inspect log folder: nothing is written beside another tool's results)."""
    from scaffold.errors import ReportError

    if args.out is None and len(args.dirs) > 1:
        raise ReportError("several experiment directories are merged: say where the reports go with --out DIR")
    if args.out is None and imported:
        raise ReportError(
            f"{imported[0].path}: reports of Harbor jobs and Inspect logs are written to a folder of their own: "
            f"say where with --out DIR"
        )
    if args.suite is not None and imported:
        raise ReportError("--suite uploads experiment folders again; Harbor jobs and Inspect logs have no traces")
    out: Path = args.out if args.out is not None else dirs[0]
    return out


def _split_inputs(paths: list[Path], names: list[str]) -> tuple[list[Path], list[ImportInput]]:
    """The experiment folders, and the Harbor jobs and Inspect logs with the ``--as`` names given to them,
    in order."""
    from scaffold.errors import ReportError
    from scaffold.imports import ImportInput, kind_of
    from scaffold.imports.common import valid_name

    dirs: list[Path] = []
    imported: list[Path] = []
    for path in paths:
        try:
            kind = kind_of(path)
        except ReportError:
            kind = "experiment"  # neither: the experiment loader's message says what it lacks
        (dirs if kind == "experiment" else imported).append(path)
    for name in names:
        if not valid_name(name):
            raise ReportError(
                f"--as {name!r}: a treatment name is letters, digits, '.', '_' and '-' (as gates name it)"
            )
    if names and len(names) != len(imported):
        raise ReportError(
            f"--as names the treatment of each Harbor job or Inspect log, in their order: {len(names)} --as for "
            f"{len(imported)} such input(s) ({', '.join(str(p) for p in imported) or 'none'})"
        )
    return dirs, [ImportInput(path, names[i] if names else None) for i, path in enumerate(imported)]


def _load_imports(inputs: list[ImportInput]) -> Loaded:
    from scaffold.imports import load_imports

    return load_imports(inputs)


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

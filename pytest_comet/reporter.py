"""The controller side of a comet session: counting verdicts, and the reports and gates at its end.

Registered on the controller only (no ``workerinput``): it sees every worker's test reports, and at
session end reads every record of the experiment, writes the reports (summary.md, comparison_report.md,
results.jsonl and, when asked, report.html) and answers the ``--gate`` expressions with the exit status.

Exit status. Without ``--gate``: pytest's own, except that trials of the baseline (``--baseline``,
default CONTROL) are observed, not tested: a baseline trial that does not pass is reported as xfail.
With ``--gate``: the gates answer. The session fails when a gate fails (or cannot be evaluated), or an
item could not run at all (an invalid task); failed trials still show as failed tests, so ``--lf``
works, but they do not decide the exit status on their own.

Record files that cannot be read (damaged, or from an earlier run of a resumed experiment) never end the
session in a traceback: the reports list them and leave them out, the terminal lists them beside the
totals, and with ``--gate`` they fail the session (a gate cannot vouch for trials it did not see).
Treatments that differ in more than the treatment (agent, model, backend, ...: an ``--experiment-id``
reused with another ``--agent``) are not compared: no report is written and the session ends with
pytest's usage-error status (4), unless ``--allow-mixed`` (verdicts then say "not comparable").

Interruptions. A session stopped by Ctrl-C or SIGTERM still writes the reports of the trials that
finished, each with a note that it was interrupted; so does one whose pytest-xdist worker crashed (the
trial it was running named, without a record). The terminal's ``trials:`` line counts the records, as the
reports do, not the test reports that reached the controller (a worker stopped by Ctrl-C may have
finished trials it never reported). A worker that crashes after its trial's outcome reached the controller
lost nothing of it: that trial counts as what its record says, not as the failure pytest-xdist reports.

Budgets (``--max-trials``, ``--max-cost``: scaffold.experiment.budget). The trials a budget kept from starting are
skipped tests ("not run: <reason>"), listed in the terminal and in a section of summary.md; the exit
status is decided as usual on the trials that ran (skips never fail a session), so a budget never turns
a failing session into a passing one by itself: its gates still answer for what ran. A resume (the same
``--experiment-id``) runs the trials without a record.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_comet.state import plugin_state
from pytest_comet.terminate import terminated
from scaffold.errors import CometError, DiskFullError, MixedError

if TYPE_CHECKING:
    from scaffold.reports.gates import GateResult
    from scaffold.reports.model import UnreadableRecord
    from scaffold.reports.outcome import SessionOutcome

__all__ = ["Reporter"]


class Reporter:
    """Counts verdicts as reports arrive (from every worker), writes the reports at session end and
    answers the gates with the exit status."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.paths: tuple[Path, ...] = ()
        self.verdicts: list[str] = []
        self.gate_results: tuple[GateResult, ...] = ()
        self.report_error = ""
        self.unreadable: tuple[UnreadableRecord, ...] = ()
        self.identities: list[str] = []
        self.quality: list[str] = []
        """The eval.yaml quality gates' lines for the terminal (empty: no manifest or no quality gates)."""
        self.not_run: list[tuple[str, str]] = []
        """(case id, reason) of the trials a budget kept from starting."""
        self.not_needed: list[str] = []
        """Case ids of the trials a run until decided no longer needed (--until-decided)."""
        self.engines: Counter[str] = Counter()
        """Trials run per Docker engine (shown when a pool spread them over more than one)."""
        self.finished: set[str] = set()
        """Node ids of the trials whose outcome reached the controller."""
        self.crashes: list[str] = []
        """What crashed pytest-xdist workers cost, a sentence each (for the terminal and the reports)."""
        self.stopped = ""
        """How the session was stopped before its end ("" when it was not)."""
        self.recorded: Counter[str] = Counter()
        """Verdicts of the experiment's records, as the reports count them (empty: reports not written)."""

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        if report.when == "setup" and report.skipped and "comet_not_run" in props:
            self.not_run.append((str(props.get("comet_case", report.nodeid)), str(props["comet_not_run"])))
        if report.when == "setup" and report.skipped and "comet_not_needed" in props:
            self.not_needed.append(str(props.get("comet_case", report.nodeid)))
        if report.when != "call":
            return
        if "comet_verdict" in props:
            self.finished.add(report.nodeid)
            state = plugin_state(self.config)
            state.verdicts[str(props["comet_verdict"])] += 1
            state.resumed += bool(props.get("comet_resumed"))
            if props.get("comet_engine") and not props.get("comet_resumed"):
                self.engines[str(props["comet_engine"])] += 1

    @pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: absent without it
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: object) -> None:
        message = str(report.longrepr)
        if crashitem in self.finished:
            # The trial's outcome arrived before the worker died: pytest would count it twice, once as it
            # ended and once failed. Its record stands; the crash is said beside it.
            report.outcome, report.when, report.longrepr = "passed", "teardown", None
            self.crashes.append(f"{message} after that trial ended: its record stands")
            return
        verdict = self._recorded_verdict(crashitem)
        if verdict is None:
            self.crashes.append(f"{message}: that trial has no record")
            return
        # The worker died between writing the trial's record and sending its outcome: the record says.
        self.crashes.append(f"{message} after that trial ended: its record stands")
        report.when = "call"
        report.user_properties = [("comet_verdict", verdict)]
        if verdict == "passed":
            report.outcome, report.longrepr = "passed", None
        else:
            report.longrepr = f"{message} after its trial ended; the trial's verdict: {verdict}"

    def _recorded_verdict(self, nodeid: str) -> str | None:
        """The verdict of the record of *nodeid*'s trial in this session's experiment; None without one."""
        from scaffold.experiment import RECORD_FILE
        from scaffold.records.files import read_record

        if not nodeid.endswith("]"):
            return None
        case_id = nodeid[nodeid.rindex("[") + 1 : -1]
        try:
            path = plugin_state(self.config).session.experiment().trials_dir / case_id / RECORD_FILE
            return read_record(path).verdict if path.is_file() else None
        except (CometError, OSError):
            return None

    @pytest.hookimpl(trylast=True)  # after other plugins have settled session.exitstatus
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        state = plugin_state(self.config)
        if terminated():
            self.stopped = "stopped by SIGTERM"
        elif session.exitstatus == pytest.ExitCode.INTERRUPTED:
            self.stopped = "interrupted"
        if self.config.option.collectonly:
            return
        # An interrupted controller may have heard of no trial that its workers finished: their records say.
        if not state.verdicts and not self.not_run and not (self.stopped and state.in_use()):
            return
        try:
            self._conclude(session, state)
        except DiskFullError as exc:  # the reports, a section of them or the quality gates' file
            from scaffold.reports.write import disk_full_message

            root = state.session.experiment().root
            self.report_error = f"{disk_full_message(exc, [root])}, then run: comet report {root}"
            if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
                session.exitstatus = pytest.ExitCode.TESTS_FAILED  # no report, no verdict: not a pass
        finally:  # what was concluded, also when reporting failed: comet eval and the tracing suites read it
            self.config.hook.pytest_comet_session_outcome(config=self.config, outcome=self.outcome())

    def outcome(self) -> SessionOutcome:
        from scaffold.reports.outcome import SessionOutcome

        return SessionOutcome(
            identities=tuple(self.identities),
            verdicts=tuple(self.verdicts),
            report_paths=self.paths,
            report_error=self.report_error,
            gate_results=self.gate_results,
            quality=tuple(self.quality),
            budget=tuple(self.budget_lines()),
        )

    def _conclude(self, session: pytest.Session, state: Any) -> None:
        """Write the reports, answer the gates and set the session's exit status."""
        self._finish_plan(state)
        from scaffold.reports.comparable import identity_line
        from scaffold.reports.write import report_experiments

        harness = state.session
        experiment = harness.experiment()
        if not experiment.trials_dir.is_dir():
            return
        try:  # the workers have let go: the reports are this session's to write, not another's trials
            state.hold_experiment("the reports of a pytest session")
        except pytest.UsageError as exc:
            self.report_error = str(exc)
            return
        gates = harness.gates()
        ran = session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
        try:
            reported = report_experiments(
                [experiment.root],
                experiment.root,
                baseline=harness.options.baseline,
                outputs=harness.outputs(),
                title=experiment.id,
                allow_empty=True,
                allow_mixed=bool(self.config.getoption("comet_allow_mixed")),
                notes=self.notes(experiment.id),
                gates=gates,
            )
        except MixedError as exc:
            self.report_error = str(exc)
            if ran:
                session.exitstatus = pytest.ExitCode.USAGE_ERROR
            return
        except DiskFullError:
            raise  # said with what is kept, above
        except CometError as exc:
            # Reports are not worth a traceback that hides the test results; say why they are missing.
            self.report_error = str(exc)
            if gates and ran:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
            return
        written = reported.written
        self.recorded = Counter(trial.verdict for trial in written.analysis.trials)
        self.paths = written.paths
        self.unreadable = reported.problems
        self._not_run_section(experiment.summary_path, experiment.id)
        self.verdicts = [f"{v.treatment} vs {v.baseline}: {v.headline}" for v in written.analysis.verdicts]
        self.identities = [
            f"{r.name}: {identity_line(r.identity)}" for r in written.analysis.reports if r.identity is not None
        ]
        self.gate_results = written.gate_results  # answered with the reports, and written into them
        quality_failed = self._quality(harness, written.analysis, experiment.root)
        if not gates and not self.quality:
            return
        # The gates answer only for sessions that ran; usage errors and interruptions keep their status.
        if ran:
            failed = not all(r.passed for r in self.gate_results) or state.verdicts["invalid"] > 0
            failed = failed or quality_failed
            session.exitstatus = pytest.ExitCode.TESTS_FAILED if failed or self.unreadable else pytest.ExitCode.OK

    def notes(self, experiment_id: str) -> list[str]:
        """The sentences every report opens with about how the session ended (none for a plain end)."""
        resume = f"resume with --experiment-id {experiment_id} to run the trials without a record"
        notes = [f"pytest-xdist {crash}." for crash in self.crashes]
        if self.stopped:
            notes.append(f"This session was {self.stopped} before its end: only finished trials count; {resume}.")
        elif any("no record" in crash for crash in self.crashes):
            notes.append(f"To run the trials a crash left without a record: {resume}.")
        return notes

    def _finish_plan(self, state: Any) -> None:
        """Mark the session's plan finished (comet status: queued trials now are trials not run) and remove
        the pytest-xdist beacon (pytest_comet.live)."""
        import contextlib
        from datetime import UTC, datetime

        from scaffold.experiment.status import finish_plan

        with contextlib.suppress(OSError):
            finish_plan(state.session.experiment().root, state.session_token(), datetime.now(UTC))
        beacon = state.beacon_path()
        if beacon is not None:
            beacon.unlink(missing_ok=True)

    def _not_run_section(self, summary: Path, experiment_id: str) -> None:
        if not (self.not_run or self.not_needed) or not summary.is_file():
            return
        from scaffold.experiment.budget import not_run_markdown
        from scaffold.experiment.sequential import not_needed_markdown
        from scaffold.util.atomic import write_text_atomic

        sections = []
        if self.not_needed:
            sections.append(not_needed_markdown(sorted(self.not_needed)))
        if self.not_run:
            cases = sorted(case for case, _ in self.not_run)
            sections.append(not_run_markdown(self.not_run[0][1], cases, experiment_id))
        text = summary.read_text(encoding="utf-8")
        write_text_atomic(summary, text.rstrip("\n") + "\n\n" + "\n".join(sections))

    def budget_lines(self) -> list[str]:
        """The terminal's lines about trials a budget kept from starting (also printed by comet eval)."""
        lines = []
        if self.not_needed:
            lines.append(
                f"until decided: {len(self.not_needed)} trial(s) not needed: their comparisons were decided first"
            )
        if not self.not_run:
            return lines
        state = plugin_state(self.config)
        cases = sorted(case for case, _ in self.not_run)
        shown = ", ".join(cases[:10]) + (f" and {len(cases) - 10} more" if len(cases) > 10 else "")
        return [
            *lines,
            f"budget: {self.not_run[0][1]}: {len(cases)} trial(s) not run: {shown}",
            f"budget: resume with --experiment-id {state.experiment_id()} to run them; the exit status "
            "answers for the trials that ran",
        ]

    def _quality(self, harness: Any, analysis: Any, folder: Path) -> bool:
        """An eval.yaml's quality gates: quality-gates.json beside the reports, a section of summary.md, the
        terminal lines. True when they failed."""
        manifest = harness.manifest()
        if manifest is None or manifest.quality_gates.empty:
            return False
        from scaffold.skill_eval.report import write_quality

        result = write_quality(manifest, analysis, self.gate_results, folder)
        self.quality = [f"quality gates: {'PASS' if result.passed else 'FAIL'} ({folder / 'quality-gates.json'})"]
        self.quality += [f"quality gate FAIL: {failure}" for failure in result.failures]
        return not result.passed

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        state = plugin_state(self.config)
        if not state.verdicts and not self.not_run and not self.recorded:
            return
        # The records' count when the reports were written (what summary.md says), else the test reports'.
        verdicts = self.recorded + Counter(invalid=state.verdicts["invalid"]) if self.recorded else state.verdicts
        counts = ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()) if n) or "none finished"
        resumed = f" ({state.resumed} from earlier runs of this experiment)" if state.resumed else ""
        terminalreporter.section("comet-eval")
        terminalreporter.write_line(f"trials: {counts}{resumed}")
        for note in self.notes(state.experiment_id()):
            terminalreporter.write_line(note, yellow=True)
        terminalreporter.write_line(f"experiment: {state.session.experiment().root}")
        if len(self.engines) > 1 or state.uses_pool():
            spread = ", ".join(f"{url}: {n}" for url, n in sorted(self.engines.items()))
            terminalreporter.write_line(f"engines: {spread or 'no trial ran'}")
        for line in self.identities:
            terminalreporter.write_line(f"treatment {line}")
        for line in self.verdicts:
            terminalreporter.write_line(f"verdict: {line}")
        for path in self.paths:
            terminalreporter.write_line(f"{path.stem.replace('_', ' ')}: {path}")
        if self.report_error:
            terminalreporter.write_line(f"reports not written: {self.report_error}", red=True)
        for problem in self.unreadable:
            field = f"field {problem.field}: " if problem.field else ""
            terminalreporter.write_line(f"unreadable record: {problem.file}: {field}{problem.reason}", red=True)
        if self.unreadable:
            terminalreporter.write_line(
                f"{len(self.unreadable)} record file(s) could not be read: left out of every figure"
                + ("; the session fails (gates cannot vouch for them)" if self.gate_results else ""),
                red=True,
            )
        for result in self.gate_results:
            mark = "PASS" if result.passed else "FAIL"
            terminalreporter.write_line(
                f"gate {mark}: {result.gate.expression}: {result.message}", green=result.passed, red=not result.passed
            )
        for line in self.quality:
            terminalreporter.write_line(line, green="PASS" in line, red="FAIL" in line)
        for line in self.budget_lines():
            terminalreporter.write_line(line, yellow=True)
        if state.verdicts["invalid"] and self.gate_results:
            terminalreporter.write_line("session fails: some items could not run (invalid tasks)", red=True)

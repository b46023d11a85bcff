"""The Langfuse suite's pytest plugin (registered by the suite's ``conftest.py``): the local suite's session,
and every trial and the experiment also reported to Langfuse (scaffold.tracing.langfuse_report).

Lifecycle. At session start on the controller (never with ``--collect-only``, ``--help`` and the like,
which import no SDK and open no connection): the keys from the process environment over
``~/.comet/eval/.env``, the SDK, ``auth_check``; any problem is a usage error before any trial. Each
process that runs trials (the controller, or every pytest-xdist worker) reports its own trials from the
test (``comet_langfuse.report``), one trace each, and hands what happened to the controller in the test
report's ``user_properties``. At session end the controller, after the comet reporter wrote the reports
and answered the gates, sends the experiment summary built from the experiment's records, flushes, and
writes ``tracing.json``.

A failed upload never fails a test or loses a trial: it is listed at the end (terminal summary, and the
``lines`` ``comet eval`` prints), written into tracing.json, and the exit status becomes
ExitStatus.REPORTING (6) when it would otherwise be 0; any other status (a gate or test failure: 1) stays.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pytest

from pytest_comet.state import plugin_state
from scaffold.errors import CometError, ExitStatus

if TYPE_CHECKING:
    from pytest_comet.trial import Trial
    from scaffold.reports.outcome import SessionOutcome
    from scaffold.tracing.langfuse_report import LangfuseReporter, LangfuseSettings, TrialUpload

__all__ = ["SUITE", "LangfuseSuite"]

SUITE: Final = pytest.StashKey["LangfuseSuite"]()
"""The suite's plugin of this pytest process, in ``config.stash`` (the suite conftest's fixture reads it)."""
_PROPERTY: Final = "comet_langfuse"


class LangfuseSuite:
    """One per pytest process; see the module docstring."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.controller = not hasattr(config, "workerinput")
        self.settings: LangfuseSettings | None = None
        self.reporter: LangfuseReporter | None = None
        self.uploads: dict[str, TrialUpload] = {}
        """The controller's: every trial's upload, as the test reports (from every worker) said."""
        self.failed = False
        self.lines: list[str] = []
        """What happened, for the terminal and ``comet eval`` (pytest_comet_tracing_outcome)."""
        self.outcome: SessionOutcome | None = None
        """What the comet controller concluded: the gates the experiment summary carries."""
        self._connect_error = ""
        self._earlier: dict[str, TrialUpload] | None = None

    @property
    def active(self) -> bool:
        option = self.config.option
        shows = ("collectonly", "help", "version", "showfixtures", "show_fixtures_per_test", "markers")
        return not any(getattr(option, name, False) for name in shows)

    # -- start

    @pytest.hookimpl(tryfirst=True)  # before pytest-xdist starts workers (its sessionstart is trylast)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if not self.active:
            return
        from scaffold.tracing.langfuse_report import connect, settings_from

        try:
            from scaffold.agents.credentials import load_environment

            self.settings = settings_from(load_environment())
            # The controller checks the keys before any worker starts; a worker connects without a check.
            self.reporter = connect(self.settings, check=self.controller)
        except CometError as exc:
            raise pytest.UsageError(str(exc)) from None

    def _reporter(self) -> LangfuseReporter | None:
        """This process's reporter (connected at session start; reconnected once, without a key check, when
        that was skipped), None when it cannot connect (the reason noted for the trials' uploads)."""
        if self.reporter is None and not self._connect_error and self.settings is not None:
            from scaffold.tracing.langfuse_report import connect

            try:
                self.reporter = connect(self.settings, check=False)
            except CometError as exc:
                self._connect_error = str(exc)
        return self.reporter

    # -- each trial

    def report(self, trial: Trial, item: pytest.Item) -> None:
        """Send *trial* (a finished one; a task that could not run has nothing to send) and note the upload
        on *item*'s report for the controller."""
        if trial.outcome is None or not self.active:
            return
        from scaffold.tracing.langfuse_report import TrialUpload, matching_task

        record = trial.outcome.record
        reporter = self._reporter()
        earlier = self._sent_before().get(record.case_id) if trial.outcome.resumed else None
        if earlier is not None:
            upload = earlier  # resumed from an earlier run of the experiment whose upload succeeded: not sent twice
        elif reporter is None:
            upload = TrialUpload(record.case_id, "", 0, self._connect_error or "Langfuse was not started")
        else:
            try:
                tasks = plugin_state(self.config).session.catalogs()[0].tasks
            except CometError:
                tasks = {}
            upload = reporter.report_trial(record, matching_task(record, tasks))
        item.user_properties.append((_PROPERTY, json.dumps(_upload_json(upload))))

    def _sent_before(self) -> dict[str, TrialUpload]:
        """The trials an earlier session of this experiment uploaded without error (its tracing.json)."""
        if self._earlier is None:
            from scaffold.tracing.langfuse_report import read_status

            self._earlier = read_status(plugin_state(self.config).session.experiment().root)
        return self._earlier

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call" or not self.controller:
            return
        from scaffold.tracing.langfuse_report import TrialUpload

        for name, value in report.user_properties:
            if name == _PROPERTY:
                data = json.loads(str(value))
                self.uploads[data["case_id"]] = TrialUpload(**data)

    # -- end

    def pytest_comet_session_outcome(self, outcome: SessionOutcome) -> None:
        self.outcome = outcome

    @pytest.hookimpl(wrapper=True, trylast=True)  # inside the terminal's wrapper: after the comet reporter
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None, Any, Any]:
        result = yield
        if self.controller:
            self._finish(session)
        elif self.reporter is not None:
            self.reporter.close()
        return result

    def _finish(self, session: pytest.Session) -> None:
        state = plugin_state(self.config)
        if self.reporter is None or self.settings is None:
            return
        from scaffold.tracing.langfuse_report import read_summary

        try:
            if not state.verdicts:
                return
            experiment = state.session.experiment()
            gates = self.outcome.gate_results if self.outcome is not None else ()
            summary = read_summary(experiment.id, experiment.root, gates)
            sent = self.reporter.report_summary(summary)
            self._conclude(experiment.root, sent)
        finally:
            self.reporter.close()
        from scaffold.reports.outcome import TracingOutcome

        outcome = TracingOutcome("langfuse", tuple(self.lines), self.failed)
        self.config.hook.pytest_comet_tracing_outcome(config=self.config, outcome=outcome)
        if self.failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = ExitStatus.REPORTING

    def _conclude(self, folder: Path, summary: tuple[str, str]) -> None:
        from scaffold.tracing.langfuse_report import write_status

        assert self.settings is not None
        uploads = list(self.uploads.values())
        status = write_status(folder, self.settings, uploads, summary)
        failed = [u for u in uploads if u.error]
        self.failed = bool(failed or summary[1])
        url = self.settings.shown_url
        self.lines.append(f"langfuse: {len(uploads) - len(failed)} of {len(uploads)} trial trace(s) sent to {url}")
        for upload in failed:
            self.lines.append(f"langfuse FAILED: {upload.case_id}: {upload.error}")
        if summary[1]:
            self.lines.append(f"langfuse FAILED: experiment summary: {summary[1]}")
        else:
            self.lines.append(f"langfuse: experiment summary sent (trace {summary[0]})")
        if self.failed:
            self.lines.append(
                "langfuse reporting failed: the trials and local reports are complete; upload them again with "
                f"`comet report --suite langfuse {folder}` "
                f"(exit status {int(ExitStatus.REPORTING)} unless a gate failed)"
            )
        self.lines.append(f"tracing status: {status}")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.lines:
            return
        terminalreporter.section("comet-eval langfuse")
        for line in self.lines:
            terminalreporter.write_line(line, red="FAILED" in line or "failed" in line)


def _upload_json(upload: TrialUpload) -> dict[str, Any]:
    return {"case_id": upload.case_id, "trace_id": upload.trace_id, "scores": upload.scores, "error": upload.error}

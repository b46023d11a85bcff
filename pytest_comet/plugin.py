"""The comet-eval pytest plugin. Hooks in lifecycle order: options, configure, collection, fixtures,
reporting, session end.

Collection (``pytest_generate_tests``) only reads task and treatment files and is deterministic, so
every pytest-xdist worker builds the same items; trials run in fixtures; each trial writes its record;
the controller alone (no ``workerinput``) reads the records, writes the reports (summary.md,
comparison_report.md, results.jsonl, report.html) and checks the ``--gate`` expressions.

Exit status. Without ``--gate``: pytest's own, except that trials of the baseline (``--baseline``,
default CONTROL) are observed, not tested: a baseline trial that does not pass is reported as xfail.
With ``--gate``: the gates answer. The session fails when a gate fails (or cannot be evaluated), or an
item could not run at all (an invalid task); failed trials still show as failed tests, so ``--lf``
works, but they do not decide the exit status on their own.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from scaffold.errors import CometError

if TYPE_CHECKING:
    # The harness is imported when a session first uses it, so that every other pytest session (the
    # plugin is installed for all of them) pays nothing for loaders, pydantic or jinja2.
    from pytest_comet.trial import Trial
    from scaffold.agents import Agent
    from scaffold.cases import Broken, Case
    from scaffold.experiment import Experiment
    from scaffold.reports.config import ReportOutputs
    from scaffold.reports.gates import Gate, GateResult
    from scaffold.tasks import TaskCatalog
    from scaffold.treatments import TreatmentCatalog
    from scaffold.trial import KeepPolicy, Runner, Settings

CASE_FIXTURE = "comet_case"
_WORKERINPUT_KEY = "comet_experiment_id"


# --- options ---------------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    group = parser.getgroup("comet", "comet-eval trials (active only in suites using the comet_trial fixture)")
    group.addoption(
        "--task",
        action="append",
        default=[],
        metavar="NAMES",
        help="tasks to run: comma list, a trailing * matches a prefix (default: every task)",
    )
    group.addoption(
        "--treatment",
        action="append",
        default=[],
        metavar="NAMES",
        help="treatments to run: comma list with * prefixes (default: each task's default_treatments)",
    )
    if not _repeat_owns_count(pluginmanager):
        group.addoption("--count", type=int, default=1, metavar="N", help="trials per (task, treatment)")
    group.addoption(
        "--agent",
        default=os.environ.get("BENCH_EVAL_AGENT") or "oracle",
        metavar="NAME",
        help="agent: oracle (reference solution), nop (does nothing); default $BENCH_EVAL_AGENT or oracle",
    )
    group.addoption("--backend", default="local", metavar="NAME", help="workspace backend (default: local)")
    group.addoption(
        "--profile",
        default=None,
        metavar="NAME",
        help="evaluation profile for every task (default: the task's, else inferred)",
    )
    group.addoption("--model", default=None, metavar="NAME", help="the agent's model (default: its *_MODEL variables)")
    group.addoption(
        "--base-url",
        default=None,
        metavar="URL",
        help="the agent's model API base URL (default: its *_BASE_URL variables)",
    )
    group.addoption(
        "--tasks-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="another tasks folder (with index.yaml), besides local/tasks",
    )
    group.addoption(
        "--treatments-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="another treatments folder, besides local/treatments",
    )
    group.addoption(
        "--skill-base",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="folder of named skill snapshots used by treatment entries with base: NAME",
    )
    group.addoption(
        "--skill-path",
        default=None,
        metavar="DIR",
        help="a skill folder to evaluate as treatment DYNAMIC_SKILL (beside CONTROL)",
    )
    group.addoption(
        "--skill-name",
        default=None,
        metavar="NAME",
        help="name to install --skill-path under (default: its folder name)",
    )
    group.addoption(
        "--experiment-id",
        default=None,
        metavar="ID",
        help="experiment to write to; an existing one is resumed (default: a new id)",
    )
    group.addoption(
        "--rerun-errors",
        action="store_true",
        default=False,
        help="when resuming, run again the trials whose verdict was error",
    )
    group.addoption("--logs-dir", default=None, metavar="DIR", help="where experiments go (default: local/logs)")
    group.addoption(
        "--workspace-root",
        default=None,
        metavar="DIR",
        help="where trial workspaces are made (default: $TMPDIR/comet-eval)",
    )
    group.addoption(
        "--baseline",
        default="CONTROL",
        metavar="NAME",
        help="treatment the reports compare against; its failing trials do not fail a session without --gate",
    )
    group.addoption(
        "--gate",
        action="append",
        default=[],
        metavar="EXPR",
        help="quality gate deciding the exit status, e.g. 'SKILL not worse than CONTROL', 'pass@1 of SKILL >= 0.8'",
    )
    group.addoption("--html", action="store_true", default=False, help="also write report.html")
    group.addoption(
        "--report-config",
        default=None,
        metavar="FILE",
        help='report outputs as JSON, {"report_outputs": {"markdown": true, "html": true}} '
        "(default: $COMET_EVAL_REPORT_CONFIG)",
    )
    group.addoption(
        "--keep-workspaces",
        default="failed",
        choices=("failed", "all", "none"),
        help="which trials' workspaces to keep (default: failed)",
    )


def _repeat_owns_count(pluginmanager: pytest.PytestPluginManager) -> bool:
    """Whether pytest-repeat registers ``--count`` in this session (then we read its value).

    ``pytest_addoption`` runs as each plugin registers, so pytest-repeat may not be loaded yet: look at
    what will be loaded rather than what is.
    """
    if pluginmanager.has_plugin("repeat") or pluginmanager.has_plugin("pytest_repeat"):
        return True
    if pluginmanager.is_blocked("repeat") or os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        return False
    return any(ep.name == "repeat" for ep in metadata.entry_points(group="pytest11"))


# --- configure ---------------------------------------------------------------------------------------


@dataclass
class _State:
    """Per-process plugin state, created on first use so sessions that never use the plugin pay nothing."""

    config: pytest.Config
    cases: list[Case | Broken] | None = None
    catalogs: tuple[TaskCatalog, TreatmentCatalog] | None = None
    experiment: Experiment | None = None
    verdicts: Counter[str] = field(default_factory=Counter)
    resumed: int = 0
    usage_error: pytest.UsageError | None = None
    gates: tuple[Gate, ...] | None = None
    outputs: ReportOutputs | None = None
    _agent: Agent | None = None

    def option(self, name: str) -> Any:
        return self.config.getoption(name)

    def load(self) -> tuple[TaskCatalog, TreatmentCatalog]:
        from scaffold.tasks import load_catalog
        from scaffold.treatments import dynamic_treatment, load_treatments, parse_skill_bases

        if self.catalogs is None:
            root = self.config.rootpath
            task_dirs = _dirs(root / "local" / "tasks", self.option("tasks_dir"))
            treatment_dirs = _dirs(root / "local" / "treatments", self.option("treatments_dir"))
            if not task_dirs:
                raise pytest.UsageError(f"no tasks: {root / 'local' / 'tasks'} does not exist; pass --tasks-dir")
            tasks = load_catalog(task_dirs)
            try:
                treatments = load_treatments(treatment_dirs, skill_bases=parse_skill_bases(self.option("skill_base")))
                if self.option("skill_path"):
                    treatments = treatments.with_treatment(
                        dynamic_treatment(Path(self.option("skill_path")), self.option("skill_name"))
                    )
            except CometError as exc:
                raise pytest.UsageError(str(exc)) from None
            self.catalogs = (tasks, treatments)
        return self.catalogs

    def select(self) -> list[Case | Broken]:
        from scaffold.cases import parse_list, select_cases
        from scaffold.treatments import CONTROL, DYNAMIC_SKILL

        if self.cases is None:
            tasks, treatments = self.load()
            try:
                self.cases = select_cases(
                    tasks,
                    treatments,
                    task_patterns=parse_list(self.option("task")),
                    treatment_patterns=parse_list(self.option("treatment")),
                    count=int(self.option("count")),
                    extra_treatments=[CONTROL, DYNAMIC_SKILL] if self.option("skill_path") else [],
                )
            except CometError as exc:
                raise pytest.UsageError(str(exc)) from None
        return self.cases

    def experiment_id(self) -> str:
        workerinput = getattr(self.config, "workerinput", None)
        if workerinput and _WORKERINPUT_KEY in workerinput:
            return str(workerinput[_WORKERINPUT_KEY])
        if self.experiment is None:
            from scaffold.experiment import new_experiment_id

            chosen = self.option("experiment_id") or new_experiment_id()
            self.experiment = self._experiment(chosen)
        return self.experiment.id

    def _experiment(self, experiment_id: str) -> Experiment:
        from scaffold.experiment import Experiment

        logs = self.option("logs_dir")
        logs_dir = Path(logs) if logs else self.config.rootpath / "local" / "logs"
        try:
            return Experiment.under(logs_dir, experiment_id)
        except CometError as exc:
            raise pytest.UsageError(str(exc)) from None

    def get_experiment(self) -> Experiment:
        if self.experiment is None:
            self.experiment = self._experiment(self.experiment_id())
        return self.experiment

    def agent(self) -> Agent:
        from scaffold.agents import create_agent

        if self._agent is None:
            try:
                self._agent = create_agent(
                    self.option("agent"), model=self.option("model"), base_url=self.option("base_url")
                )
            except CometError as exc:
                raise pytest.UsageError(str(exc)) from None
        return self._agent

    def report_settings(self) -> tuple[tuple[Gate, ...], ReportOutputs]:
        """Gates and report outputs, parsed once; a bad expression or config file is a usage error."""
        from scaffold.reports.config import resolve_outputs
        from scaffold.reports.gates import parse_gate

        if self.gates is None or self.outputs is None:
            config_file = self.option("report_config")
            try:
                self.gates = tuple(parse_gate(expression) for expression in self.option("gate"))
                self.outputs = resolve_outputs(
                    html=bool(self.option("html")),
                    config_file=Path(config_file) if config_file else None,
                    environ=os.environ,
                )
            except CometError as exc:
                raise pytest.UsageError(str(exc)) from None
        return self.gates, self.outputs

    def settings(self) -> Settings:
        from scaffold.trial import Settings

        keep: KeepPolicy = self.option("keep_workspaces")
        return Settings(
            backend=self.option("backend"),
            agent=self.option("agent"),
            profile=self.option("profile"),
            model=self.option("model"),
            keep_workspaces=keep,
            rerun_errors=bool(self.option("rerun_errors")),
        )


_STATE = pytest.StashKey[_State]()


def _state(config: pytest.Config) -> _State:
    if _STATE not in config.stash:
        config.stash[_STATE] = _State(config)
    return config.stash[_STATE]


def _dirs(default: Path, extra: list[str]) -> list[Path]:
    found = [default] if default.is_dir() else []
    return found + [Path(p).absolute() for p in extra]


def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistHooks(), "comet-xdist")
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(_Reporter(config), "comet-reporter")


class _XdistHooks:
    """Registered only when pytest-xdist is present: hand the controller's experiment id to workers."""

    @pytest.hookimpl
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[_WORKERINPUT_KEY] = _state(node.config).experiment_id()


# --- collection ----------------------------------------------------------------------------------------


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if CASE_FIXTURE not in metafunc.fixturenames:
        return
    if metafunc.config.pluginmanager.hasplugin("repeat"):
        # Trials come from --count already; stop pytest-repeat multiplying them again.
        metafunc.definition.add_marker(pytest.mark.repeat(1))
    state = _state(metafunc.config)
    try:
        cases = state.select()
    except pytest.UsageError as exc:
        # Raised from here it would show as a collection error with a traceback; report it after
        # collection as a plain usage error instead (exit code 4, the message alone).
        state.usage_error = exc
        return
    metafunc.parametrize(CASE_FIXTURE, cases, ids=[case.id for case in cases])


def pytest_collection_modifyitems(config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None or (state.cases is None and state.usage_error is None):
        return
    if state.usage_error is not None:
        raise state.usage_error
    state.agent()  # unknown agents and missing credentials fail here, before any workspace exists
    state.report_settings()  # so do bad --gate expressions and report configurations


# --- fixtures -----------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def comet_runner(request: pytest.FixtureRequest) -> Iterator[Runner]:
    """The trial runner of this process (one per pytest-xdist worker)."""
    from scaffold.trial import Runner
    from scaffold.workspaces import create_backend

    state = _state(request.config)
    tasks, treatments = state.load()
    settings = state.settings()
    experiment = state.get_experiment()
    root = request.config.getoption("workspace_root")
    workspace_root = Path(root) if root else Path(tempfile.gettempdir()) / "comet-eval"
    agent = state.agent()
    try:
        backend = create_backend(
            settings.backend,
            workspace_root=workspace_root.absolute(),
            network=agent.needs_network,
            network_scope="host" if getattr(agent, "endpoint_on_this_machine", False) else "internet",
            agent_install=agent.install,
            egress=getattr(agent, "egress_endpoints", ()),
        )
    except CometError as exc:
        raise pytest.UsageError(str(exc)) from None
    workerinput = getattr(request.config, "workerinput", None)
    runner = Runner(
        tasks,
        treatments,
        experiment,
        settings,
        backend,
        agent,
        worker=workerinput["workerid"] if workerinput else "main",
    )
    try:
        yield runner
    finally:
        backend.close()


@pytest.fixture
def comet_trial(request: pytest.FixtureRequest, comet_case: Case | Broken) -> Trial:
    """Run this item's trial (or report why it cannot run) and return it; see ``Trial.assert_passed``."""
    from pytest_comet.trial import Trial
    from scaffold.cases import Broken

    if isinstance(comet_case, Broken):
        request.node.user_properties.append(("comet_verdict", "invalid"))
        return Trial(comet_case)
    runner: Runner = request.getfixturevalue("comet_runner")
    try:
        outcome = runner.run(comet_case)
    except CometError as exc:
        request.node.user_properties.append(("comet_verdict", "invalid"))
        return Trial(comet_case, error=str(exc))
    record = outcome.record
    request.node.user_properties.extend(
        [
            ("comet_verdict", record.verdict),
            ("comet_resumed", outcome.resumed),
            ("comet_weighted_score", record.weighted_score),
            ("comet_record", str(outcome.record_path)),
        ]
    )
    gates, _ = _state(request.config).report_settings()
    observational = comet_case.treatment == request.config.getoption("baseline") and not gates
    return Trial(comet_case, outcome, observational=observational)


# --- reporting ----------------------------------------------------------------------------------------


class _Reporter:
    """Controller-side: counts verdicts as reports arrive (from every worker), writes the reports at
    session end and answers the gates with the exit status."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.paths: tuple[Path, ...] = ()
        self.verdicts: list[str] = []
        self.gate_results: tuple[GateResult, ...] = ()
        self.report_error = ""

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        props = dict(report.user_properties)
        if "comet_verdict" in props:
            state = _state(self.config)
            state.verdicts[str(props["comet_verdict"])] += 1
            state.resumed += bool(props.get("comet_resumed"))

    @pytest.hookimpl(trylast=True)  # after other plugins have settled session.exitstatus
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        state = self.config.stash.get(_STATE, None)
        if state is None or not state.verdicts or self.config.option.collectonly:
            return
        from scaffold.reports.gates import evaluate_gates
        from scaffold.reports.write import report_experiments

        experiment = state.get_experiment()
        if not experiment.trials_dir.is_dir():
            return
        gates, outputs = state.report_settings()
        try:
            written = report_experiments(
                [experiment.root],
                experiment.root,
                baseline=self.config.getoption("baseline"),
                outputs=outputs,
                title=experiment.id,
                allow_empty=True,
            ).written
        except CometError as exc:
            # Reports are not worth a traceback that hides the test results; say why they are missing.
            self.report_error = str(exc)
            if gates and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
            return
        self.paths = written.paths
        self.verdicts = [f"{v.treatment} vs {v.baseline}: {v.label}" for v in written.analysis.verdicts]
        if not gates:
            return
        self.gate_results = evaluate_gates(gates, written.analysis)
        # The gates answer only for sessions that ran; usage errors and interruptions keep their status.
        if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            failed = not all(r.passed for r in self.gate_results) or state.verdicts["invalid"] > 0
            session.exitstatus = pytest.ExitCode.TESTS_FAILED if failed else pytest.ExitCode.OK

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        state = self.config.stash.get(_STATE, None)
        if state is None or not state.verdicts:
            return
        counts = ", ".join(f"{n} {v}" for v, n in sorted(state.verdicts.items()))
        resumed = f" ({state.resumed} from earlier runs of this experiment)" if state.resumed else ""
        terminalreporter.section("comet-eval")
        terminalreporter.write_line(f"trials: {counts}{resumed}")
        terminalreporter.write_line(f"experiment: {state.get_experiment().root}")
        for line in self.verdicts:
            terminalreporter.write_line(f"verdict: {line}")
        for path in self.paths:
            terminalreporter.write_line(f"{path.stem.replace('_', ' ')}: {path}")
        if self.report_error:
            terminalreporter.write_line(f"reports not written: {self.report_error}", red=True)
        for result in self.gate_results:
            mark = "PASS" if result.passed else "FAIL"
            terminalreporter.write_line(
                f"gate {mark}: {result.gate.expression}: {result.message}", green=result.passed, red=not result.passed
            )
        if state.verdicts["invalid"] and self.gate_results:
            terminalreporter.write_line("session fails: some items could not run (invalid tasks)", red=True)

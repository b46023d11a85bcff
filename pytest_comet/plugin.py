"""The comet-eval pytest plugin: options, hooks and fixtures. Hooks in lifecycle order: options,
configure, collection, fixtures; the reports at session end are the controller's (pytest_comet.reporter).

What a session runs and how (catalogs, cases, agent, backend, experiment) is resolved by
scaffold.session.HarnessSession, exactly as the ``comet`` commands resolve it: this module only turns
pytest's options into its Options and its errors into usage errors. Collection
(``pytest_generate_tests``) only reads task and treatment files and is deterministic, so every
pytest-xdist worker builds the same items; trials run in fixtures; each trial writes its record; the
controller alone (no ``workerinput``) reads the records, writes the reports and checks the ``--gate``
expressions, which decide the exit status (pytest_comet.reporter says how).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from importlib import metadata
from typing import TYPE_CHECKING, Any

import pytest

from pytest_comet.reporter import Reporter
from pytest_comet.state import STATE, WORKERINPUT_KEY, plugin_state
from scaffold.errors import CometError

if TYPE_CHECKING:
    # The harness is imported when a session first uses it, so that every other pytest session (the
    # plugin is installed for all of them) pays nothing for loaders, pydantic or jinja2.
    from pytest_comet.trial import Trial
    from scaffold.cases import Broken, Case
    from scaffold.trial import Runner

CASE_FIXTURE = "comet_case"


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


def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistHooks(), "comet-xdist")
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(Reporter(config), "comet-reporter")


class _XdistHooks:
    """Registered only when pytest-xdist is present: hand the controller's experiment id to workers."""

    @pytest.hookimpl
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[WORKERINPUT_KEY] = plugin_state(node.config).experiment_id()


# --- collection ----------------------------------------------------------------------------------------


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if CASE_FIXTURE not in metafunc.fixturenames:
        return
    if metafunc.config.pluginmanager.hasplugin("repeat"):
        # Trials come from --count already; stop pytest-repeat multiplying them again.
        metafunc.definition.add_marker(pytest.mark.repeat(1))
    state = plugin_state(metafunc.config)
    state.collected = True
    try:
        cases = state.use(state.session.cases)
    except pytest.UsageError as exc:
        # Raised from here it would show as a collection error with a traceback; report it after
        # collection as a plain usage error instead (exit code 4, the message alone).
        state.usage_error = exc
        return
    metafunc.parametrize(CASE_FIXTURE, cases, ids=[case.id for case in cases])


def pytest_collection_modifyitems(config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is None or not state.collected:
        return
    if state.usage_error is not None:
        raise state.usage_error
    session = state.session
    state.use(session.agent)  # unknown agents and missing credentials fail here, before any workspace exists
    state.use(session.gates)  # so do bad --gate expressions
    state.use(session.outputs)  # and report configurations
    state.use(session.experiment)  # and an --experiment-id that is not a folder name


# --- fixtures -----------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def comet_runner(request: pytest.FixtureRequest) -> Iterator[Runner]:
    """The trial runner of this process (one per pytest-xdist worker)."""
    state = plugin_state(request.config)
    workerinput = getattr(request.config, "workerinput", None)
    runner = state.use(lambda: state.session.open_runner(workerinput["workerid"] if workerinput else "main"))
    try:
        yield runner
    finally:
        runner.backend.close()


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
        result = runner.run(comet_case)
    except CometError as exc:
        request.node.user_properties.append(("comet_verdict", "invalid"))
        return Trial(comet_case, error=str(exc))
    record = result.record
    request.node.user_properties.extend(
        [
            ("comet_verdict", record.verdict),
            ("comet_resumed", result.resumed),
            ("comet_weighted_score", record.weighted_score),
            ("comet_record", str(result.record_path)),
        ]
    )
    observational = plugin_state(request.config).session.observes(comet_case.treatment)
    return Trial(comet_case, result, observational=observational)

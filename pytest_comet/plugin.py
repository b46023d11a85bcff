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

import argparse
import contextlib
import ctypes
import os
import signal
import sys
import warnings
from collections.abc import Iterator, Mapping
from importlib import metadata
from typing import TYPE_CHECKING, Any, Final

import pytest

from pytest_comet.live import LiveDisplay
from pytest_comet.reporter import Reporter
from pytest_comet.state import ENGINES_KEY, SESSION_KEY, STATE, WORKERINPUT_KEY, PluginState, plugin_state
from pytest_comet.terminate import install, terminated
from scaffold.errors import CometError, ExitStatus, InputWarning, TaskWarning

if TYPE_CHECKING:
    # The harness is imported when a session first uses it, so that every other pytest session (the
    # plugin is installed for all of them) pays nothing for loaders, pydantic or jinja2.
    from pytest_comet.trial import Trial
    from scaffold.experiment.budget import Limits
    from scaffold.experiment.cases import Broken, Case
    from scaffold.experiment.sequential import Design
    from scaffold.trial.runner import Runner, TrialResult

CASE_FIXTURE = "comet_case"


# --- options ---------------------------------------------------------------------------------------


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_comet import hooks

    pluginmanager.add_hookspecs(hooks)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    group = parser.getgroup("comet", "comet-eval trials (active only in suites using the comet_trial fixture)")
    add = _OptionAdder(group, pluginmanager)
    add(
        "--task",
        action="append",
        default=[],
        metavar="NAMES",
        help="tasks to run: comma list, a trailing * matches a prefix (default: every task)",
    )
    add(
        "--treatment",
        action="append",
        default=[],
        metavar="NAMES",
        help="treatments to run: comma list with * prefixes (default: each task's default_treatments)",
    )
    # No default: when pytest-repeat owns --count, its value is read instead (pytest_comet.state).
    add(
        "--count",
        type=int,
        default=None,
        metavar="N",
        help="trials per (task, treatment) (default: 1; pytest-repeat's --count is read as this)",
    )
    add(
        "--agent",
        default=None,  # decided with the session: $BENCH_EVAL_AGENT (environment, then ~/.comet/eval/.env)
        metavar="NAME",
        help="agent: oracle (reference solution), nop (does nothing), claude-code, codex, ...; "
        "default $BENCH_EVAL_AGENT (environment or ~/.comet/eval/.env), else oracle",
    )
    add("--backend", default="local", metavar="NAME", help="workspace backend (default: local)")
    add(
        "--image-alias",
        action="append",
        default=[],
        metavar="REF=LOCAL",
        help="docker backend: build a Harbor task's FROM REF from the local image LOCAL instead, e.g. "
        "ubuntu:24.04=comet-eval/base:trixie; repeatable (also $COMET_IMAGE_ALIASES)",
    )
    add(
        "--docker-host",
        action="append",
        default=[],
        metavar="URL[*N]",
        help="docker backend: an engine of the pool, running N trials at once (default 1), e.g. "
        "tcp://10.0.0.5:2376*8, ssh://ci@build-1*4, unix:///run/docker.sock*2; repeatable (also "
        "$COMET_DOCKER_HOSTS). Worker gwK runs on slot K: -n equal to the total capacity fills the pool",
    )
    add(
        "--docker-pool",
        default=None,
        metavar="FILE",
        help="docker backend: the pool as a TOML file of [[engines]] tables (url, capacity, tls_verify, "
        "cert_path); adds to --docker-host (default: $COMET_DOCKER_POOL)",
    )
    add(
        "--require-all-engines",
        action="store_true",
        default=False,
        help="refuse to start when an engine of the pool is unreachable (default: leave it out, and say so)",
    )
    add(
        "--start-window",
        type=float,
        default=None,
        metavar="SECONDS",
        help="for agents that call a model: at most one trial start per core of the machine that runs them "
        "(this one, or each engine's host) in any such window, so the agents' start-up bursts overlap other "
        "trials' model calls instead of each other; on this machine, none either while its cores are full "
        "(default 0.7; 0 starts every trial at once; COMET_START_GATE_LOAD=0: the window alone)",
    )
    add(
        "--in-flight",
        default="auto",
        choices=("auto", "1", "2"),
        help="trials each pytest-xdist worker holds at once: 2 starts the next item's trial while one runs; "
        "auto: -n counts trials at once, and above 2 workers per core of this machine half as many "
        "workers hold two each, when the command line sets a comet option and no engine pool is used "
        "(default: auto)",
    )
    add(
        "--image-alias-file",
        default=None,
        metavar="FILE",
        help='image aliases as a TOML [image-aliases] table, "REF" = "LOCAL" (default: $COMET_IMAGE_ALIAS_FILE)',
    )
    add(
        "--profile",
        default=None,
        metavar="NAME",
        help="evaluation profile for every task (default: the task's, else inferred)",
    )
    add("--model", default=None, metavar="NAME", help="the agent's model (default: its *_MODEL variables)")
    add(
        "--base-url",
        default=None,
        metavar="URL",
        help="the agent's model API base URL (default: its *_BASE_URL variables)",
    )
    add(
        "--tasks-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="a tasks folder (with index.yaml); repeatable; replaces the default (local/tasks, else the built-ins)",
    )
    add(
        "--treatments-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="a treatments folder; repeatable; replaces the default (treatments/ beside each tasks folder)",
    )
    add(
        "--skill-base",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="folder of named skill snapshots used by treatment entries with base: NAME",
    )
    add(
        "--skill-path",
        default=None,
        metavar="DIR",
        help="a skill folder to evaluate as treatment DYNAMIC_SKILL (beside CONTROL)",
    )
    add(
        "--skill-name",
        default=None,
        metavar="NAME",
        help="name to install --skill-path under (default: its folder name)",
    )
    add(
        "--distractors",
        type=int,
        default=0,
        metavar="N",
        help="also run DYNAMIC_SKILL_PLUS_N_DISTRACTORS: the --skill-path skill among N others drawn from "
        "--skill-pool (default: the other tasks' skills) (docs/treatment-kinds.md)",
    )
    add("--skill-pool", default=None, metavar="DIR", help="a folder of skill folders distractors are drawn from")
    add(
        "--nudge",
        action="store_true",
        default=False,
        help="also run DYNAMIC_SKILL_NUDGE: the --skill-path skill and one line saying skills are installed",
    )
    add(
        "--self-written",
        action="store_true",
        default=False,
        help="also run SELF_WRITTEN: the agent writes a skill for the task first, then does the task with it",
    )
    add(
        "--experiment-id",
        default=None,
        metavar="ID",
        help="experiment to write to; an existing one is resumed (default: a new id)",
    )
    add(
        "--max-trials",
        type=int,
        default=None,
        metavar="N",
        help="start at most N trials in this session (all workers together); the others are skipped as "
        "'not run' and a resume (same --experiment-id) runs them",
    )
    add(
        "--max-cost",
        type=float,
        default=None,
        metavar="USD",
        help="start no new trial once the trials of this session have cost USD (as their agents report it; "
        "running ones finish); the others are skipped as 'not run' and a resume runs them",
    )
    add(
        "--retry-excluded",
        type=int,
        default=2,
        metavar="N",
        help="run a trial again, in a fresh workspace, up to N more times while it is excluded as environment or "
        "runner noise (rate limit, API timeout or error, network, container failure, runner timeout); every "
        "attempt is kept in its folder and counts against --max-trials/--max-cost (default: 2; 0: off)",
    )
    add(
        "--until-decided",
        action="store_true",
        default=False,
        help="run the trials in rounds (trial 1 of every task and treatment, then trial 2, ...) and stop each "
        "comparison with the baseline as soon as an anytime-valid test decides it (improvement, regression, or "
        "equivalence within 10 points); the trials no longer needed are skipped as 'not run'",
    )
    add(
        "--max-count",
        type=int,
        default=None,
        metavar="N",
        help="with --until-decided: at most N trials per task and treatment (default: 10)",
    )
    add(
        "--rerun-errors",
        action="store_true",
        default=False,
        help="when resuming, run again the trials whose verdict was error",
    )
    add("--logs-dir", default=None, metavar="DIR", help="where experiments go (default: local/logs)")
    add(
        "--workspace-root",
        default=None,
        metavar="DIR",
        help="where trial workspaces are made (default: $TMPDIR/comet-eval)",
    )
    add(
        "--baseline",
        default="CONTROL",
        metavar="NAME",
        help="treatment the reports compare against; its failing trials do not fail a session without --gate",
    )
    add(
        "--gate",
        action="append",
        default=[],
        metavar="EXPR",
        help="quality gate deciding the exit status, e.g. 'SKILL not worse than CONTROL', 'pass@1 of SKILL >= 0.8'",
    )
    add("--html", action="store_true", default=False, help="also write report.html")
    add(
        "--report-config",
        default=None,
        metavar="FILE",
        help='report outputs as JSON, {"report_outputs": {"markdown": true, "html": true}} '
        "(default: $COMET_EVAL_REPORT_CONFIG)",
    )
    add(
        "--allow-mixed",
        action="store_true",
        default=False,
        help="report treatments of this experiment that differ in more than the treatment (agent, model, "
        "backend, ...): verdicts say 'not comparable', never improvement or regression",
    )
    add(
        "--keep-workspaces",
        default="failed",
        choices=("failed", "all", "none"),
        help="which trials' workspaces to keep (default: failed)",
    )
    add(
        "--eval-manifest",
        default=None,
        metavar="PATH",
        help="a skill's comet/eval.yaml: run its tasks (or --quick / --task) under CONTROL and the skill, "
        "and let its quality gates decide the exit status",
    )
    add("--quick", action="store_true", default=False, help="with --eval-manifest: run generic-skill-smoke only")
    add(
        "--collect",
        action="store_true",
        default=False,
        help="the original Comet eval's name for --collect-only: list the trials, run and write nothing",
    )
    add(
        "--project-root",
        default=None,
        metavar="DIR",
        help="with --eval-manifest: where run files go (DIR/.comet/eval/...; default: the skill package)",
    )
    add(
        "--judge-agent",
        default=None,
        metavar="NAME",
        help="the LLM judge's agent (any --judge-* option turns the judge on; default: $BENCH_JUDGE_AGENT, "
        "else claude-code, whatever --agent is)",
    )
    add("--judge-model", default=None, metavar="NAME", help="the LLM judge's model (default: $BENCH_JUDGE_MODEL)")
    add(
        "--judge-base-url",
        default=None,
        metavar="URL",
        help="the LLM judge's API base URL (default: $BENCH_JUDGE_BASE_URL)",
    )
    add(
        "--judge-samples",
        default=1,
        type=int,
        metavar="N",
        help="judge each trial N times: the mean per dimension, and the judge's spread (default: 1)",
    )


class _OptionAdder:
    """Registers each option as ``--comet-NAME``, which always works, and under the original Comet eval's ``--NAME`` too
    unless another plugin claims that name.

    The plugin loads in every pytest session of an environment, so its option names share one namespace
    with every other plugin there (pytest-html's ``--html``, pytest-base-url's ``--base-url``, pulled in
    by pytest-playwright and pytest-selenium; pytest-repeat's ``--count``): argparse refuses a second
    registration, and that failure would end every pytest run in the environment. Plugins register in
    an order we do not control, so a name is left to the other plugin both when it is registered already
    (its ``pytest_addoption`` ran first: our registration fails and is retried without the name) and when
    it will be (a known owner among the ``pytest11`` entry points still to load, and not blocked with
    ``-p no:NAME``). Our destinations are ``comet_*`` names, so a value given to the other plugin's
    option (a web app's ``--base-url``) never reaches the harness as ours.
    """

    def __init__(self, group: pytest.OptionGroup, pluginmanager: pytest.PytestPluginManager) -> None:
        self._group = group
        self._pluginmanager = pluginmanager
        self._entry_points: frozenset[str] | None = None

    def __call__(self, seed: str, **attrs: Any) -> None:
        word = seed.removeprefix("--")
        prefixed = f"--comet-{word}"
        attrs["dest"] = "comet_" + word.replace("-", "_")
        OPTION_NAMES.add(prefixed)
        if os.environ.get(SHORT_OPTIONS_ENV) != "0" and not self._claimed(seed):
            try:
                self._group.addoption(seed, prefixed, **attrs)
                OPTION_NAMES.add(seed)
                return
            except (ValueError, argparse.ArgumentError):
                pass  # a plugin registered before this one took the name
        self._group.addoption(prefixed, **attrs)

    def _claimed(self, option: str) -> bool:
        """Whether a plugin that registers *option* is loaded or will be loaded in this session.

        ``pytest_addoption`` runs as each plugin registers, so the owner may not be loaded yet: look at
        what will be loaded (entry points, unless autoloading is off or the plugin is blocked) too.
        """
        for owner in CLAIMED_OPTIONS.get(option, ()):
            if self._pluginmanager.has_plugin(owner):
                return True
            if self._pluginmanager.is_blocked(owner) or os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
                continue
            if self._entry_points is None:
                self._entry_points = frozenset(ep.name for ep in metadata.entry_points(group="pytest11"))
            if owner in self._entry_points:
                return True
        return False


OPTION_NAMES: Final[set[str]] = set()
"""The option strings this plugin registered (``--comet-task``, ``--task`` unless another plugin owns it)."""
SHORT_OPTIONS_ENV: Final = "COMET_EVAL_SHORT_OPTIONS"
"""``0``: register only the ``--comet-`` forms, for a plugin not listed in CLAIMED_OPTIONS that takes one of
the original Comet eval's names after this plugin registered it. Read from the process environment alone: reading
``~/.comet/eval/.env`` here would cost every pytest session of the environment an import of python-dotenv."""
CLAIMED_OPTIONS: Final[Mapping[str, tuple[str, ...]]] = {
    "--html": ("html",),  # pytest-html
    "--base-url": ("base_url",),  # pytest-base-url (pytest-playwright, pytest-selenium)
    "--count": ("repeat", "pytest_repeat"),  # pytest-repeat, a dependency: its --count is read as ours
    "--profile": ("profiling",),  # pytest-profiling (a flag there)
}
"""Seed option names that common plugins also register, with those plugins' ``pytest11`` entry point names."""


# --- configure ---------------------------------------------------------------------------------------


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    # Before pytest-xdist and every configure hook read it: --collect is --collect-only.
    if config.getoption("comet_collect", False):
        config.option.collectonly = True


def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistHooks(), "comet-xdist")
    if not hasattr(config, "workerinput"):
        _check_choices(config)
        state = plugin_state(config)
        # SIGTERM ends a comet session as Ctrl-C does (pytest_comet.terminate); a controller of xdist
        # workers learns that its session runs comet trials from the beacon its first worker writes.
        controller = bool(config.getoption("numprocesses", None))
        install(config, controller=controller, comet=state.in_use)
        _plan_workers(config)
        config.pluginmanager.register(Reporter(config), "comet-reporter")
        config.pluginmanager.register(LiveDisplay(config), "comet-live")
        # An engine pool is asked once, here, before any worker starts: the workers get the live engines.
        plugin_state(config).engine_report()
        # An experiment named on the command line may be another session's: refused here, before any
        # worker starts (a worker's refusal would end in pytest-xdist's internal error). New ids are unique.
        if config.getoption("comet_experiment_id") and not _only_shows(config):
            plugin_state(config).hold_experiment("pytest")


def _check_choices(config: pytest.Config) -> None:
    """``--backend`` names a backend the session can make: a usage error now (exit status 4, the message
    alone), not a setup error in every trial. Not an argparse ``choices``: the names are the backends
    module's, and importing it for every pytest session of the environment would cost them all."""
    backend = config.getoption("comet_backend")
    if backend == "local":
        return
    from scaffold.workspaces.backends import known_backends

    if backend not in known_backends():
        raise pytest.UsageError(f"--backend={backend}: unknown backend; known: {', '.join(known_backends())}")


def _check_profile(state: PluginState) -> None:
    """The evaluation profile (``--profile``, or a manifest's ``skill.profile``) is a registered one; checked
    at collection, once every conftest that may register its own has been imported."""
    profile = state.use(lambda: state.session.resolved.profile)
    if profile is None:
        return
    from scaffold.rubrics.profiles import known_profiles

    if profile not in known_profiles():
        options = state.session.options
        where = f"--profile={profile}" if options.profile else f"{options.manifest}: skill.profile {profile!r}"
        raise pytest.UsageError(f"{where}: unknown evaluation profile; known profiles: {', '.join(known_profiles())}")


@pytest.hookimpl(trylast=True)  # after pytest (INTERRUPTED) and the reporter have set the status
def pytest_sessionfinish(session: pytest.Session) -> None:
    if terminated() and not hasattr(session.config, "workerinput"):
        session.exitstatus = ExitStatus.TERMINATED


def _only_shows(config: pytest.Config) -> bool:
    """Whether this run only lists or explains (--collect-only, --help, ...): it writes nothing."""
    option = config.option
    shows = ("collectonly", "help", "version", "showfixtures", "show_fixtures_per_test", "markers")
    return any(getattr(option, name, False) for name in shows)


def _plan_workers(config: pytest.Config) -> None:
    """Under ``-n N``: how many worker processes hold the N trials (pytest_comet.ahead.plan). Decided
    here, before xdist starts any worker and so before collection shows whether this is a comet suite:
    fewer processes than ``-n`` only when asked (``--in-flight 2``) or when the command line sets one of
    this plugin's options (auto), so that another project's ``pytest -n 16`` is never touched."""
    tx = config.getoption("tx", None)
    choice = config.getoption("comet_in_flight")
    if not tx or any(spec != "popen" for spec in tx) or choice == "1":
        return
    state = plugin_state(config)
    if state.uses_pool():
        if choice == "2":
            raise pytest.UsageError(
                "--in-flight 2: an engine pool runs one trial per engine slot (worker gwK on slot K); "
                "give the engines the capacity you want instead, and -n equal to it"
            )
        return
    if choice == "auto" and not _names_comet_option(config):
        return
    from pytest_comet.ahead import plan

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    workers = plan(len(tx), cores, choice)
    state.worker_plan = workers
    if workers.workers < len(tx):
        config.option.tx = ["popen"] * workers.workers
        config.option.numprocesses = workers.workers


def _names_comet_option(config: pytest.Config) -> bool:
    import shlex

    args = [*config.invocation_params.args, *shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))]
    return any(str(arg).split("=", 1)[0] in OPTION_NAMES for arg in args)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    if hasattr(config, "workerinput"):
        return None
    state = plugin_state(config)
    lines = []
    if state.worker_plan is not None and state.worker_plan.doubled:
        lines.append("comet: " + state.worker_plan.describe())
    report = state.engine_report()
    lines += report.lines if report is not None else []
    return lines or None


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """An engine left out of the pool is said also under ``-q``, which hides the header."""
    config = session.config
    if hasattr(config, "workerinput") or config.get_verbosity() >= 0:
        return
    report = plugin_state(config).engine_report()
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if report is None or terminal is None:
        return
    for line in report.left_out:
        terminal.write_line(f"comet: engine pool: {line}", yellow=True)


class _XdistHooks:
    """Registered only when pytest-xdist is present: hand the controller's experiment id to workers, and
    sweep what a crashed worker left."""

    def __init__(self) -> None:
        self.crashed: pytest.Config | None = None

    @pytest.hookimpl
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[WORKERINPUT_KEY] = plugin_state(node.config).experiment_id()
        node.workerinput[SESSION_KEY] = plugin_state(node.config).session_token()
        node.workerinput[CONTROLLER_KEY] = os.getpid()
        live = plugin_state(node.config).live_engines()
        if live is not None:
            node.workerinput[ENGINES_KEY] = live
        workers = plugin_state(node.config).worker_plan
        if workers is not None:
            from pytest_comet.ahead import IN_FLIGHT_KEY

            node.workerinput[IN_FLIGHT_KEY] = workers.in_flight(node.gateway.id)

    @pytest.hookimpl
    def pytest_testnodedown(self, node: Any, error: object | None) -> None:
        # A crashed worker never closes its backend, and the workers that would sweep what it left may
        # have closed already: the controller sweeps now (the dead worker, a zombie until xdist tears
        # down, counts as gone), and again at its session end, in case the worker was still dying (not
        # yet a zombie) at the first. A failure here must not end the controller: the next session sweeps.
        if error is not None:
            self.crashed = node.config
            self._sweep(node.config)

    @pytest.hookimpl
    def pytest_sessionfinish(self) -> None:
        if self.crashed is not None:
            self._sweep(self.crashed)

    @staticmethod
    def _sweep(config: pytest.Config) -> None:
        with contextlib.suppress(CometError):
            plugin_state(config).session.sweep_crashed()


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
    # Broken input files this run does not use: warned while the test file is collected, so the warnings
    # summary shows them and -W error::scaffold.errors.InputWarning makes them a collection error.
    workerinput = getattr(metafunc.config, "workerinput", None)
    if workerinput is None or workerinput.get("workerid") == "gw0":  # once per session: xdist relays it
        for message in state.use(state.session.input_warnings):
            warnings.warn(InputWarning(message), stacklevel=1)
        for message in state.use(state.session.task_warnings):
            warnings.warn(TaskWarning(message), stacklevel=1)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    state = config.stash.get(STATE, None)
    if state is None or not state.collected:
        return
    if state.usage_error is not None:
        raise state.usage_error
    session = state.session
    state.use(session.agent)  # unknown agents and missing credentials fail here, before any workspace exists
    _check_profile(state)  # so does an unknown evaluation profile
    state.use(session.image_aliases)  # and image aliases that are not REF=LOCAL
    state.use(session.gates)  # so do bad --gate expressions
    state.use(session.outputs)  # and report configurations
    state.use(session.experiment)  # and an --experiment-id that is not a folder name
    state.use(session.judge_run)  # and a judge that is malformed, cannot judge or has no CLI installed
    limits(config)  # and negative --max-trials / --max-cost
    retry_excluded(config)  # and a negative --retry-excluded
    if sequential_design(config) is not None:  # and --max-count without --until-decided, or below 1
        items.sort(key=_round_order)  # in rounds: trial 1 of every task and treatment first
    if getattr(config, "workerinput", None) is not None:  # a worker: SIGTERM from its controller, as Ctrl-C
        install(config, controller=False)
    if not _only_shows(config):  # a listing writes nothing: it holds nothing either
        state.hold_experiment("pytest" if getattr(config, "workerinput", None) is None else "a pytest-xdist worker")
    state.accepted = True


def pytest_collection_finish(session: pytest.Session) -> None:
    """The session's plan (scaffold.experiment.status: what ``comet status`` and the live line count against), once
    per session: by the only process, or by pytest-xdist's gw0 (every worker collects the same items)."""
    config = session.config
    state = config.stash.get(STATE, None)
    workerinput = getattr(config, "workerinput", None)
    # Also called after a usage error in pytest_collection_modifyitems: nothing is written then.
    if state is None or not state.accepted:
        return
    if config.option.collectonly or (workerinput is not None and workerinput.get("workerid") != "gw0"):
        return
    from datetime import UTC, datetime

    from scaffold.experiment.cases import Case
    from scaffold.experiment.status import write_plan
    from scaffold.util.atomic import write_text_atomic

    params = (getattr(item, "callspec", None) for item in session.items)
    cases = [
        p.params[CASE_FIXTURE].id for p in params if p is not None and isinstance(p.params.get(CASE_FIXTURE), Case)
    ]
    root = state.session.experiment().root
    token = state.session_token()
    write_plan(root, cases, session=token, started_at=datetime.now(UTC), limits=limits(config).as_dict())
    design = sequential_design(config)
    if design is not None:
        from scaffold.experiment.sequential import prepare

        prepare(root, design, *_compared(state))
    beacon = state.beacon_path()
    if beacon is not None:
        write_text_atomic(beacon, str(root), durable=False)


def _round_order(item: pytest.Item) -> tuple[int, int]:
    """An item's place in a run until decided: its trial (the round), then where it was (a stable sort)."""
    callspec = getattr(item, "callspec", None)
    case = callspec.params.get(CASE_FIXTURE) if callspec is not None else None
    return (getattr(case, "trial", 0), 0)


def limits(config: pytest.Config) -> Limits:
    """``--max-trials`` and ``--max-cost`` (scaffold.experiment.budget says exactly what they count)."""
    from scaffold.experiment.budget import Limits

    trials, cost = config.getoption("comet_max_trials"), config.getoption("comet_max_cost")
    if trials is not None and trials < 0:
        raise pytest.UsageError(f"--max-trials={trials}: must be 0 or more")
    if cost is not None and not cost >= 0:
        raise pytest.UsageError(f"--max-cost={cost}: must be a number of US dollars, 0 or more")
    return Limits(trials, cost)


DEFAULT_MAX_COUNT: Final = 10


def sequential_design(config: pytest.Config) -> Design | None:
    """``--until-decided`` and ``--max-count``: the design of a run until decided (scaffold.experiment.sequential)."""
    from scaffold.experiment.sequential import Design

    until, most = config.getoption("comet_until_decided"), config.getoption("comet_max_count")
    if not until:
        if most is not None:
            raise pytest.UsageError(f"--max-count={most}: goes with --until-decided (a fixed design uses --count)")
        return None
    if most is not None and most < 1:
        raise pytest.UsageError(f"--max-count={most}: must be 1 or more")
    # pytest-repeat's --count defaults to 1: only another number can be told from its absence.
    repeat = config.getoption("count", None) if config.pluginmanager.hasplugin("repeat") else None
    if config.getoption("comet_count") is not None or repeat not in (None, 1):
        raise pytest.UsageError("--count with --until-decided: say how many trials at most with --max-count instead")
    return Design(baseline=config.getoption("comet_baseline"), max_count=most or DEFAULT_MAX_COUNT)


def retry_excluded(config: pytest.Config) -> int:
    """``--retry-excluded``: more attempts a trial excluded as retryable noise may have (scaffold.trial.runner)."""
    retries = config.getoption("comet_retry_excluded")
    if retries < 0:
        raise pytest.UsageError(f"--retry-excluded={retries}: must be 0 or more (0 turns retries off)")
    return int(retries)


# --- fixtures -----------------------------------------------------------------------------------------

CONTROLLER_KEY: Final = "comet_controller_pid"
_PR_SET_PDEATHSIG: Final = 1


def _end_with_controller(controller: int | None) -> None:
    """Make this pytest-xdist worker die the moment its controller does, even by SIGKILL.

    Without it a worker outlives a SIGKILLed controller by seconds (until execnet notices its channel
    closed), and so do its agents: the local backend's supervisor acts when the *worker* dies. The kernel's
    parent-death signal closes that gap. Its known trap, firing when the forking *thread* ends, does not
    apply: execnet starts workers from the controller's main thread. Only comet sessions' workers get it
    (this runs in the runner fixture), and only on Linux; elsewhere the worker ends when execnet notices.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            return
    except (OSError, AttributeError):
        return
    if controller is not None and os.getppid() != controller:
        os.kill(os.getpid(), signal.SIGKILL)  # the controller died before the signal was armed


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Note the case of the item this process runs next, for the runner's ``upcoming``."""
    callspec = getattr(nextitem, "callspec", None)
    case = callspec.params.get(CASE_FIXTURE) if callspec is not None else None
    from scaffold.experiment.cases import Case

    state = plugin_state(item.config)
    state.next_case = case if isinstance(case, Case) else None
    state.next_item = nextitem


@pytest.fixture(scope="session")
def comet_runner(request: pytest.FixtureRequest) -> Iterator[Runner]:
    """The trial runner of this process (one per pytest-xdist worker)."""
    state = plugin_state(request.config)
    workerinput = getattr(request.config, "workerinput", None)
    if workerinput is not None:
        _end_with_controller(workerinput.get(CONTROLLER_KEY))
    worker = workerinput["workerid"] if workerinput else "main"
    runner = state.use(lambda: state.session.open_runner(worker, state.live_engines(), state.session_token()))
    # With two trials in flight, the trial started ahead is what a standby container would be: the backend
    # is told that nothing follows, so it makes none (scaffold.workspaces.docker.standby).
    runner.upcoming = (lambda: state.next_case) if state.in_flight() == 1 else (lambda: None)
    budget = limits(request.config)
    if budget:
        from scaffold.experiment.budget import claim

        root, token = runner.experiment.root, state.session_token()
        # A retry is a trial start: it claims its share of the budget as the first attempt did.
        runner.admit_retry = lambda case: claim(root, token, case.id, budget)
    try:
        yield runner
    finally:
        try:
            state.ahead.stop(runner)  # a trial started ahead whose item never ran (Ctrl-C): no record
        finally:
            runner.backend.close()


@pytest.fixture
def comet_trial(request: pytest.FixtureRequest, comet_case: Case | Broken) -> Trial:
    """Run this item's trial (or report why it cannot run) and return it; see ``Trial.assert_passed``."""
    from pytest_comet.trial import Trial
    from scaffold.experiment.cases import Broken

    if isinstance(comet_case, Broken):
        request.node.user_properties.append(("comet_verdict", "invalid"))
        return Trial(comet_case)
    runner: Runner = request.getfixturevalue("comet_runner")
    request.node.user_properties.append(("comet_case", comet_case.id))
    # A trial already started ahead runs to its record: ending it now would waste what it spent.
    started = comet_case in plugin_state(request.config).ahead
    decided = None if started else _sequential_refusal(request.config, runner, comet_case)
    if decided is not None:
        request.node.user_properties.append(("comet_not_needed", decided))
        pytest.skip(f"not needed: {decided}")
    budget = limits(request.config)
    if budget and not _recorded(runner, comet_case):
        from scaffold.experiment.budget import claim

        state = plugin_state(request.config)
        reason = claim(runner.experiment.root, state.session_token(), comet_case.id, budget)
        if reason is not None:
            request.node.user_properties.append(("comet_not_run", reason))
            pytest.skip(f"not run: {reason}")
    from scaffold.trial.runner import RetryNotStarted

    try:
        result = _run(request.config, runner, comet_case)
    except CometError as exc:
        request.node.user_properties.append(("comet_verdict", "invalid"))
        return Trial(comet_case, error=str(exc))
    except RetryNotStarted as exc:  # its attempts are kept: a resume goes on with the next one
        request.node.user_properties.append(("comet_not_run", exc.reason))
        pytest.skip(f"not run: {exc.reason} (before a retry of an attempt excluded as noise)")
    record = result.record
    design = sequential_design(request.config)
    if design is not None:  # the decision moves on with every finished trial, whichever process ran it
        from scaffold.experiment.sequential import record_outcome

        record_outcome(runner.experiment.root, design, *_compared(plugin_state(request.config)), record)
    request.node.user_properties.extend(
        [
            ("comet_verdict", record.verdict),
            ("comet_resumed", result.resumed),
            ("comet_weighted_score", record.weighted_score),
            ("comet_record", str(result.record_path)),
            ("comet_engine", record.workspace.engine),
            ("comet_attempts", len(record.attempts) + 1),
        ]
    )
    observational = plugin_state(request.config).session.observes(comet_case.treatment)
    return Trial(comet_case, result, observational=observational)


def _run(config: pytest.Config, runner: Runner, case: Case) -> TrialResult:
    """*case*'s trial: the one started ahead for it, else run here. With two in flight, the next item's
    trial is started first, so that it runs while this one does (pytest_comet.ahead)."""
    from pytest_comet.ahead import may_start_ahead, session_allows

    state = plugin_state(config)
    if (
        state.in_flight() > 1
        and session_allows(config)
        and may_start_ahead(state.next_item, state.next_case)
        and (state.next_case is None or _sequential_refusal(config, runner, state.next_case) is None)
    ):
        assert state.next_case is not None
        state.ahead.start(runner, state.next_case)
    return state.ahead.result(case) if case in state.ahead else runner.run(case)


def _compared(state: PluginState) -> tuple[list[str], list[str]]:
    """The tasks and treatments of a run until decided, the same in every process."""
    from scaffold.experiment.cases import Case

    cases = [c for c in state.use(state.session.cases) if isinstance(c, Case)]
    return sorted({c.task for c in cases}), sorted({c.treatment for c in cases})


def _sequential_refusal(config: pytest.Config, runner: Runner, case: Case) -> str | None:
    """Why a run until decided no longer needs *case* (its comparison decided at an earlier round)."""
    if sequential_design(config) is None or _recorded(runner, case):
        return None
    from scaffold.experiment.sequential import refusal

    return refusal(runner.experiment.root, case.task, case.treatment, case.trial)


def _recorded(runner: Runner, case: Case) -> bool:
    """Whether *case* has a record the runner returns as it is (a resumed trial starts nothing)."""
    path = runner.experiment.record_path(case)
    if not path.is_file():
        return False
    if not runner.settings.rerun_errors:
        return True
    from scaffold.errors import RecordError
    from scaffold.records.files import read_record

    try:
        return read_record(path).verdict != "error"
    except RecordError:
        return True  # the runner reports it

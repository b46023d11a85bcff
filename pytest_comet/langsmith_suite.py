"""I/O (the LangSmith SDK). The LangSmith suite's pytest side: its ``conftest.py`` imports these hooks
and fixtures, its ``test_tasks.py`` calls :func:`current_trial` and :func:`log_trial`.

The suite runs the local suite's trials (same tasks, treatments, agents, backends, records, reports and
gates: pytest_comet does all of it) and reports each to LangSmith through the SDK's own pytest integration
(``@pytest.mark.langsmith``): one dataset per suite (``LANGSMITH_TEST_SUITE``, default
``comet-skill-eval``), one example per task x treatment (every trial of a case is a run of that example:
the example id is derived from the suite, task and treatment, never from the trial), one experiment per
session (under pytest-xdist the SDK names it from ``PYTEST_XDIST_TESTRUNUID``, the same in every worker).
The plugin itself records feedback ``pass``: the test asserts the trial's verdict, so ``pass`` is 1
exactly when the verdict is ``passed`` (a baseline's failed trial is xfail for pytest, 0 for LangSmith).

What is sent comes from scaffold.tracing (inputs, reference outputs, outputs, feedback), the same a
re-upload would send. The test function takes no fixture argument, so the SDK's run and example inputs
are exactly the logged case inputs (task, treatment, difficulty), not a serialized fixture value.

Credentials. ``LANGSMITH_API_KEY`` (process environment, then ~/.comet/eval/.env) goes to our Client
only: it is not put into ``os.environ``, agents' processes get a whitelisted environment anyway, and the
SDK's failure messages are shown with the key and the part of it its connection errors carry replaced.

Failures never lose a trial. The SDK swallows most errors in background threads; we see them all: a
Client subclass notes every REST call that failed for good (404 and 409 are the plugin's normal flow),
``tracing_error_callback`` notes run ingestion that failed after its retries, a done-callback on the
SDK test suite's executor notes what failed there (an example sync, a run end), and the dataset and
experiment are created here, before the plugin would, so a refusal there turns reporting off for the
session instead of failing every test. The controller writes ``tracing.json`` into the experiment folder,
shows the failures in the terminal summary and ends with ExitStatus.REPORTING (6) when nothing else failed.

``--collect-only`` and ``LANGSMITH_TEST_TRACKING=false`` create no client and open no connection.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import os
from collections.abc import Generator, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

import pytest

from scaffold.errors import ExitStatus
from scaffold.tracing import feedback, reference_outputs
from scaffold.tracing.langsmith_report import (
    API_KEY,
    DEFAULT_TEST_SUITE,
    SPLIT,
    Failures,
    case_inputs,
    example_id,
    make_client,
    run_outputs,
    shown_url,
)

if TYPE_CHECKING:
    from langsmith import Client

    from pytest_comet.trial import Trial

__all__ = [
    "current_trial",
    "langsmith_trial",
    "log_trial",
    "pytest_configure",
    "pytest_runtest_call",
    "pytest_sessionfinish",
    "pytest_terminal_summary",
    "pytest_testnodedown",
    "pytest_unconfigure",
]

SERVICE: Final = "langsmith"
STATUS_FILE: Final = "tracing.json"
_WORKEROUTPUT_KEY: Final = "comet_langsmith"


@dataclass
class _Summary:
    """What the terminal summary shows (and comet eval, through pytest_comet_tracing_outcome)."""

    lines: list[str] = field(default_factory=list)
    failed: bool = False


@dataclass
class _State:
    enabled: bool
    endpoint: str = ""
    api_key: str = ""
    test_suite: str = DEFAULT_TEST_SUITE
    experiment_metadata: dict[str, Any] = field(default_factory=dict)
    client: Client | None = None
    suite_ready: bool | None = None
    """None: the dataset and experiment are not made yet; False: that failed, reporting is off."""
    experiment_name: str = ""
    failures: Failures = field(default_factory=Failures)
    trials: int = 0
    restore_env: dict[str, str | None] = field(default_factory=dict)
    summary: _Summary = field(default_factory=_Summary)


_STATE = pytest.StashKey[_State]()
_TRIAL: contextvars.ContextVar[Trial | None] = contextvars.ContextVar("comet_langsmith_trial", default=None)


# --- configure -----------------------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "langsmith: tracked in LangSmith (the SDK's pytest integration)")
    from scaffold.agents.credentials import Redactor, eval_home, load_environment

    if not _sdk_installed():
        raise pytest.UsageError(
            "the LangSmith suite needs the langsmith SDK, which is not installed: pip install 'comet-eval[langsmith]'"
        )
    env = load_environment()
    enabled = env.get("LANGSMITH_TEST_TRACKING", "").strip().lower() != "false"
    state = _State(enabled=enabled)
    config.stash[_STATE] = state
    _CONFIG[:] = [config]
    if not enabled:
        # The SDK reads the switch from os.environ only: a ~/.comet/eval/.env setting must reach it too.
        _set_env(state, "LANGSMITH_TEST_TRACKING", "false")
        return
    if config.option.collectonly:
        return  # a listing: no credential needed, no client, no connection
    if not env.get(API_KEY):
        raise pytest.UsageError(
            f"the LangSmith suite requires {API_KEY}: set it in the process environment or in "
            f"{eval_home(env) / '.env'} (it is never written to any record, report or log), or set "
            "LANGSMITH_TEST_TRACKING=false to run the suite without reporting"
        )
    from pytest_comet.state import plugin_state

    state.api_key = env[API_KEY]
    state.failures = Failures(redactor=Redactor([state.api_key]))  # no failure message may quote the key
    state.endpoint = env.get("LANGSMITH_ENDPOINT") or env.get("LANGCHAIN_ENDPOINT") or ""
    state.test_suite = env.get("LANGSMITH_TEST_SUITE") or DEFAULT_TEST_SUITE
    experiment_id = plugin_state(config).experiment_id()
    # The LangSmith experiment is named after ours (the SDK adds ":<8 hex>"), in every xdist worker alike.
    _set_env(state, "LANGSMITH_EXPERIMENT", env.get("LANGSMITH_EXPERIMENT") or experiment_id)
    # The case inputs are logged after the run is posted (the trial ran in the fixture before it): the SDK
    # only sends them with the run's end when told to (its documented switch).
    _set_env(state, "LANGSMITH_EXCLUDE_INPUTS_ON_PATCH", "false")
    state.experiment_metadata = {"suite": "comet-eval-langsmith", "comet_experiment_id": experiment_id}


def _sdk_installed() -> bool:
    """Whether the SDK can be imported, by a file lookup: this folder's namesake in the checkout (no
    ``__init__.py``) would be a namespace package, not the SDK."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("langsmith")
    except (ImportError, ValueError):
        return False
    return spec is not None and spec.origin is not None


def _set_env(state: _State, name: str, value: str) -> None:
    if os.environ.get(name) == value:
        return
    state.restore_env.setdefault(name, os.environ.get(name))
    os.environ[name] = value
    from langsmith import utils as ls_utils

    cast(Any, ls_utils.get_env_var).cache_clear()  # the SDK caches what it read


def pytest_unconfigure(config: pytest.Config) -> None:
    _CONFIG.clear()
    state = config.stash.get(_STATE, None)
    if state is None:
        return
    for name, value in state.restore_env.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


# --- the client ------------------------------------------------------------------------------------------


def _client(state: _State) -> Client:
    if state.client is None:
        state.client = make_client(state.endpoint, state.api_key, state.failures)
    return state.client


def _ready(state: _State, func: Any) -> bool:
    """Make the dataset and the experiment (once per process) where a failure is ours to handle: the
    plugin would raise it from inside every test."""
    if state.suite_ready is None:
        from langsmith.testing._internal import _LangSmithTestSuite

        try:
            made = _LangSmithTestSuite.from_test(
                _client(state), func, state.test_suite, state.experiment_metadata or None
            )
        except Exception as exc:
            state.failures.add("setup", "dataset and experiment (nothing more sent by this process)", exc)
            state.suite_ready = False
        else:
            state.experiment_name = str(made.name)
            state.suite_ready = True
            _note_executor_failures(made, state.failures)
    return bool(state.suite_ready)


_OPERATIONS: Final[Mapping[str, str]] = {
    "_end_run": "example sync and run end",
    "_create_feedback": "feedback",
    "_submit_result": "feedback pass",
}


def _note_executor_failures(suite: Any, failures: Failures) -> None:
    """The SDK's test suite runs example syncs, run ends and feedback in its own executor and drops their
    futures: an exception there (other than a failed request, noted already) would vanish unseen."""
    from langsmith import utils as ls_utils

    executor = suite._executor
    submit = executor.submit

    def noting_submit(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        future = submit(fn, *args, **kwargs)
        operation = _OPERATIONS.get(getattr(fn, "__name__", ""), "test suite operation")

        def done(f: Any) -> None:
            exc = None if f.cancelled() else f.exception()
            if exc is not None and not isinstance(exc, ls_utils.LangSmithError):
                failures.add("SDK", operation, exc)

        future.add_done_callback(done)
        return future

    executor.submit = noting_submit


# --- each test -------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def langsmith_trial(comet_trial: Trial) -> Iterator[Trial]:
    """This item's trial (run by pytest_comet's fixture), for :func:`current_trial`."""
    token = _TRIAL.set(comet_trial)
    try:
        yield comet_trial
    finally:
        _TRIAL.reset(token)


def current_trial() -> Trial:
    trial = _TRIAL.get()
    if trial is None:
        raise RuntimeError("current_trial() is for the LangSmith suite's test (its conftest runs the trial)")
    return trial


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """Around the SDK plugin's own wrapper: give it this case's example id, our client and the suite, or
    take its marker away when reporting is off (tracking off, a Broken case, or setup refused)."""
    state = item.config.stash.get(_STATE, None)
    callspec = getattr(item, "callspec", None)
    case = callspec.params.get("comet_case") if callspec is not None else None
    from scaffold.experiment.cases import Case

    if state is None or item.get_closest_marker("langsmith") is None:
        return (yield)
    if not state.enabled:
        return (yield)  # the SDK's pass-through
    if not isinstance(case, Case) or not _ready(state, getattr(item, "obj", None)):
        item.own_markers[:] = [m for m in item.own_markers if m.name != "langsmith"]
        return (yield)
    from langsmith import run_helpers

    marker = pytest.mark.langsmith(
        id=str(example_id(state.test_suite, case.task, case.treatment)),
        client=_client(state),
        test_suite_name=state.test_suite,
        experiment_metadata=state.experiment_metadata,
        split=SPLIT,
    )
    item.add_marker(marker, append=False)  # the closest marker is the one the SDK reads
    # Runs go through the tracing context's client (ours) and are traced whatever LANGSMITH_TRACING says.
    with run_helpers.tracing_context(client=_client(state), enabled=True):
        return (yield)


def log_trial(trial: Trial) -> None:
    """Send the trial's case inputs, reference outputs, outputs and feedback to its LangSmith run.

    Does nothing when the run is not tracked (tracking off, reporting off after a failure). A failure of
    the SDK here is noted, never raised: the test's outcome is the trial's verdict."""
    from langsmith import run_helpers
    from langsmith import testing as ls_testing
    from langsmith.testing._internal import _TEST_CASE

    from scaffold.experiment.cases import Case

    config = _CONFIG[0] if _CONFIG else None
    state = config.stash.get(_STATE, None) if config is not None else None
    case = trial.case
    if state is None or not isinstance(case, Case):
        return
    if run_helpers.get_current_run_tree() is None or _TEST_CASE.get() is None:
        return
    try:
        task = _task(config, case.task)
        if trial.outcome is None:
            difficulty = task.spec.metadata.difficulty if task is not None else None
            ls_testing.log_inputs({"task": case.task, "treatment": case.treatment, "difficulty": difficulty})
        else:
            ls_testing.log_inputs(case_inputs(trial.outcome.record, task))
        if task is not None:
            ls_testing.log_reference_outputs(reference_outputs(task))
        if trial.outcome is None:
            ls_testing.log_outputs({"verdict": "invalid", "error": trial.error})
        else:
            record = trial.outcome.record
            ls_testing.log_outputs(run_outputs(record))
            for score in feedback(record):
                if score.key == "passed":
                    continue  # the plugin's own "pass" says the same (the test asserts the verdict)
                ls_testing.log_feedback(key=score.key, score=score.value, comment=score.comment or None)
    except Exception as exc:
        state.failures.add("log", "trial results", exc)
        return
    state.trials += 1


_CONFIG: list[pytest.Config] = []
"""This process's pytest config (one per process), for the test function, which takes no fixture."""


def _task(config: Any, name: str) -> Any:
    from pytest_comet.state import plugin_state

    tasks, _ = plugin_state(config).session.catalogs()
    return tasks.tasks.get(name)


# --- session end -----------------------------------------------------------------------------------------


def _finish_process(state: _State) -> None:
    """This process's part: end the SDK's test suites here (not at interpreter exit, where a failure is
    a traceback after our summary), then wait for the run queue."""
    if state.client is None:
        return
    from langsmith.testing import _internal

    instances = dict(_internal._LangSmithTestSuite._instances or {})
    atexit.unregister(_internal._end_tests)
    for suite in instances.values():
        try:
            _internal._end_tests(suite)
        except Exception as exc:
            state.failures.add("PATCH", "/sessions (experiment end)", exc)
    _internal._LangSmithTestSuite._instances = {}
    try:
        state.client.flush()
    except Exception as exc:
        state.failures.add("flush", "trace queue", exc)


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session: pytest.Session) -> Generator[None, None, None]:
    """Every process first finishes its own reporting (a worker hands the result to the controller); the
    controller then, after every other sessionfinish (the comet reporter's reports and gates), writes
    tracing.json and, when reporting failed and nothing else did, sets the exit status ExitStatus.REPORTING."""
    config = session.config
    state = config.stash.get(_STATE, None)
    if state is not None and state.enabled:
        _finish_process(state)
        workeroutput = getattr(config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[_WORKEROUTPUT_KEY] = {
                "failures": list(state.failures.items),
                "trials": state.trials,
                "experiment": state.experiment_name,
            }
    yield
    if state is None or hasattr(config, "workerinput") or config.option.collectonly:
        return
    from pytest_comet.state import plugin_state

    comet = plugin_state(config)
    if not sum(comet.verdicts.values()):
        return  # no trial reported (the controller under xdist collects nothing itself)
    problems = list(state.failures.items)
    failed = bool(problems)
    path: Path | None = None
    with contextlib.suppress(OSError):  # the summary still says how reporting went
        path = _write_status(comet.session.experiment().root, state, problems)
    state.summary.lines = _summary_lines(state, problems, path)
    state.summary.failed = failed
    from scaffold.reports.outcome import TracingOutcome

    outcome = TracingOutcome(SERVICE, tuple(state.summary.lines), failed)
    config.hook.pytest_comet_tracing_outcome(config=config, outcome=outcome)
    if failed and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = ExitStatus.REPORTING


def _write_status(folder: Path, state: _State, problems: list[str]) -> Path:
    """``tracing.json`` (the Langfuse suite writes the same name and ``suite``/``status``/``problems`` keys):
    where the trials went and what failed (method, path, kind of error, then the exception's class and its
    message without the key: scaffold.tracing.langsmith_report.Failures)."""
    from scaffold.util.atomic import write_json_atomic

    data: dict[str, Any] = {"suite": SERVICE, "status": "off"}
    if state.enabled:
        data = {
            "suite": SERVICE,
            "status": "failed" if problems else "ok",
            "endpoint": shown_url(state.endpoint) or "default",
            "dataset": state.test_suite,
            "experiment": state.experiment_name,
            "trials": state.trials,
            "problems": problems,
        }
    return write_json_atomic(folder / STATUS_FILE, data)


_LISTED: Final = 5


def _summary_lines(state: _State, problems: list[str], path: Path | None) -> list[str]:
    if not state.enabled:
        return ["LangSmith: reporting off (LANGSMITH_TEST_TRACKING=false); nothing was sent"]
    if not problems:
        return [
            f"LangSmith: {state.trials} trial(s) reported: dataset {state.test_suite}, experiment "
            f"{state.experiment_name or '-'} at {shown_url(state.endpoint) or 'the default endpoint'}"
        ]
    lines = [
        f"LangSmith reporting FAILED ({len(problems)} failure(s)); the local records and reports are complete"
        + (f"; details: {path}" if path else "")
    ]
    lines += [f"  {problem}" for problem in problems[:_LISTED]]
    if len(problems) > _LISTED:
        lines.append(f"  ... and {len(problems) - _LISTED} more")
    return lines


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """The controller: a worker's part (pytest-xdist hands over what its sessionfinish put in workeroutput)."""
    state = node.config.stash.get(_STATE, None)
    got = getattr(node, "workeroutput", {}).get(_WORKEROUTPUT_KEY)
    if state is None or not got:
        return
    with state.failures.lock:
        state.failures.items.extend(str(f) for f in got["failures"])
    state.trials += int(got["trials"])
    state.experiment_name = state.experiment_name or str(got["experiment"])


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None:
        return
    for line in state.summary.lines:
        terminalreporter.write_line(line, red=state.summary.failed, green=not state.summary.failed)

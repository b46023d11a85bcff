"""Per-process state of the pytest plugin: the harness session (scaffold.session), built from pytest's
options, the verdicts counted so far, and the experiment id a pytest-xdist controller hands its workers."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final, TypeVar

import pytest

from scaffold.errors import CometError

if TYPE_CHECKING:
    from pytest_comet.ahead import Ahead, WorkerPlan
    from scaffold.experiment.cases import Case
    from scaffold.experiment.owner import Holding
    from scaffold.session import EngineReport, HarnessSession, Options

__all__ = ["ENGINES_KEY", "SESSION_KEY", "STATE", "WORKERINPUT_KEY", "PluginState", "plugin_state"]

WORKERINPUT_KEY: Final = "comet_experiment_id"
SESSION_KEY: Final = "comet_session_token"
ENGINES_KEY: Final = "comet_live_engines"
T = TypeVar("T")


def _ahead() -> Ahead:
    from pytest_comet.ahead import Ahead

    return Ahead()


@dataclass
class PluginState:
    """Per-process plugin state, created on first use so sessions that never use the plugin pay nothing."""

    config: pytest.Config
    verdicts: Counter[str] = field(default_factory=Counter)
    """Verdicts of the trials reported so far (the controller counts every worker's)."""
    resumed: int = 0
    usage_error: pytest.UsageError | None = None
    collected: bool = False
    """True once this process collected comet cases: the plugin is in use."""
    accepted: bool = False
    """True once collection checked the session's settings (agent, gates, ...): its plan may be written."""
    next_case: Case | None = None
    """The case of the item this process runs after the current one (pytest's ``nextitem``; xdist holds
    one back so it is known), None when no trial follows: the runner's ``upcoming``."""
    next_item: pytest.Item | None = None
    """That item itself (pytest_comet.ahead decides from its fixtures whether its trial may start ahead)."""
    ahead: Ahead = field(default_factory=_ahead)
    """The trials of this process started ahead of their items (pytest_comet.ahead)."""
    worker_plan: WorkerPlan | None = None
    """The controller's: the worker processes it runs for ``-n`` when fewer than ``-n`` (pytest_comet.ahead)."""
    _session: HarnessSession | None = None
    _experiment_id: str | None = None
    _token: str | None = None
    _engines: EngineReport | None = None
    _holding: Holding | None = None

    @property
    def session(self) -> HarnessSession:
        """The harness session of this process (scaffold.session), from pytest's options."""
        if self._session is None:
            from scaffold.agents.credentials import load_environment
            from scaffold.session import HarnessSession

            # Defaults the docs say come from the environment come from the process environment, then
            # ~/.comet/eval/.env: one merged mapping for the options and the session alike.
            environment = load_environment()
            self._session = HarnessSession(
                _options(self.config, environment), experiment_id=self.experiment_id(), environ=environment
            )
        return self._session

    def experiment_id(self) -> str:
        """The experiment of the session: the controller's (handed to workers), else ``--experiment-id``,
        else a new one. Decided without the harness session: an xdist controller hands it to its workers
        in every project, and one that never uses the plugin must not import the harness for it."""
        if self._experiment_id is None:
            workerinput = getattr(self.config, "workerinput", None)
            if workerinput and WORKERINPUT_KEY in workerinput:
                self._experiment_id = str(workerinput[WORKERINPUT_KEY])
            else:
                from scaffold.experiment import new_experiment_id

                self._experiment_id = self.config.getoption("comet_experiment_id") or new_experiment_id()
        return self._experiment_id

    def hold_experiment(self, what: str) -> None:
        """Hold this session's experiment folder (scaffold.experiment.owner), once per process, until the
        process ends or pytest unconfigures: a usage error naming the owner when another session runs it."""
        if self._holding is None:
            from scaffold.experiment.owner import hold

            root = self.use(lambda: self.session.experiment().root)
            self._holding = self.use(lambda: hold(root, self.session_token(), what=what))
            self.config.add_cleanup(self._holding.release)

    def session_token(self) -> str:
        """This session's token, the same in the controller and every worker (handed over like the
        experiment id): what --max-trials and --max-cost count by (scaffold.experiment.budget). Harness-free."""
        if self._token is None:
            workerinput = getattr(self.config, "workerinput", None)
            if workerinput and SESSION_KEY in workerinput:
                self._token = str(workerinput[SESSION_KEY])
            else:
                import secrets

                self._token = secrets.token_hex(8)
        return self._token

    def in_flight(self) -> int:
        """The trials this process may hold at once: the controller's word to a worker, else 2 only with
        an explicit ``--in-flight 2`` (pytest_comet.ahead)."""
        from pytest_comet.ahead import IN_FLIGHT_KEY

        workerinput = getattr(self.config, "workerinput", None)
        if workerinput is not None and IN_FLIGHT_KEY in workerinput:
            return int(workerinput[IN_FLIGHT_KEY])
        return 2 if self.config.getoption("comet_in_flight") == "2" else 1

    def uses_pool(self) -> bool:
        """Whether this session runs on an engine pool (decided from the options and the process
        environment alone: a project that never uses the plugin must not import the harness for it)."""
        import os

        config = self.config
        if config.getoption("comet_docker_host") or config.getoption("comet_docker_pool"):
            return True  # with another backend too: the session refuses that before anything runs
        if config.getoption("comet_backend") != "docker":
            return False
        return bool(os.environ.get("COMET_DOCKER_HOSTS") or os.environ.get("COMET_DOCKER_POOL"))

    def live_engines(self) -> list[str] | None:
        """The URLs of the pool's engines that answered at the start (None without a pool): handed over
        by the controller, else asked here once. A refusal (``--require-all-engines``) is a usage error."""
        workerinput = getattr(self.config, "workerinput", None)
        if workerinput and ENGINES_KEY in workerinput:
            return list(workerinput[ENGINES_KEY])
        report = self.engine_report()
        return report.live if report is not None else None

    def engine_report(self) -> EngineReport | None:
        """What the pool's engines answered, asked once per process; None without a pool."""
        if not self.uses_pool():
            return None
        if self._engines is None:
            self._engines = self.use(self.session.engine_report)
        return self._engines

    def in_use(self) -> bool:
        """Whether this session runs comet trials: it collected some, heard of some, or (an xdist controller,
        which collects nothing) a worker wrote the beacon."""
        if self.collected or self.verdicts.total():
            return True
        beacon = self.beacon_path()
        return beacon is not None and beacon.is_file()

    def beacon_path(self) -> Path | None:
        """Under pytest-xdist: the file in which the worker that writes the session's plan names the
        experiment folder, so the controller (which collects nothing and never builds the harness
        session unless trials ran) learns cheaply that comet trials run and where (pytest_comet.live)."""
        workerinput = getattr(self.config, "workerinput", None)
        if workerinput is None and not self.config.pluginmanager.hasplugin("dsession"):
            return None
        import tempfile

        return Path(tempfile.gettempdir()) / "comet-eval" / "sessions" / self.session_token()

    def use(self, step: Callable[[], T]) -> T:
        """*step*'s result; a CometError it raises becomes a usage error (exit status 4, the message alone)."""
        try:
            return step()
        except CometError as exc:
            raise pytest.UsageError(str(exc)) from None


def _options(config: pytest.Config, environment: Mapping[str, str]) -> Options:
    from scaffold.catalog.builtin import project_root
    from scaffold.session import Options

    def paths(name: str) -> tuple[Path, ...]:
        return tuple(Path(p) for p in config.getoption(f"comet_{name}"))

    def path(name: str) -> Path | None:
        value = config.getoption(f"comet_{name}")
        return Path(value) if value else None

    manifest = path("eval_manifest")
    return Options(
        root=project_root(config.rootpath, config.invocation_params.dir),
        tasks_dirs=paths("tasks_dir"),
        treatments_dirs=paths("treatments_dir"),
        skill_bases=tuple(config.getoption("comet_skill_base")),
        skill_path=path("skill_path"),
        skill_name=config.getoption("comet_skill_name"),
        distractors=int(config.getoption("comet_distractors")),
        skill_pool=path("skill_pool"),
        nudge=bool(config.getoption("comet_nudge")),
        self_written=bool(config.getoption("comet_self_written")),
        tasks=tuple(config.getoption("comet_task")),
        treatments=tuple(config.getoption("comet_treatment")),
        count=_count(config),
        # With an eval.yaml the session decides (command line > manifest > environment > default).
        agent=config.getoption("comet_agent") or ("" if manifest else environment.get("BENCH_EVAL_AGENT") or "oracle"),
        model=config.getoption("comet_model"),
        base_url=config.getoption("comet_base_url"),
        backend=config.getoption("comet_backend"),
        profile=config.getoption("comet_profile"),
        keep_workspaces=config.getoption("comet_keep_workspaces"),
        rerun_errors=bool(config.getoption("comet_rerun_errors")),
        retry_excluded=max(0, int(config.getoption("comet_retry_excluded"))),  # negative: a usage error later
        experiment_id=config.getoption("comet_experiment_id"),
        logs_dir=path("logs_dir"),
        workspace_root=path("workspace_root"),
        baseline=config.getoption("comet_baseline"),
        gates=tuple(config.getoption("comet_gate")),
        html=bool(config.getoption("comet_html")),
        report_config=path("report_config"),
        manifest=manifest,
        quick=bool(config.getoption("comet_quick")),
        project_root=path("project_root"),
        collect_only=bool(config.option.collectonly),
        judge_agent=config.getoption("comet_judge_agent"),
        judge_model=config.getoption("comet_judge_model"),
        judge_base_url=config.getoption("comet_judge_base_url"),
        judge_samples=config.getoption("comet_judge_samples"),
        image_aliases=tuple(config.getoption("comet_image_alias")),
        image_alias_file=path("image_alias_file"),
        docker_hosts=tuple(config.getoption("comet_docker_host")),
        docker_pool=path("docker_pool"),
        require_all_engines=bool(config.getoption("comet_require_all_engines")),
        **_start_window(config),
    )


def _start_window(config: pytest.Config) -> dict[str, float]:
    """``--start-window``, only when given (SessionOptions holds the default); a negative one is refused."""
    window = config.getoption("comet_start_window")
    if window is None:
        return {}
    if window < 0:
        raise pytest.UsageError(f"--start-window {window:g}: use 0 (off) or a number of seconds")
    return {"start_window": float(window)}


def _count(config: pytest.Config) -> int:
    """Trials per case: ``--comet-count`` (or our ``--count``), else pytest-repeat's ``--count`` when that
    plugin owns the name (pytest_comet.plugin keeps it from multiplying the items), else 1."""
    count = config.getoption("comet_count")
    if config.getoption("comet_until_decided") and count is None:
        # A run until decided collects every trial it may need; those it does not are skipped.
        most = config.getoption("comet_max_count")
        return int(most) if most is not None and most > 0 else 10
    if count is None and config.pluginmanager.hasplugin("repeat"):
        count = config.getoption("count", None)
    return int(count) if count is not None else 1


STATE = pytest.StashKey[PluginState]()
"""Where a pytest config keeps this process's PluginState."""


def plugin_state(config: pytest.Config) -> PluginState:
    if STATE not in config.stash:
        config.stash[STATE] = PluginState(config)
    return config.stash[STATE]

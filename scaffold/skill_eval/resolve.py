"""What a skill evaluation runs and with which settings: one resolution for ``comet eval`` and the session.

Both the command (scaffold.cli.eval.plan) and the pytest session (scaffold.session, for
``--eval-manifest``) call these two functions, so the rules live here once:

* **task selection**: ``--task`` > ``--quick`` (generic-skill-smoke) > the manifest's ``evaluation.tasks``
  together with its ``recommendedTasks`` > generated tasks;
* **settings precedence**: the command line > the manifest > the environment (the process, then
  ``~/.comet/eval/.env``) > the default, each value with where it came from.

Pure: the environment is handed in, and the generated tasks are asked for through a callback only when
the selection falls through to them (the command reads the cache; the session generates on a miss).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from scaffold.experiment.cases import parse_list

if TYPE_CHECKING:  # the session imports this module at its start, the manifest validator only when used
    from scaffold.skill_eval.manifest import Manifest

__all__ = [
    "COMMAND_LINE",
    "DEFAULT_AGENT",
    "MANIFEST",
    "QUICK_TASK",
    "Choice",
    "EvalSettings",
    "Explicit",
    "Selection",
    "environment_base_url",
    "resolve_settings",
    "select_tasks",
    "with_agent_endpoint",
]

DEFAULT_AGENT: Final = "claude-code"
"""The agent of a skill evaluation when nothing names one (a plain pytest run's default is the oracle)."""
QUICK_TASK: Final = "generic-skill-smoke"
"""The built-in task ``--quick`` runs."""
COMMAND_LINE: Final = "command line"
MANIFEST: Final = "manifest"
_JUDGE_AGENT: Final = "claude-code"
"""The judge's agent when it is enabled and nothing names one."""


@dataclass(frozen=True, slots=True)
class Choice:
    """A resolved value and where it came from (``command line``, ``manifest``, ``environment (NAME)``,
    ``<.env file> (NAME)``, ``default``...)."""

    value: str | None
    source: str

    @property
    def declared(self) -> str | None:
        """The value when the command line or the manifest set it, else None (the session leaves the rest
        to the readers of the environment: the agent's own variables, scaffold.reports.config)."""
        return self.value if self.source in (COMMAND_LINE, MANIFEST) else None


@dataclass(frozen=True, slots=True)
class Explicit:
    """What the command line set (empty strings and None: not set)."""

    tasks: tuple[str, ...] = ()
    quick: bool = False
    agent: str | None = None
    model: str | None = None
    base_url: str | None = None
    judge_agent: str | None = None
    judge_model: str | None = None
    judge_base_url: str | None = None
    profile: str | None = None
    report_config: str | None = None
    backend: str | None = None


@dataclass(frozen=True, slots=True)
class EvalSettings:
    """Every setting of an evaluation, each with where it came from."""

    agent: Choice
    model: Choice
    base_url: Choice
    judge: tuple[Choice, Choice, Choice] | None
    """agent, model, base URL of the judge when it is enabled."""
    profile: Choice
    backend: Choice
    report_config: Choice


@dataclass(frozen=True, slots=True)
class Selection:
    """The tasks chosen, in run order, and where they came from."""

    origin: str
    """``command line``, ``quick``, ``authored``, ``recommended``, ``authored + recommended``,
    ``generated cache``, ``pending generation``."""
    patterns: tuple[str, ...]
    """What selects them among the cases (the ``--task`` patterns as given, else the names)."""
    tasks: tuple[tuple[str, str], ...]
    """(task name, what it is); empty while generation is pending."""
    unknown: tuple[str, ...] = ()
    """``--task`` patterns that match no task (the command refuses them; the session's case selection
    reports them its own way)."""


def _from_env(
    names: Sequence[str], process: Mapping[str, str], merged: Mapping[str, str], env_file: str
) -> Choice | None:
    for name in names:
        if process.get(name):
            return Choice(process[name], f"environment ({name})")
        if merged.get(name):
            return Choice(merged[name], f"{env_file} ({name})")
    return None


def _pick(
    cli: str | None, manifest: str | None, env: Choice | None, default: str | None, default_source: str = "default"
) -> Choice:
    if cli:
        return Choice(cli, COMMAND_LINE)
    if manifest:
        return Choice(manifest, MANIFEST)
    if env is not None:
        return env
    return Choice(default, default_source)


def _judge_enabled(explicit: Explicit, manifest: Manifest | None, merged: Mapping[str, str]) -> bool:
    declared = (manifest.judge.agent, manifest.judge.model, manifest.judge.base_url) if manifest else ()
    return bool(
        explicit.judge_agent
        or explicit.judge_model
        or explicit.judge_base_url
        or any(declared)
        or merged.get("BENCH_LLM_JUDGE", "").strip().lower() in ("1", "true", "yes", "on")
    )


def resolve_settings(
    manifest: Manifest | None,
    explicit: Explicit,
    merged: Mapping[str, str],
    *,
    default_agent: str,
    process: Mapping[str, str] | None = None,
    env_file: str = ".env",
) -> EvalSettings:
    """Each setting by the precedence of the module docstring. *merged* is the process environment over
    the user's ``.env`` (scaffold.agents.credentials.load_environment); *process* alone tells the two
    apart in the sources (``environment (NAME)`` against ``<env_file> (NAME)``); without it every value
    found reads ``environment (NAME)``. The model and API have no environment layer here: each agent
    reads its own variables (the command shows them, scaffold.cli.eval.plan)."""
    process = merged if process is None else process
    execution, judge = (manifest.execution, manifest.judge) if manifest else (None, None)
    agent = _pick(
        explicit.agent,
        execution.agent if execution else None,
        _from_env(["BENCH_EVAL_AGENT"], process, merged, env_file),
        default_agent,
    )
    model = _pick(explicit.model, execution.model if execution else None, None, None)
    base_url = _pick(explicit.base_url, execution.base_url if execution else None, None, None)
    judged: tuple[Choice, Choice, Choice] | None = None
    if _judge_enabled(explicit, manifest, merged):
        judged = (
            _pick(
                explicit.judge_agent,
                judge.agent if judge else None,
                _from_env(["BENCH_JUDGE_AGENT"], process, merged, env_file),
                _JUDGE_AGENT,
            ),
            _pick(
                explicit.judge_model,
                judge.model if judge else None,
                _from_env(["BENCH_JUDGE_MODEL"], process, merged, env_file),
                None,
                "missing",
            ),
            _pick(
                explicit.judge_base_url,
                judge.base_url if judge else None,
                _from_env(["BENCH_JUDGE_BASE_URL"], process, merged, env_file),
                None,
            ),
        )
    config = manifest.reporting.config if manifest else None
    return EvalSettings(
        agent=agent,
        model=model,
        base_url=base_url,
        judge=judged,
        profile=_pick(explicit.profile, manifest.skill.profile if manifest else None, None, None, "the task's"),
        backend=_pick(explicit.backend, None, None, "local"),
        report_config=_pick(
            explicit.report_config,
            str(config) if config else None,
            _from_env(["COMET_EVAL_REPORT_CONFIG"], process, merged, env_file),
            None,
        ),
    )


def environment_base_url(agent: str, env: Mapping[str, str]) -> str | None:
    """The API an agent would use from its own ``*_BASE_URL`` variables (built-in or custom adapter)."""
    from scaffold.agents.builtin import BUILTIN_CLI_AGENTS, builtin_spec
    from scaffold.agents.custom import load_adapters

    if agent in BUILTIN_CLI_AGENTS:
        names: Sequence[str] = builtin_spec(agent, env).base_url_env
    else:
        spec = load_adapters(env).specs.get(agent)
        names = spec.base_url_env if spec else ()
    return next((env[n] for n in names if env.get(n)), None)


def with_agent_endpoint(settings: EvalSettings, env: Mapping[str, str]) -> EvalSettings:
    """*settings* with the model and API the agent takes from its own variables when neither the command
    line nor the manifest sets them (source ``environment``). Both ``comet eval`` and the session key the
    generated tasks' cache on these effective values, so the two find the same cache entry. An agent that
    cannot be made (unknown, credentials missing) leaves them unset: the caller reports that itself."""
    from scaffold.agents import create_agent
    from scaffold.errors import AgentError

    agent, model, base_url = settings.agent, settings.model, settings.base_url
    assert agent.value is not None
    try:
        made = create_agent(agent.value, env, model=model.value, base_url=base_url.value)
    except AgentError:
        return settings
    if model.value is None and made.model:
        model = Choice(made.model, "environment")
    env_url = environment_base_url(agent.value, env) if base_url.value is None else None
    if env_url:
        base_url = Choice(env_url, "environment")
    return dataclasses.replace(settings, model=model, base_url=base_url)


def select_tasks(
    manifest: Manifest,
    explicit: Explicit,
    builtin: Collection[str],
    generated: Callable[[], Sequence[str] | None],
) -> Selection:
    """Which tasks run (the order of the module docstring). *builtin* names the built-in tasks;
    *generated* is called only when the manifest declares no task: the generated task names, or None
    when none are at hand (then the origin is ``pending generation``)."""
    from scaffold.skill_eval.manifest import InlineTask

    declared = {t.name: ("inline" if isinstance(t, InlineTask) else f"source {t.folder}") for t in manifest.tasks}
    for name in manifest.recommended_tasks:
        declared.setdefault(name, "built-in (recommended)")
    if explicit.tasks:
        patterns = tuple(parse_list(explicit.tasks))
        pool = {**dict.fromkeys(builtin, "built-in"), **declared}
        rows: list[tuple[str, str]] = []
        unknown: list[str] = []
        for pattern in patterns:
            matched = [n for n in pool if n == pattern or (pattern.endswith("*") and n.startswith(pattern[:-1]))]
            if not matched:
                unknown.append(pattern)
            rows += [(n, pool[n]) for n in sorted(matched) if (n, pool[n]) not in rows]
        return Selection(COMMAND_LINE, patterns, tuple(rows), tuple(unknown))
    if explicit.quick:
        return Selection("quick", (QUICK_TASK,), ((QUICK_TASK, "built-in"),))
    if manifest.tasks or manifest.recommended_tasks:
        # The manifest's own tasks run together with its recommended built-in ones (the original Comet eval merges them;
        # names may not collide): both are what the author declared. Only a manifest declaring neither has
        # its tasks generated.
        label = "authored" if manifest.tasks else "recommended"
        if manifest.tasks and manifest.recommended_tasks:
            label = "authored + recommended"
        return Selection(label, tuple(declared), tuple(declared.items()))
    names = generated()
    if names is None:
        return Selection("pending generation", (), ())
    return Selection("generated cache", tuple(names), tuple((name, "generated") for name in names))

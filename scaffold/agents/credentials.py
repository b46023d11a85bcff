"""Credentials and settings for agent processes: what reaches them, and only that.

Sources, in order: the process environment, then ``~/.comet/eval/.env`` (``COMET_EVAL_HOME`` moves the
folder). The process wins, but an empty value never overrides a set one. Only the variables an adapter
declares are handed to its process; every declared value is a secret to be kept out of all outputs.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dotenv import dotenv_values

from scaffold.errors import AgentError

__all__ = ["CredentialSpec", "Redactor", "eval_home", "load_environment", "resolve_credentials"]

REDACTED = "[redacted]"


def eval_home(env: Mapping[str, str] | None = None) -> Path:
    """``~/.comet/eval`` (or ``$COMET_EVAL_HOME``): the user's .env and adapters live here."""
    env = os.environ if env is None else env
    return Path(env.get("COMET_EVAL_HOME") or Path.home() / ".comet" / "eval").expanduser()


def load_environment(process_env: Mapping[str, str] | None = None, env_file: Path | None = None) -> dict[str, str]:
    """The process environment merged over the user's ``.env`` file (empty values never override)."""
    process_env = dict(os.environ if process_env is None else process_env)
    env_file = env_file or eval_home(process_env) / ".env"
    merged: dict[str, str] = {}
    if env_file.is_file():
        merged.update({k: v for k, v in dotenv_values(env_file).items() if v})
    for key, value in process_env.items():
        if value or key not in merged:
            merged[key] = value
    return merged


@dataclass(frozen=True, slots=True)
class CredentialSpec:
    """What an adapter may receive. ``secrets``: names whose values must never be written anywhere;
    ``required_any``: at least one must be set; ``aliases``: native name -> fallback names tried in order
    (``BENCH_API_KEY`` for ``ANTHROPIC_API_KEY``); ``settings``: non-secret names also passed through."""

    secrets: tuple[str, ...]
    required_any: tuple[str, ...] = ()
    aliases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    settings: tuple[str, ...] = ()


def resolve_credentials(spec: CredentialSpec, env: Mapping[str, str], *, agent: str) -> dict[str, str]:
    """The environment to hand the agent's process: declared names only, aliases applied.

    Raises AgentError naming the variables to set when none of ``required_any`` resolves, so a run
    fails before any container starts.
    """
    out: dict[str, str] = {}
    for name in (*spec.secrets, *spec.settings):
        value = env.get(name) or next((env[a] for a in spec.aliases.get(name, ()) if env.get(a)), "")
        if value:
            out[name] = value
    if spec.required_any and not any(out.get(n) for n in spec.required_any):
        fallbacks = sorted({a for n in spec.required_any for a in spec.aliases.get(n, ())} - set(spec.required_any))
        names = " or ".join([*spec.required_any, *fallbacks])
        raise AgentError(
            f"agent {agent!r} needs credentials: set {names} in the environment or in {eval_home(env) / '.env'}"
        )
    return out


class Redactor:
    """Replaces secret values in text and files the harness writes (raw streams, logs)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        # Longest first so a secret containing another is replaced whole; short values are not
        # secrets worth redacting and would mangle ordinary text.
        self._secrets: Sequence[str] = sorted({s for s in secrets if len(s) >= 6}, key=len, reverse=True)

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def text(self, value: str) -> str:
        for secret in self._secrets:
            value = value.replace(secret, REDACTED)
        return value

    def file(self, path: Path) -> None:
        if not self._secrets or not path.is_file():
            return
        data = path.read_bytes()
        cleaned = data
        for secret in self._secrets:
            cleaned = cleaned.replace(secret.encode(), REDACTED.encode())
        if cleaned != data:
            path.write_bytes(cleaned)

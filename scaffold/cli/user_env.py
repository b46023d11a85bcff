"""The user's settings file ``~/.comet/eval/.env``: its template, its creation, and ``comet env``.

The first ``comet eval`` run creates the file from ``env.template`` (package data) when it is missing:
every variable the project reads, commented out. It is created exclusively and atomically: the whole
template is written to a private temporary file in the folder, which is then hard-linked to ``.env``;
``link`` fails when ``.env`` exists, so a file the user wrote is never overwritten, and a concurrent
first run never sees half a file (it either made the link itself or finds the complete one). Where hard
links are not supported, ``O_CREAT | O_EXCL`` is the fallback (still exclusive; a concurrent reader may
then read a file being written, which only costs it the defaults for that run). Mode 0600 in a 0700
folder: the file holds credentials.

Reading the file is scaffold.agents.credentials' job (``load_environment``: the process wins, empty
values never override). ``comet env`` shows, for every variable of the template and of the custom
adapters, its value and where it comes from (process environment > .env > default), every secret
masked.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from scaffold.agents.builtin import (
    BUILTIN_CLI_AGENTS,
    CLAUDE_CODE_VERSION,
    CODEBUDDY_VERSION,
    CODEX_VERSION,
    QODER_VERSION,
    builtin_spec,
)
from scaffold.agents.credentials import Redactor, eval_home, load_environment
from scaffold.agents.custom import adapters_dir, load_adapters

__all__ = [
    "MASK",
    "Setting",
    "TemplateVariable",
    "ensure_user_env",
    "environment_report",
    "is_secret",
    "resolved_settings",
    "sections",
    "template_text",
    "template_variables",
    "user_env_file",
]

MASK = "********"
_VARIABLE = re.compile(r"^# ([A-Z][A-Z0-9_]*)=(.*)$")
_SECTION = re.compile(r"^# --- (.+?) -*$")
# Names that hold credentials whatever agent declares them (custom adapters' names are added at run time).
_SECRET_WORDS = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|AUTH|HEADERS|COOKIE|CREDENTIAL)")


def template_text() -> str:
    """The template shipped in the package."""
    return resources.files("scaffold.cli").joinpath("env.template").read_text(encoding="utf-8")


@dataclass(frozen=True, slots=True)
class TemplateVariable:
    name: str
    section: str
    example: str
    """The value the template shows after ``=`` (often empty)."""


def template_variables(text: str | None = None) -> tuple[TemplateVariable, ...]:
    """Every ``# NAME=value`` line of the template, in order, with the section it is listed under."""
    section = ""
    out: list[TemplateVariable] = []
    for line in (template_text() if text is None else text).splitlines():
        if match := _SECTION.match(line):
            section = match.group(1)
        elif match := _VARIABLE.match(line):
            out.append(TemplateVariable(match.group(1), section, match.group(2)))
    return tuple(out)


def user_env_file(env: Mapping[str, str] | None = None) -> Path:
    """``~/.comet/eval/.env``, or ``$COMET_EVAL_HOME/.env``."""
    return eval_home(env) / ".env"


def ensure_user_env(env: Mapping[str, str] | None = None) -> Path | None:
    """Create the user's ``.env`` from the template when it does not exist; the path when this call
    created it, None when it existed (it is then left exactly as it is)."""
    file = user_env_file(env)
    if file.exists() or file.is_symlink():
        return None
    folder = file.parent
    if not folder.is_dir():
        folder.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):  # a concurrent first run made it: its mode is ours too
            folder.mkdir(mode=0o700)
            folder.chmod(0o700)  # mkdir's mode is masked by the umask
    data = template_text().encode("utf-8")
    temp = folder / f".env.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    _write_private(temp, data)
    try:
        os.link(temp, file)
    except FileExistsError:
        return None  # another run (or the user) made it first: keep theirs
    except OSError:
        # No hard links on this file system: an exclusive create instead.
        try:
            _write_private(file, data)
        except FileExistsError:
            return None
    finally:
        temp.unlink(missing_ok=True)
    return file


def _write_private(path: Path, data: bytes) -> None:
    """Write *path* exclusively (FileExistsError when it exists), mode 0600 whatever the umask."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        os.fchmod(fd, 0o600)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


# --- comet env ----------------------------------------------------------------------------------------


def is_secret(name: str, declared: frozenset[str] = frozenset()) -> bool:
    """Whether *name*'s value is a credential: declared so by an agent, or named like one."""
    return name in declared or bool(_SECRET_WORDS.search(name))


@dataclass(frozen=True, slots=True)
class Setting:
    """One variable as ``comet env`` shows it: never a secret's value."""

    name: str
    section: str
    shown: str
    """The value to show: masked for secrets, URL credentials removed; empty when not set."""
    source: str
    """``environment``, the .env file's path, or ``default`` / ``not set``."""
    secret: bool

    def as_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "section": self.section,
            "value": self.shown or None,
            "from": self.source,
            "secret": self.secret,
        }


def resolved_settings(
    process_env: Mapping[str, str] | None = None,
    *,
    defaults: Mapping[str, str] | None = None,
    extra: Mapping[str, tuple[tuple[str, ...], frozenset[str]]] | None = None,
    declared_secrets: frozenset[str] = frozenset(),
) -> tuple[Setting, ...]:
    """Every template variable (and, in *extra*, each custom adapter's section: its names and which of
    them are secrets) with its value and source. *defaults*: what applies when a name is not set."""
    process = dict(os.environ if process_env is None else process_env)
    file = user_env_file(process)
    from_file = load_environment({}, file) if file.is_file() else {}
    rows: list[tuple[str, str, bool]] = [
        (v.name, v.section, is_secret(v.name, declared_secrets)) for v in template_variables()
    ]
    for section, (names, secret_names) in (extra or {}).items():
        rows += [(n, section, is_secret(n, declared_secrets | secret_names)) for n in names]
    every_secret = [
        value for name, _, secret in rows if secret for value in (process.get(name), from_file.get(name)) if value
    ]
    redact = Redactor(every_secret)
    out: list[Setting] = []
    seen: set[str] = set()
    for name, section, secret in rows:
        if name in seen:
            continue
        seen.add(name)
        if process.get(name):
            value, source = process[name], "environment"
        elif from_file.get(name):
            value, source = from_file[name], str(file)
        elif defaults and name in defaults:
            value, source = defaults[name], "default"
        else:
            value, source = "", "not set"
        shown = MASK if secret and value and source != "default" else _without_credentials(redact.text(value))
        out.append(Setting(name, section, shown, source, secret))
    return tuple(out)


def _without_credentials(value: str) -> str:
    """A URL's ``user:password@`` removed; any other value as it is."""
    if "://" not in value or "@" not in value:
        return value
    try:
        parts = urlsplit(value)
        if parts.username is None and parts.password is None:
            return value
        netloc = f"{MASK}@{parts.hostname or ''}" + (f":{parts.port}" if parts.port else "")
    except ValueError:
        return MASK  # not a URL we can take apart: show nothing of it
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def environment_report(process_env: Mapping[str, str] | None = None) -> tuple[Setting, ...]:
    """What ``comet env`` shows: the template's variables and each custom adapter's, with the defaults
    the harness applies, every credential an agent declares treated as a secret."""
    process = dict(os.environ if process_env is None else process_env)
    merged = load_environment(process)
    declared: set[str] = set()
    for name in BUILTIN_CLI_AGENTS:
        spec = builtin_spec(name, merged)
        declared.update(spec.credentials.secrets)
    extra: dict[str, tuple[tuple[str, ...], frozenset[str]]] = {}
    catalog = load_adapters(merged, reserved=(*BUILTIN_CLI_AGENTS, "oracle", "nop"))
    for name, spec in sorted(catalog.specs.items()):
        names = (*spec.credentials.secrets, *spec.credentials.settings, *spec.model_env, *spec.base_url_env)
        extra[f"custom agent {name}"] = (tuple(dict.fromkeys(names)), frozenset(spec.credentials.secrets))
    defaults = {
        "BENCH_EVAL_AGENT": "claude-code (comet eval); oracle (pytest)",
        "BENCH_CC_VERSION": CLAUDE_CODE_VERSION,
        "BENCH_CODEX_VERSION": CODEX_VERSION,
        "BENCH_QODER_VERSION": QODER_VERSION,
        "BENCH_CODEBUDDY_VERSION": CODEBUDDY_VERSION,
        "COMET_EVAL_ADAPTERS_DIR": str(adapters_dir(merged)),
    }
    return resolved_settings(process, defaults=defaults, extra=extra, declared_secrets=frozenset(declared))


def sections(settings: tuple[Setting, ...]) -> Iterator[tuple[str, list[Setting]]]:
    """The settings grouped by section, in order."""
    current: list[Setting] = []
    name = None
    for setting in settings:
        if setting.section != name and current:
            yield name or "", current
            current = []
        name = setting.section
        current.append(setting)
    if current:
        yield name or "", current

"""Load the service's settings from a TOML file (see app.toml)."""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from typing import Any


class ConfigError(ValueError):
    """Raised when the configuration cannot be read or is invalid."""


@dataclass(frozen=True)
class AppConfig:
    """The service's settings."""

    host: str
    port: int
    debug: bool
    workers: int


_TYPES: dict[str, type] = {"host": str, "port": int, "debug": bool, "workers": int}
_DEFAULTS: dict[str, Any] = {"host": "127.0.0.1", "debug": False, "workers": 1}
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _read(path: str | os.PathLike[str]) -> dict[str, Any]:
    shown = os.fspath(path)
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise ConfigError(f"{shown}: cannot read config file: {exc.strerror or exc}") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{shown}: config file is not valid UTF-8: {exc}") from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None)
        if line is None:
            found = re.search(r"line (\d+)", str(exc))
            line = int(found.group(1)) if found else text.count("\n") + 1
        raise ConfigError(f"{shown}: invalid TOML at line {line}: {exc}") from exc


def _check_types(shown: str, data: dict[str, Any]) -> None:
    unknown = sorted(set(data) - set(_TYPES))
    if unknown:
        raise ConfigError(f"{shown}: unknown key(s): {', '.join(unknown)}")
    for key, value in data.items():
        expected = _TYPES[key]
        ok = isinstance(value, expected) and (expected is bool or not isinstance(value, bool))
        if not ok:
            raise ConfigError(f"{shown}: {key}: expected {expected.__name__}, got {type(value).__name__}")


def _env_int(name: str, value: str) -> int:
    text = value.strip()
    if not re.fullmatch(r"[+-]?\d+", text):
        raise ConfigError(f"{name}: expected a decimal integer, got {value!r}")
    return int(text)


def _env_bool(name: str, value: str) -> bool:
    text = value.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ConfigError(f"{name}: expected one of 1/true/yes/on or 0/false/no/off, got {value!r}")


def _overrides() -> dict[str, Any]:
    found: dict[str, Any] = {}
    host = os.environ.get("APP_HOST", "")
    if host != "":
        found["host"] = host
    port = os.environ.get("APP_PORT", "")
    if port != "":
        found["port"] = _env_int("APP_PORT", port)
    debug = os.environ.get("APP_DEBUG", "")
    if debug != "":
        found["debug"] = _env_bool("APP_DEBUG", debug)
    workers = os.environ.get("APP_WORKERS", "")
    if workers != "":
        found["workers"] = _env_int("APP_WORKERS", workers)
    return found


def load_config(path: str | os.PathLike[str]) -> AppConfig:
    """Read the TOML file at *path*, apply APP_* environment overrides and return the settings.

    Raises ConfigError when the file cannot be read or parsed, has unknown keys, values of the
    wrong type or out of range, when ``port`` is missing, or when an override cannot be parsed.
    """
    shown = os.fspath(path)
    data = _read(path)
    _check_types(shown, data)
    values = {**_DEFAULTS, **data, **_overrides()}
    if "port" not in values:
        raise ConfigError(f"{shown}: port is required (in the file or as APP_PORT)")
    if not 1 <= values["port"] <= 65535:
        raise ConfigError(f"{shown}: port must be between 1 and 65535, got {values['port']}")
    if values["workers"] < 1:
        raise ConfigError(f"{shown}: workers must be at least 1, got {values['workers']}")
    if values["host"] == "":
        raise ConfigError(f"{shown}: host must not be empty")
    return AppConfig(host=values["host"], port=values["port"], debug=values["debug"], workers=values["workers"])

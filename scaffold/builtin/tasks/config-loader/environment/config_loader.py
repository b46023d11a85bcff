"""Load the service's settings from a TOML file (see app.toml)."""

from __future__ import annotations

import os
from dataclasses import dataclass


class ConfigError(ValueError):
    """Raised when the configuration cannot be read or is invalid."""


@dataclass(frozen=True)
class AppConfig:
    """The service's settings."""

    host: str
    port: int
    debug: bool
    workers: int


def load_config(path: str | os.PathLike[str]) -> AppConfig:
    """Read the TOML file at *path*, apply APP_* environment overrides and return the settings."""
    raise NotImplementedError("load_config is not implemented yet")

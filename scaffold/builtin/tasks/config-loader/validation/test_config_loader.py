"""Hidden checks for config-loader: load_config, its validation errors and APP_* overrides."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import itertools
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

try:
    from scaffold.python.validation.core import run_checks
except ImportError:  # the harness may copy core.py next to this script instead
    from core import run_checks  # type: ignore[no-redef]

WORKSPACE = Path.cwd()
_counter = itertools.count()


def _module() -> ModuleType:
    path = WORKSPACE / "config_loader.py"
    assert path.is_file(), "config_loader.py is missing from the workspace"
    spec = importlib.util.spec_from_file_location(f"_hidden_config_loader_{next(_counter)}", path)
    assert spec is not None and spec.loader is not None, "config_loader.py cannot be loaded"
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses needs the module registered
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        raise AssertionError(f"importing config_loader.py failed: {type(exc).__name__}: {exc}") from None
    for name in ("load_config", "AppConfig", "ConfigError"):
        assert hasattr(module, name), f"config_loader.py no longer defines {name}"
    return module


@contextlib.contextmanager
def _env(values: dict[str, str] | None = None) -> Iterator[None]:
    """Run with every APP_* variable removed, then *values* set; restore the environment after."""
    saved = dict(os.environ)
    try:
        for key in [k for k in os.environ if k.startswith("APP_")]:
            del os.environ[key]
        os.environ.update(values or {})
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _toml(text: str | bytes) -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "conf.toml"
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        yield path


def _load(mod: ModuleType, path: Any, env: dict[str, str] | None = None) -> Any:
    with _env(env):
        try:
            return mod.load_config(path)
        except Exception as exc:
            raise AssertionError(
                f"load_config({str(path)!r}) with env {env or {}} raised {type(exc).__name__}: {exc}"
            ) from None


def _error(mod: ModuleType, path: Any, case: str, env: dict[str, str] | None = None) -> str:
    """Call load_config expecting ConfigError; return its message with the path removed."""
    with _env(env):
        try:
            result = mod.load_config(path)
        except mod.ConfigError as exc:
            message = str(exc)
        except Exception as exc:
            raise AssertionError(
                f"{case}: load_config raised {type(exc).__name__}: {exc}, expected ConfigError"
            ) from None
        else:
            raise AssertionError(f"{case}: load_config returned {result!r}, expected ConfigError")
    return message


def _without_path(message: str, path: Path) -> str:
    return message.replace(str(path), "<path>").replace(str(path.parent), "<dir>")


def _expect(mod: ModuleType, text: str, expected: tuple[Any, ...], env: dict[str, str] | None = None) -> None:
    with _toml(text) as path:
        config = _load(mod, path, env)
    got = (config.host, config.port, config.debug, config.workers)
    assert got == expected and [type(v) for v in got] == [type(v) for v in expected], (
        f"file {text!r} with env {env or {}}: got {got!r}, expected {expected!r}"
    )


FULL = 'host = "example.org"\nport = 443\ndebug = true\nworkers = 16\n'


def check_api() -> None:
    mod = _module()
    assert isinstance(mod.ConfigError, type) and issubclass(mod.ConfigError, ValueError), (
        "ConfigError must be a subclass of ValueError"
    )
    assert dataclasses.is_dataclass(mod.AppConfig), "AppConfig must be a dataclass"
    names = [f.name for f in dataclasses.fields(mod.AppConfig)]
    assert names == ["host", "port", "debug", "workers"], f"AppConfig fields are {names}"
    assert mod.AppConfig.__dataclass_params__.frozen, "AppConfig must be a frozen dataclass"


def check_sample_file() -> None:
    mod = _module()
    config = _load(mod, WORKSPACE / "app.toml")
    assert isinstance(config, mod.AppConfig), f"load_config returned {type(config).__name__}, not AppConfig"
    assert config == mod.AppConfig("0.0.0.0", 8080, False, 4), f"app.toml loaded as {config!r}"
    config = _load(mod, "app.toml")
    assert config == mod.AppConfig("0.0.0.0", 8080, False, 4), f"'app.toml' (a str path) loaded as {config!r}"


def check_full_file() -> None:
    mod = _module()
    _expect(mod, FULL, ("example.org", 443, True, 16))
    _expect(mod, "workers = 3\ndebug = false\nport = 1\nhost = 'db.local'\n", ("db.local", 1, False, 3))
    with _toml(FULL) as path:
        config = _load(mod, str(path))
    assert config == mod.AppConfig("example.org", 443, True, 16), "a str path must work like a Path"


def check_frozen_result() -> None:
    mod = _module()
    with _toml(FULL) as path:
        config = _load(mod, path)
    try:
        config.port = 1
    except dataclasses.FrozenInstanceError:
        return
    raise AssertionError("assigning to a field of the returned AppConfig did not raise FrozenInstanceError")


def check_defaults() -> None:
    mod = _module()
    _expect(mod, "port = 5000\n", ("127.0.0.1", 5000, False, 1))
    _expect(mod, "port = 5000\ndebug = true\n", ("127.0.0.1", 5000, True, 1))
    _expect(mod, "# comment only plus port\nport = 65535\nworkers = 2\n", ("127.0.0.1", 65535, False, 2))
    _expect(mod, 'host = "h"\nport = 22\n', ("h", 22, False, 1))


def check_missing_port() -> None:
    mod = _module()
    for text in ('host = "a"\ndebug = true\nworkers = 2\n', ""):
        with _toml(text) as path:
            message = _without_path(_error(mod, path, f"file without port {text!r}"), path)
        assert "port" in message, f"the error for a missing port does not mention 'port': {message!r}"


def check_missing_file() -> None:
    mod = _module()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "does-not-exist.toml"
        for arg in (path, str(path)):
            message = _error(mod, arg, "missing file")
            assert str(path) in message, f"the error for a missing file does not contain the path: {message!r}"


def check_unreadable_file() -> None:
    mod = _module()
    with tempfile.TemporaryDirectory() as tmp:
        message = _error(mod, Path(tmp), "a directory instead of a file")
        assert tmp in message, f"the error for a directory does not contain the path: {message!r}"
    with _toml(b'host = "caf\xe9"\nport = 80\n') as path:
        message = _error(mod, path, "a file that is not valid UTF-8")
        assert str(path) in message, f"the error for invalid UTF-8 does not contain the path: {message!r}"


def check_invalid_toml() -> None:
    mod = _module()
    cases = [
        ('host = "a"\nport = 8080\ndebug = yes\n', 3),
        ("port = 8080\nworkers 4\n", 2),
        ('port = 1\n\n\nhost = "abc\n', 4),
        ("port = 1\nworkers = 2\nport = 2\n", 3),
        ("[server\nport = 1\n", 1),
    ]
    for text, line in cases:
        with _toml(text) as path:
            raw = _error(mod, path, f"invalid TOML {text!r}")
            assert str(path) in raw, f"the error for invalid TOML does not contain the path: {raw!r}"
            message = _without_path(raw, path)
        assert re.search(rf"\bline {line}\b", message), (
            f"the error for invalid TOML {text!r} should contain 'line {line}': {raw!r}"
        )


def check_unknown_keys() -> None:
    mod = _module()
    cases = [
        ("port = 80\nhostname = 'x'\n", ["hostname"]),
        ("port = 80\ntimeout = 5\nverbose = true\n", ["timeout", "verbose"]),
        ("port = 80\n[server]\nname = 'x'\n", ["server"]),
    ]
    for text, keys in cases:
        with _toml(text) as path:
            message = _without_path(_error(mod, path, f"unknown keys in {text!r}"), path)
        for key in keys:
            assert key in message, f"the error for {text!r} does not name the unknown key {key!r}: {message!r}"


def check_wrong_types() -> None:
    mod = _module()
    cases = [
        ("host = 5\nport = 80\n", "host", "str"),
        ("host = ['a']\nport = 80\n", "host", "str"),
        ('port = "8080"\n', "port", "int"),
        ("port = true\n", "port", "int"),
        ("port = 8080.0\n", "port", "int"),
        ("port = 80\ndebug = 1\n", "debug", "bool"),
        ('port = 80\ndebug = "true"\n', "debug", "bool"),
        ("port = 80\nworkers = true\n", "workers", "int"),
        ("port = 80\nworkers = 2.5\n", "workers", "int"),
        ("port = 80\nworkers = { n = 1 }\n", "workers", "int"),
    ]
    for text, key, type_name in cases:
        with _toml(text) as path:
            message = _without_path(_error(mod, path, f"wrong type in {text!r}"), path)
        assert key in message and type_name in message, (
            f"the error for {text!r} must name the key {key!r} and the expected type {type_name!r}: {message!r}"
        )


def check_ranges() -> None:
    mod = _module()
    for text, key in [
        ("port = 0\n", "port"),
        ("port = 65536\n", "port"),
        ("port = -1\n", "port"),
        ("port = 100000\n", "port"),
        ("port = 80\nworkers = 0\n", "workers"),
        ("port = 80\nworkers = -3\n", "workers"),
        ('host = ""\nport = 80\n', "host"),
    ]:
        with _toml(text) as path:
            message = _without_path(_error(mod, path, f"out of range {text!r}"), path)
        assert key in message, f"the error for {text!r} does not name {key!r}: {message!r}"
    _expect(mod, "port = 1\n", ("127.0.0.1", 1, False, 1))
    _expect(mod, "port = 65535\nworkers = 1\n", ("127.0.0.1", 65535, False, 1))


def check_env_overrides() -> None:
    mod = _module()
    env = {"APP_HOST": "10.0.0.1", "APP_PORT": "9000", "APP_DEBUG": "TRUE", "APP_WORKERS": "8"}
    _expect(mod, FULL, ("10.0.0.1", 9000, True, 8), env)
    _expect(mod, FULL, ("example.org", 8443, True, 16), {"APP_PORT": "8443"})
    _expect(mod, FULL, ("example.org", 443, True, 2), {"APP_WORKERS": "2"})
    _expect(mod, FULL, ("example.org", 443, True, 16), {"PORT": "1234", "APP_TIMEOUT": "5", "HOST": "x"})
    for raw, value in [
        ("1", True),
        ("true", True),
        ("Yes", True),
        ("ON", True),
        ("0", False),
        ("false", False),
        ("NO", False),
        ("Off", False),
    ]:
        _expect(mod, FULL, ("example.org", 443, value, 16), {"APP_DEBUG": raw})
        _expect(
            mod,
            "port = 1\ndebug = " + ("false" if value else "true") + "\n",
            ("127.0.0.1", 1, value, 1),
            {"APP_DEBUG": raw},
        )


def check_env_supplies_port() -> None:
    mod = _module()
    _expect(mod, "", ("127.0.0.1", 7000, False, 1), {"APP_PORT": "7000"})
    _expect(mod, 'host = "a"\n', ("a", 7000, True, 3), {"APP_PORT": "7000", "APP_DEBUG": "yes", "APP_WORKERS": "3"})


def check_empty_env_ignored() -> None:
    mod = _module()
    env = {"APP_HOST": "", "APP_PORT": "", "APP_DEBUG": "", "APP_WORKERS": ""}
    _expect(mod, FULL, ("example.org", 443, True, 16), env)
    with _toml('host = "a"\n') as path:
        message = _without_path(_error(mod, path, "no port and an empty APP_PORT", env), path)
    assert "port" in message.lower(), f"the error for a missing port does not mention it: {message!r}"


def check_invalid_env() -> None:
    mod = _module()
    for name, value in [
        ("APP_PORT", "abc"),
        ("APP_PORT", "80.5"),
        ("APP_PORT", "0x50"),
        ("APP_WORKERS", "many"),
        ("APP_WORKERS", "1.0"),
        ("APP_DEBUG", "maybe"),
        ("APP_DEBUG", "2"),
    ]:
        with _toml(FULL) as path:
            message = _error(mod, path, f"{name}={value!r}", {name: value})
        assert name in message, f"the error for {name}={value!r} does not name {name}: {message!r}"


def check_env_range() -> None:
    mod = _module()
    for name, value, key in [
        ("APP_PORT", "70000", "port"),
        ("APP_PORT", "0", "port"),
        ("APP_PORT", "-5", "port"),
        ("APP_WORKERS", "0", "workers"),
    ]:
        with _toml(FULL) as path:
            message = _without_path(_error(mod, path, f"{name}={value!r}", {name: value}), path)
        assert key in message.lower(), f"the error for {name}={value!r} does not name {key!r}: {message!r}"


CHECKS = {
    "ConfigError and the frozen AppConfig dataclass": check_api,
    "loads the sample app.toml": check_sample_file,
    "loads every key with the right types": check_full_file,
    "returned AppConfig is immutable": check_frozen_result,
    "defaults for missing optional keys": check_defaults,
    "missing port raises ConfigError": check_missing_port,
    "missing file raises ConfigError with the path": check_missing_file,
    "unreadable file raises ConfigError with the path": check_unreadable_file,
    "invalid TOML raises ConfigError with path and line": check_invalid_toml,
    "unknown keys raise ConfigError naming them": check_unknown_keys,
    "wrong types raise ConfigError naming key and type": check_wrong_types,
    "out-of-range values raise ConfigError": check_ranges,
    "APP_* environment variables override the file": check_env_overrides,
    "APP_PORT can supply a missing port": check_env_supplies_port,
    "empty APP_* variables are ignored": check_empty_env_ignored,
    "unparsable APP_* values raise ConfigError naming the variable": check_invalid_env,
    "overridden values are range-checked": check_env_range,
}

if __name__ == "__main__":
    sys.exit(run_checks(CHECKS))

"""The agent CLIs on this machine: the check a session makes before its first workspace, and the commands
``comet agents list`` and ``comet agents install``.

A session's agent must have its program where the run will look for it, or the session is a usage error
naming the agent, the places looked at and the command that installs it: a trial whose agent cannot start
records an error verdict, and a baseline-only run of those used to end as expected failures, exit 0.

* local backend: the program found by scaffold.agents.locate (``$COMET_AGENT_BIN_DIR``, the prefix
  ``comet agents install`` fills, ``PATH``), which is the one the run then starts;
* docker backend: the agent layer (scaffold.workspaces.docker.agent_layer) installs the pinned package on
  the host at the first trial, so it must be there already or its installer (npm, pip) must be at hand.

The pinned versions live in one place, scaffold.agents.builtin; ``.ci/run`` installs through this command.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from scaffold.agents.base import Agent
from scaffold.agents.builtin import BUILTIN_CLI_AGENTS, CODEBUDDY_VERSION, builtin_spec
from scaffold.agents.cli import CliAgentSpec, version_in, version_output
from scaffold.agents.credentials import eval_home, load_environment
from scaffold.agents.custom import load_adapters
from scaffold.agents.locate import Lookup, default_prefix, installed_npm_version, locate, prefix_bin_dirs
from scaffold.errors import AgentError, Problem, SelectionError
from scaffold.util.run_process import run_attached, run_process
from scaffold.workspaces.base import InstallSpec

__all__ = [
    "DEFAULT_INSTALL",
    "AgentStatus",
    "CredentialStatus",
    "agent_statuses",
    "install_agents",
    "require_program",
]

DEFAULT_INSTALL = tuple(name for name in BUILTIN_CLI_AGENTS if name != "codebuddy" or CODEBUDDY_VERSION != "latest")
"""What ``comet agents install`` installs when no name is given: the built-in CLIs with a pinned version."""
_NO_PROGRAM = ("nop", "oracle")
INSTALL_TIMEOUT_S = 900.0
_NPM_QUIET = ("--no-audit", "--no-fund", "--loglevel=error")
VERSION_TIMEOUT_S = 10.0
MASK = "********"
"""How a set credential is shown: never its value, nor its length."""


# --- the check at collection ------------------------------------------------------------------------


def require_program(agent: Agent, backend: str, env: Mapping[str, str]) -> None:
    """Raise AgentError when *agent*'s program is not where a run on *backend* will look for it."""
    install = agent.install
    if install is None:
        return  # oracle and nop run no program of their own
    if backend == "docker":
        _require_docker_layer(agent.name, install)
        return
    lookup = locate(install.executable, env)
    if lookup.found is None:
        raise AgentError(_not_found(agent.name, install, lookup, env))


def _not_found(agent: str, install: InstallSpec, lookup: Lookup, env: Mapping[str, str]) -> str:
    where = "; ".join(lookup.looked)
    if install.kind == "none":
        how = f"its adapter installs nothing (install kind none): put {install.executable!r} on PATH"
    else:
        how = (
            f"install it with `comet agents install {agent}` ({install.kind} {_package(install)} into "
            f"{default_prefix(env)})"
        )
    return (
        f"--agent={agent}: its program {install.executable!r} is not installed; looked in {where}. "
        f"{how[0].upper()}{how[1:]}, or set $COMET_AGENT_BIN_DIR to the folder that holds it"
    )


def _require_docker_layer(agent: str, install: InstallSpec) -> None:
    if install.kind == "none":
        return  # in the task image: only its container can tell
    from scaffold.workspaces.docker.agent_layer import agent_folder, is_installed

    if is_installed(install):
        return
    installer = _installer_problem(install)
    if installer:
        raise AgentError(
            f"--agent={agent} --backend=docker: {_package(install)} is not in the docker agent layer "
            f"({agent_folder(install)}), which installs it on this machine at the first trial, and {installer}"
        )


def _installer_problem(install: InstallSpec) -> str | None:
    if install.kind == "npm" and shutil.which("npm") is None:
        return "npm is not on PATH: install Node.js 18 or later with npm"
    if install.kind == "pip" and importlib.util.find_spec("pip") is None:
        return f"pip is not installed for {sys.executable}"
    return None


def _package(install: InstallSpec) -> str:
    separator = "==" if install.kind == "pip" else "@"
    return f"{install.package}{separator}{install.version or 'latest'}"


# --- comet agents list ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CredentialStatus:
    name: str
    source: str | None
    """Where its value comes from (``environment``, the .env file's path), None when it is not set."""

    def shown(self) -> str:
        return f"{self.name}={MASK} ({self.source})" if self.source else f"{self.name} not set"


@dataclass(frozen=True, slots=True)
class AgentStatus:
    """One agent as ``comet agents list`` shows it; never a credential's value."""

    name: str
    origin: str
    """``built-in``, or the custom adapter's file."""
    install: InstallSpec | None
    lookup: Lookup | None
    version: str | None
    credentials: tuple[CredentialStatus, ...]
    """Any one of these is enough (the first ones are the agent's own names, then fallbacks)."""

    def as_json(self) -> dict[str, object]:
        return {
            "agent": self.name,
            "origin": self.origin,
            "program": self.install.executable if self.install else None,
            "package": _package(self.install) if self.install and self.install.kind != "none" else None,
            "found": str(self.lookup.found) if self.lookup and self.lookup.found else None,
            "version": self.version,
            "credentials": [{"name": c.name, "set": c.source is not None, "from": c.source} for c in self.credentials],
        }


def agent_statuses(env: Mapping[str, str] | None = None) -> tuple[list[AgentStatus], list[Problem]]:
    """Every built-in and custom agent: its program (found or not, and its version) and credentials; and the
    problems of invalid custom adapters."""
    process = dict(os.environ if env is None else env)
    merged = load_environment(process)
    env_file = eval_home(process) / ".env"
    from_file = load_environment({}, env_file)
    statuses = [AgentStatus(name, "built-in", None, None, None, ()) for name in _NO_PROGRAM]
    catalog = load_adapters(merged, reserved=(*_NO_PROGRAM, *BUILTIN_CLI_AGENTS))
    specs = [("built-in", builtin_spec(name, merged)) for name in BUILTIN_CLI_AGENTS]
    specs += [(f"custom ({_adapter_file(merged, name)})", spec) for name, spec in sorted(catalog.specs.items())]
    lookups = [locate(spec.install.executable, merged) for _, spec in specs]
    # Each CLI takes a second or more to say its version: ask them all at once.
    with ThreadPoolExecutor(max_workers=max(1, len(specs))) as pool:
        versions = list(
            pool.map(
                lambda item: _version(item[1].found, item[0][1].version_argv) if item[1].found else None,
                zip(specs, lookups, strict=True),
            )
        )
    for (origin, spec), lookup, version in zip(specs, lookups, versions, strict=True):
        names = _credential_names(spec)
        credentials = tuple(CredentialStatus(n, _source(n, process, from_file, env_file)) for n in names)
        statuses.append(AgentStatus(spec.name, origin, spec.install, lookup, version, credentials))
    return statuses, list(catalog.problems)


def _adapter_file(env: Mapping[str, str], name: str) -> Path:
    from scaffold.agents.custom import adapters_dir

    return adapters_dir(env) / name / "adapter.yaml"


def _credential_names(spec: CliAgentSpec) -> list[str]:
    required = spec.credentials.required_any
    fallbacks = [a for n in required for a in spec.credentials.aliases.get(n, ()) if a not in required]
    return list(dict.fromkeys([*required, *fallbacks]))


def _source(name: str, process: Mapping[str, str], from_file: Mapping[str, str], env_file: Path) -> str | None:
    if process.get(name):
        return "environment"
    if from_file.get(name):
        return str(env_file)
    return None


def _version(program: Path, argv: Sequence[str]) -> str | None:
    """The version ``PROGRAM --version`` prints, within a short time limit; None when it says nothing that
    looks like a version (scaffold.agents.cli.version_in)."""
    with tempfile.TemporaryDirectory(prefix="comet-agent-version-") as tmp:
        folder = Path(tmp)
        # A private HOME: asking a CLI its version must not touch the user's settings.
        env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(folder), "LANG": "C.UTF-8"}
        out, err = folder / "stdout", folder / "stderr"
        result = run_process(
            [str(program), *argv], cwd=folder, env=env, timeout=VERSION_TIMEOUT_S, stdout_path=out, stderr_path=err
        )
        if result.timed_out:
            return f"(no answer to {' '.join(argv)} within {VERSION_TIMEOUT_S:g} s)"
        return version_in(version_output(out)) if result.exit_code == 0 else None


# --- comet agents install ---------------------------------------------------------------------------


def install_agents(
    names: Sequence[str],
    prefix: Path | None = None,
    env: Mapping[str, str] | None = None,
    *,
    log: Callable[[str], None] = print,
) -> int:
    """Install the programs of agents *names* (default: DEFAULT_INSTALL) into *prefix* (default: the comet
    agents prefix): npm packages with ``npm install --prefix``, pip packages into ``PREFIX/venv``.
    Returns 0 when every one is installed afterwards, 1 otherwise."""
    merged = load_environment(dict(os.environ if env is None else env))
    target = (prefix or default_prefix(merged)).expanduser().absolute()
    specs = _specs(names or DEFAULT_INSTALL, merged)
    npm = [s.install for s in specs if s.install.kind == "npm" and not _current(s.install, target)]
    pip = [s.install for s in specs if s.install.kind == "pip"]
    failed = False
    if npm:
        if shutil.which("npm") is None:
            raise AgentError("npm is not on PATH: install Node.js 18 or later with npm, then run this again")
        target.mkdir(parents=True, exist_ok=True)
        # --save-exact: the prefix's package.json holds the pins, so a later install never moves them.
        argv = ["npm", "install", "--prefix", str(target), "--save-exact", *_NPM_QUIET, *map(_package, npm)]
        failed |= not _run(argv, log)
    if pip:
        venv = prefix_bin_dirs(target)[1].parent
        if not (venv / "bin" / "python").exists():
            failed |= not _run([sys.executable, "-m", "venv", str(venv)], log)
        pip_argv = [str(venv / "bin" / "python"), "-m", "pip", "install", "--no-input"]
        failed |= not _run([*pip_argv, *map(_package, pip)], log)
    for spec in specs:
        failed |= not _report(spec, target, log)
    if target != default_prefix(merged).absolute():
        bins = os.pathsep.join(str(folder) for folder in prefix_bin_dirs(target))
        log(f"not the default prefix: runs find these programs with COMET_AGENT_BIN_DIR={bins}")
    return 1 if failed else 0


def _specs(names: Sequence[str], env: Mapping[str, str]) -> list[CliAgentSpec]:
    catalog = load_adapters(env, reserved=(*_NO_PROGRAM, *BUILTIN_CLI_AGENTS))
    specs = []
    for name in dict.fromkeys(names):
        if name in BUILTIN_CLI_AGENTS:
            specs.append(builtin_spec(name, env))
        elif name in catalog.specs:
            specs.append(catalog.specs[name])
        elif name in _NO_PROGRAM:
            raise SelectionError(f"agent {name!r} is built into the harness: there is nothing to install")
        else:
            known = ", ".join([*BUILTIN_CLI_AGENTS, *sorted(catalog.specs)])
            raise SelectionError(f"comet agents install {name}: unknown agent; known: {known}")
    return specs


def _current(install: InstallSpec, prefix: Path) -> bool:
    """Already installed at the pinned version (``latest`` is always asked for again)."""
    return install.version not in (None, "latest") and installed_npm_version(install, prefix) == install.version


def _run(argv: list[str], log: Callable[[str], None]) -> bool:
    log("$ " + " ".join(argv))
    # Here, not at the top: the docker package is for docker sessions, and every session imports this module.
    from scaffold.workspaces.docker.host_trust import installer_environment

    try:
        # npm trusts the host's CA bundle as pip does (scaffold.workspaces.docker.host_trust).
        code = run_attached(argv, timeout=INSTALL_TIMEOUT_S, env=installer_environment())
    except OSError as exc:
        log(f"cannot start {argv[0]}: {exc.strerror}")
        return False
    if code is None:
        log(f"timed out after {INSTALL_TIMEOUT_S:g} s")
        return False
    if code != 0:
        log(f"{argv[0]} exited with status {code}")
    return code == 0


def _report(spec: CliAgentSpec, prefix: Path, log: Callable[[str], None]) -> bool:
    install = spec.install
    if install.kind == "none":
        found = locate(install.executable, os.environ).found
        where = f"found at {found}" if found else "not found: put it on PATH yourself"
        log(f"{spec.name}: its adapter installs nothing (install kind none); {install.executable} {where}")
        return found is not None
    folder = prefix_bin_dirs(prefix)[0 if install.kind == "npm" else 1]
    program = folder / install.executable
    if not program.exists():
        log(f"{spec.name}: {_package(install)} did not install {program}")
        return False
    log(f"{spec.name}: {program} ({_package(install)})")
    return True

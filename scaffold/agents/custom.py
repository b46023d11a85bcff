"""Custom agents registered in ``~/.comet/eval/adapters/<id>/adapter.yaml`` (or $COMET_EVAL_ADAPTERS_DIR).

An executable merely on PATH is never discovered: only valid, registered adapters exist. The CLI must
accept ``-p <prompt> --output-format stream-json --model <model> [--resume <id>]`` and print JSON
Lines; skill invocations count only from ``{"type": "skill_invocation", "skill": ...}`` events.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import Field, ValidationError

from scaffold.agents.base import AgentTraits
from scaffold.agents.cli import CliAgentSpec, Invocation
from scaffold.agents.credentials import CredentialSpec, eval_home
from scaffold.agents.streams.claude import parse_claude_stream
from scaffold.errors import Problem
from scaffold.util.schema import Model, NonEmptyStr, load_yaml, problems_from, yaml_problem
from scaffold.workspaces.base import InstallSpec

__all__ = ["AdapterCatalog", "adapters_dir", "load_adapters"]

ADAPTER_ID = re.compile(r"^[a-z][a-z0-9-]{1,31}$")
ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
REQUIRED_CAPABILITIES = ("singleTurn", "resume", "structuredEvents", "skillInvocationEvidence")
EnvName = Annotated[str, Field(strict=True, pattern=ENV_NAME.pattern)]


class _Metadata(Model):
    id: NonEmptyStr
    version: NonEmptyStr = "0.0.0"


class _Install(Model):
    kind: Literal["npm", "pip", "none"]
    package: NonEmptyStr | None = None
    version: NonEmptyStr | None = None


class _Runtime(Model):
    executable: NonEmptyStr
    install: _Install


class _Capabilities(Model):
    singleTurn: Annotated[bool, Field(strict=True)] = False
    resume: Annotated[bool, Field(strict=True)] = False
    structuredEvents: Annotated[bool, Field(strict=True)] = False
    telemetry: Annotated[bool, Field(strict=True)] = False
    skillInvocationEvidence: Annotated[bool, Field(strict=True)] = False


class AdapterFile(Model):
    apiVersion: Literal["comet.eval.agent/v1alpha1"]
    kind: Literal["EvalAgentAdapter"]
    metadata: _Metadata
    runtime: _Runtime
    credentials: tuple[EnvName, ...] = Field(default=(), max_length=2)
    modelEnv: EnvName | None = None
    baseUrlEnv: EnvName | None = None
    capabilities: _Capabilities


@dataclass(frozen=True)
class AdapterCatalog:
    specs: Mapping[str, CliAgentSpec]
    problems: tuple[Problem, ...]


def adapters_dir(env: Mapping[str, str]) -> Path:
    configured = env.get("COMET_EVAL_ADAPTERS_DIR")
    return Path(configured).expanduser() if configured else eval_home(env) / "adapters"


def _argv(inv: Invocation) -> list[str]:
    out = ["-p", inv.prompt, "--output-format", "stream-json"]
    if inv.model:
        out += ["--model", inv.model]
    if inv.session_id:
        out += ["--resume", inv.session_id]
    return out


def load_adapters(env: Mapping[str, str], *, reserved: tuple[str, ...] = ()) -> AdapterCatalog:
    """Every valid adapter of the registry; invalid, duplicate or escaping entries become problems."""
    root = adapters_dir(env)
    specs: dict[str, CliAgentSpec] = {}
    problems: list[Problem] = []
    if not root.is_dir():
        return AdapterCatalog({}, ())
    real_root = root.resolve()
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        file = folder / "adapter.yaml"
        if not folder.resolve().is_relative_to(real_root):
            problems.append(
                Problem(folder, "adapter folder points outside the adapters registry", value=str(folder.resolve()))
            )
            continue
        if file.is_symlink() and not file.resolve().is_relative_to(real_root):
            # The file is the symlink, not its folder: name it, and where it leads.
            problems.append(
                Problem(
                    file,
                    f"symlink to a file outside the adapters registry {root}: copy the file into {folder} instead",
                    value=str(file.resolve()),
                )
            )
            continue
        if not file.is_file():
            problems.append(Problem(file, "missing: each adapter folder holds an adapter.yaml"))
            continue
        try:
            parsed = AdapterFile.model_validate(load_yaml(file.read_text(encoding="utf-8")) or {})
        except ValidationError as exc:
            problems.extend(_hide_credential_values(problems_from(exc, file, AdapterFile, sections=False)))
            continue
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            problems.append(yaml_problem(file, exc))
            continue
        except (ValueError, OSError) as exc:
            problems.append(Problem(file, f"not valid YAML: {exc}"))
            continue
        found = _check(parsed, folder, file, reserved, specs)
        if found:
            problems.extend(found)
            continue
        specs[parsed.metadata.id] = _spec(parsed)
    return AdapterCatalog(specs, tuple(problems))


def _hide_credential_values(problems: list[Problem]) -> list[Problem]:
    """A ``credentials`` entry that is not a variable name is most likely the secret itself: never echo it."""
    out = []
    for p in problems:
        if p.key.startswith("credentials["):
            p = Problem(p.file, "must be an environment variable name (MY_AGENT_API_KEY), not a secret value", p.key)
        elif p.key == "credentials":
            p = Problem(p.file, p.message, p.key)
        out.append(p)
    return out


def _check(
    adapter: AdapterFile, folder: Path, file: Path, reserved: tuple[str, ...], seen: Mapping[str, CliAgentSpec]
) -> list[Problem]:
    problems = []
    ident = adapter.metadata.id
    if not ADAPTER_ID.match(ident):
        problems.append(
            Problem(
                file,
                "must start with a lowercase letter and use 2-32 lowercase letters, digits and '-'",
                "metadata.id",
                ident,
            )
        )
    elif ident != folder.name:
        problems.append(Problem(file, f"must equal the folder name {folder.name!r}", "metadata.id", ident))
    elif ident in reserved:
        problems.append(
            Problem(
                file,
                "is a built-in agent's id, which an adapter cannot replace; give the adapter another id "
                "(and folder name)",
                "metadata.id",
                ident,
            )
        )
    elif ident in seen:
        problems.append(Problem(file, "duplicates an agent that already exists", "metadata.id", ident))
    install = adapter.runtime.install
    if install.kind != "none" and not install.package:
        problems.append(Problem(file, f"install kind {install.kind} needs a package", "runtime.install.package"))
    declared = adapter.capabilities.model_dump()
    missing = [c for c in REQUIRED_CAPABILITIES if not declared[c]]
    if missing:
        problems.append(
            Problem(file, "real evaluations need these capabilities true: " + ", ".join(missing), "capabilities")
        )
    return problems


def _spec(adapter: AdapterFile) -> CliAgentSpec:
    install = adapter.runtime.install
    creds = adapter.credentials
    return CliAgentSpec(
        name=adapter.metadata.id,
        install=InstallSpec(install.kind, adapter.runtime.executable, install.package, install.version),
        traits=AgentTraits(".agents/skills", "AGENTS.md", reports_tokens=adapter.capabilities.telemetry),
        # No BENCH_* mapping for custom agents: they get exactly the variables they declare.
        credentials=CredentialSpec(secrets=creds, required_any=creds),
        argv=_argv,
        parse=lambda lines: parse_claude_stream(lines, agent=adapter.metadata.id, custom=True),
        model_env=(adapter.modelEnv,) if adapter.modelEnv else (),
        base_url_env=(adapter.baseUrlEnv,) if adapter.baseUrlEnv else (),
    )

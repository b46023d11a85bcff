"""Load and validate a skill package: ``SKILL.md``, ``comet/skill.yaml`` and its optional companions.

    <package>/SKILL.md
    <package>/comet/skill.yaml        the definition (runtime + authoring)
    <package>/comet/guardrails.yaml   optional: allow lists and budgets (defaults below)
    <package>/comet/checks.yaml       optional runtime checks; or evals.yaml, never both
    <package>/comet/eval.yaml         optional authoring manifest: parsed and exposed, never run here

Every problem in every file is collected and raised together as one ``SkillPackageError`` whose lines
name the file, the field and the fix.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from comet_engine.errors import SkillPackageError
from comet_engine.skills.models import (
    ChecksFileModel,
    GuardrailsModel,
    SkillModel,
    StepModel,
    ToolModel,
)

__all__ = [
    "ACTION_TYPES",
    "DEFAULT_MAX_ITERATIONS",
    "DEFAULT_MAX_RETRIES",
    "PackageGuardrails",
    "RuntimeCheck",
    "ScriptSource",
    "SkillPackage",
    "load_package",
    "load_package_texts",
    "load_yaml_file",
]

ACTION_TYPES = ("invoke_skill", "call_tool", "handoff", "ask_user", "checkpoint")
DEFAULT_MAX_ITERATIONS = 50
DEFAULT_MAX_RETRIES = 3
# Which declaration list an action type's ref must appear in (handoff hands control to an agent).
_REF_KINDS = {"invoke_skill": "skills", "call_tool": "tools", "handoff": "agents"}
# libyaml's loader when PyYAML was built with it.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MAX_CHARS, _MAX_DEPTH, _MAX_NODES = 1024 * 1024, 100, 100_000
"""A package file's limits: its length, its nesting (libyaml's composer recurses in C: 50,000 nested
brackets crash the process) and its nodes with every alias expanded (an alias bomb)."""


def _load_yaml(text: str) -> Any:
    """*text* parsed safely within the limits above; yaml.YAMLError (a limit's says which) otherwise. The
    limits are checked on the parser's events (an explicit stack in libyaml), before anything is built:
    the same check as the harness's scaffold.util.schema, which this package may not import."""
    if len(text) > _MAX_CHARS:
        raise yaml.YAMLError(f"longer than {_MAX_CHARS:,} characters")
    expanded = 0
    sizes: dict[str, int] = {}  # anchor -> the nodes its value expands to
    open_nodes: list[tuple[int, str | None]] = []  # each open collection: expanded before it, its anchor
    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, yaml.CollectionStartEvent):
            if len(open_nodes) >= _MAX_DEPTH:
                raise yaml.YAMLError(f"nested deeper than {_MAX_DEPTH} levels")
            open_nodes.append((expanded, event.anchor))
            expanded += 1
        elif isinstance(event, yaml.CollectionEndEvent):
            start, anchor = open_nodes.pop()
            if anchor is not None:
                sizes[anchor] = expanded - start
        elif isinstance(event, yaml.ScalarEvent):
            expanded += 1
            if event.anchor is not None:
                sizes[event.anchor] = 1
        elif isinstance(event, yaml.AliasEvent):
            expanded += sizes.get(event.anchor or "", 1)
        if expanded > _MAX_NODES:
            raise yaml.YAMLError(f"expands to more than {_MAX_NODES:,} nodes (aliases of aliases)")
    return yaml.load(text, Loader=_LOADER)


_M = TypeVar("_M", bound=BaseModel)
_UNION_TAGS = {"str", "ToolModel"}
_FRONTMATTER = re.compile(r"\A---\s*\n(.*?)\n---\s*(?:\n|\Z)", re.DOTALL)

_Reader = Callable[[str], bytes | None]
"""A package file's bytes by its package-relative POSIX path; None when there is no such file; OSError
when it exists but cannot be read. One loader serves a folder on disk and files seen through another
interface (``load_package_texts``)."""


@dataclass(frozen=True, slots=True)
class PackageGuardrails:
    """The effective guardrails: ``guardrails.yaml`` over the original Comet engine's defaults. Nothing
    relaxes them later."""

    allowed_skills: tuple[str, ...]
    allowed_agents: tuple[str, ...]
    allowed_tools: tuple[str, ...]
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    max_retries_per_action: int = DEFAULT_MAX_RETRIES
    confirmation_required_for: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RuntimeCheck:
    """One runtime check of checks.yaml / evals.yaml (``runtime:`` list)."""

    id: str
    scope: str
    type: str
    artifact: str | None = None
    field: str | None = None
    equals: Any = None
    step: str | None = None
    description: str = ""


@dataclass(frozen=True, slots=True)
class ScriptSource:
    """A script tool's source file (relative POSIX path inside the package) and its sha256."""

    path: str
    sha256: str


@dataclass(frozen=True, slots=True)
class SkillPackage:
    """A validated package. ``documents`` holds the parsed YAML as written (the input of the skill hash)."""

    root: Path
    skill_md: str
    definition: SkillModel
    guardrails: PackageGuardrails
    checks: tuple[RuntimeCheck, ...]
    checks_file: str | None
    eval_manifest: Mapping[str, Any] | None
    scripts: tuple[ScriptSource, ...]
    documents: Mapping[str, Any] = field(repr=False)

    @property
    def name(self) -> str:
        return self.definition.metadata.name

    @property
    def version(self) -> str:
        return self.definition.metadata.version

    @property
    def mode(self) -> str:
        return self.definition.orchestration.mode

    @property
    def steps(self) -> tuple[StepModel, ...]:
        return self.definition.orchestration.steps or ()

    def step(self, step_id: str) -> StepModel | None:
        return next((s for s in self.steps if s.id == step_id), None)

    @property
    def tools(self) -> tuple[ToolModel, ...]:
        return tuple(_tool(t) for t in self.definition.tools)


def load_yaml_file(path: Path, problems: list[str]) -> Any:
    """The parsed YAML of *path*, or None with a problem appended (unreadable, syntax error, not a mapping)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        problems.append(f"{path}: cannot be read ({exc}); fix the file's permissions or encoding (UTF-8)")
        return None
    return _parse_yaml(path, data, problems)


def _parse_yaml(path: Path, data: bytes, problems: list[str]) -> Any:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(f"{path}: cannot be read ({exc}); fix the file's permissions or encoding (UTF-8)")
        return None
    try:
        data = _load_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        reason = getattr(exc, "problem", None) or str(exc)
        problems.append(f"{path}:{where}: invalid YAML: {reason}")
        return None
    if not isinstance(data, dict):
        problems.append(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
        return None
    return data


def load_package(root: Path) -> SkillPackage:
    """Load the package at *root*; ``SkillPackageError`` lists every problem found."""
    root = Path(root)
    if not root.is_dir():
        raise SkillPackageError(
            f"{root}: not a skill package directory", [f"{root}: no such directory; pass a skill package folder"]
        )

    def read(rel: str) -> bytes | None:
        path = root / rel
        return path.read_bytes() if path.is_file() else None

    return _load(root, read)


def load_package_texts(read_text: Callable[[str], str | None], *, label: str = "<package>") -> SkillPackage:
    """Load and validate a package whose files are read through *read_text* (package-relative POSIX path
    -> text, None when there is no such file): the same checks and messages as :func:`load_package`, no
    file system. For callers that see a package through another interface, e.g. an evaluation reading
    a generated package inside a workspace. *label* stands for the package's folder in every message
    (and is the result's ``root``); script hashes are of the texts' UTF-8 bytes."""

    def read(rel: str) -> bytes | None:
        text = read_text(rel)
        return None if text is None else text.encode("utf-8")

    return _load(Path(label), read)


def _load(root: Path, read: _Reader) -> SkillPackage:
    problems: list[str] = []
    control = root / "comet"
    skill_md = _read_skill_md(root, read, problems)
    raw_skill = _document(root, "comet/skill.yaml", read, problems, required=True)
    raw_guardrails = _document(root, "comet/guardrails.yaml", read, problems, required=False)
    checks_name, raw_checks = _checks_document(root, read, problems)
    raw_eval = _document(root, "comet/eval.yaml", read, problems, required=False)

    definition = _validate(SkillModel, raw_skill, control / "skill.yaml", problems)
    guardrails_model = _validate(GuardrailsModel, raw_guardrails, control / "guardrails.yaml", problems)
    checks_model = _validate(ChecksFileModel, raw_checks, control / (checks_name or "checks.yaml"), problems)

    guardrails = PackageGuardrails((), (), ())
    checks: tuple[RuntimeCheck, ...] = ()
    scripts: tuple[ScriptSource, ...] = ()
    if definition is not None:
        _check_definition(definition, control / "skill.yaml", problems)
        _check_frontmatter(root, skill_md, definition.metadata.name, problems)
        scripts = _scripts(root, read, definition, problems)
        guardrails = _guardrails(definition, guardrails_model, control / "guardrails.yaml", problems)
        if checks_model is not None or checks_name is None:
            checks_path = control / (checks_name or "checks.yaml")
            checks = _checks(definition, checks_model or ChecksFileModel(), checks_path, problems)
    if problems:
        raise SkillPackageError(f"skill package {root} is invalid ({len(problems)} problem(s))", problems)
    assert definition is not None  # no problems means the definition validated
    return SkillPackage(
        root=root,
        skill_md=skill_md,
        definition=definition,
        guardrails=guardrails,
        checks=checks,
        checks_file=checks_name,
        eval_manifest=raw_eval,
        scripts=scripts,
        documents={"definition": raw_skill, "guardrails": raw_guardrails, "evals": raw_checks},
    )


# --- files --------------------------------------------------------------------------------------------------


def _read_skill_md(root: Path, read: _Reader, problems: list[str]) -> str:
    path = root / "SKILL.md"
    try:
        data = read("SKILL.md")
        if data is None:
            problems.append(f"{path}: missing; every skill package has a SKILL.md (what the agent reads)")
            return ""
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(f"{path}: cannot be read ({exc}); it must be UTF-8 text")
        return ""


def _document(root: Path, rel: str, read: _Reader, problems: list[str], *, required: bool) -> Any:
    path = root / rel
    try:
        data = read(rel)
    except OSError as exc:
        problems.append(f"{path}: cannot be read ({exc}); fix the file's permissions or encoding (UTF-8)")
        return None
    if data is None:
        if required:
            problems.append(f"{path}: missing; an engine-enabled package defines its workflow in comet/skill.yaml")
        return None
    return _parse_yaml(path, data, problems)


def _checks_document(root: Path, read: _Reader, problems: list[str]) -> tuple[str | None, Any]:
    control = root / "comet"
    found: dict[str, bytes | None] = {}
    for name in ("checks.yaml", "evals.yaml"):
        try:
            data = read(f"comet/{name}")
        except OSError as exc:
            problems.append(f"{control / name}: cannot be read ({exc}); fix the file's permissions or encoding (UTF-8)")
            found[name] = None
            continue
        if data is not None:
            found[name] = data
    if len(found) == 2:
        problems.append(
            f"{control}: both checks.yaml and evals.yaml are present; they are the same runtime checks "
            "under two names: keep one and delete the other"
        )
        return None, None
    if not found:
        return None, None
    name, data = next(iter(found.items()))
    return name, (None if data is None else _parse_yaml(control / name, data, problems))


def _validate(model: type[_M], data: Any, path: Path, problems: list[str]) -> _M | None:
    if data is None:
        return None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems.extend(_pydantic_problems(exc, path, data))
        return None


def _pydantic_problems(exc: ValidationError, path: Path, data: Any) -> list[str]:
    out = []
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        # Union members add their type name to the location (tools[0].ToolModel.name): drop it.
        loc = tuple(p for p in loc if p not in _UNION_TAGS)
        key = _dotted(loc, data)
        kind = err["type"]
        if kind == "extra_forbidden":
            message = "unknown field; check its spelling against the skill package's documented field names"
        elif kind == "missing":
            message = "required field is missing"
        else:
            message = str(err["msg"]).replace("Input should be", "expected").replace("valid tuple", "list")
            if key.endswith("metadata.version") and isinstance(err.get("input"), (int, float)):
                message += '; quote it: version: "1"'
            elif "input" in err and kind != "missing":
                message += f" (got {err['input']!r})"
        out.append(f"{path}: {key}: {message}")
    return out


def _dotted(loc: tuple[Any, ...], data: Any) -> str:
    """``orchestration.steps[2](build).action.ref``: list indexes plus the step id when there is one."""
    out, node = "", data
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            node = node[part] if isinstance(node, list) and part < len(node) else None
            if isinstance(node, dict) and isinstance(node.get("id"), str):
                out += f"({node['id']})"
        else:
            out += f".{part}" if out else str(part)
            node = node.get(part) if isinstance(node, dict) else None
    return out


# --- cross-references ---------------------------------------------------------------------------------------


def _tool(tool: str | ToolModel) -> ToolModel:
    return ToolModel(name=tool) if isinstance(tool, str) else tool


def _check_definition(definition: SkillModel, path: Path, problems: list[str]) -> None:
    orch = definition.orchestration
    declared = {
        "skills": set(definition.skills),
        "agents": set(definition.agents),
        "tools": {_tool(t).name for t in definition.tools},
    }
    for kind, names in (("skills", definition.skills), ("agents", definition.agents)):
        for name in sorted({n for n in names if names.count(n) > 1}):
            problems.append(f"{path}: {kind}: {name!r} is declared twice; declare it once")
    tool_names = [_tool(t).name for t in definition.tools]
    for name in sorted({n for n in tool_names if tool_names.count(n) > 1}):
        problems.append(f"{path}: tools: {name!r} is declared twice; declare it once")

    if orch.mode == "adaptive":
        for key in ("entry", "steps"):
            if getattr(orch, key) is not None:
                problems.append(
                    f"{path}: orchestration.{key}: not allowed in adaptive mode (the agent proposes actions); "
                    "remove it, or use mode: deterministic"
                )
        return
    steps = orch.steps or ()
    if not steps:
        problems.append(f"{path}: orchestration.steps: deterministic mode needs at least one step")
        return
    ids = [s.id for s in steps]
    for dup in sorted({i for i in ids if ids.count(i) > 1}):
        problems.append(f"{path}: orchestration.steps: step id {dup!r} is used twice; step ids are unique")
    known = set(ids)
    if orch.entry is None:
        problems.append(f"{path}: orchestration.entry: required in deterministic mode; name the first step")
    elif orch.entry not in known:
        problems.append(
            f"{path}: orchestration.entry: {orch.entry!r} is not a step id; known: {', '.join(sorted(known))}"
        )
    for index, step in enumerate(steps):
        where = f"{path}: orchestration.steps[{index}]({step.id})"
        action = step.action
        if step.next is not None and step.next not in known:
            problems.append(f"{where}.next: {step.next!r} is not a step id; known: {', '.join(sorted(known))}")
        ref_kind = _REF_KINDS.get(action.type)
        if ref_kind is not None:
            if action.ref is None:
                problems.append(f"{where}.action.ref: required for {action.type}; name one of the declared {ref_kind}")
            elif action.ref not in declared[ref_kind]:
                problems.append(
                    f"{where}.action.ref: {action.ref!r} is not declared; add it to {ref_kind}: in skill.yaml"
                )
        if action.type == "ask_user" and action.question is None:
            problems.append(f"{where}.action.question: ask_user needs a question to show the user")
        if action.type != "ask_user" and action.options is not None:
            problems.append(f"{where}.action.options: only ask_user steps offer options; remove it")
        if action.options is not None and len(set(action.options)) != len(action.options):
            problems.append(f"{where}.action.options: an option appears twice; options are unique")
    if orch.entry in known and len(set(ids)) == len(ids):
        _check_graph(steps, orch.entry, path, problems)


def _check_graph(steps: tuple[StepModel, ...], entry: str, path: Path, problems: list[str]) -> None:
    """Every step is reachable from entry, and every step reaches a terminal step (``next`` empty)."""
    by_id = {s.id: s for s in steps}
    reachable, current = [], by_id.get(entry)
    while current is not None and current.id not in reachable:
        reachable.append(current.id)
        current = by_id.get(current.next) if current.next else None
    if current is not None:
        cycle = reachable[reachable.index(current.id) :]
        problems.append(
            f"{path}: orchestration.steps: the steps {' -> '.join([*cycle, cycle[0]])} form a loop with no "
            "terminal step, so the run could never complete; end the chain with a step whose next is empty"
        )
    for step in steps:
        if step.id not in reachable and current is None:
            problems.append(
                f"{path}: orchestration.steps: step {step.id!r} is unreachable from entry {entry!r}; "
                "point a next: at it or remove it"
            )


def _check_frontmatter(root: Path, skill_md: str, name: str, problems: list[str]) -> None:
    match = _FRONTMATTER.match(skill_md)
    if not match:
        return
    try:
        front = _load_yaml(match.group(1))
    except yaml.YAMLError:
        problems.append(f"{root / 'SKILL.md'}: front matter is not valid YAML")
        return
    declared = front.get("name") if isinstance(front, dict) else None
    if isinstance(declared, str) and declared != name:
        problems.append(
            f"{root / 'SKILL.md'}: front matter name {declared!r} differs from comet/skill.yaml metadata.name "
            f"{name!r}; make them the same"
        )


def _scripts(root: Path, read: _Reader, definition: SkillModel, problems: list[str]) -> tuple[ScriptSource, ...]:
    found = []
    for index, tool in enumerate(_tool(t) for t in definition.tools):
        if tool.script is None:
            continue
        where = f"{root / 'comet' / 'skill.yaml'}: tools[{index}]({tool.name}).script"
        rel = PurePosixPath(tool.script.replace("\\", "/"))
        if (
            rel.is_absolute()
            or ".." in rel.parts
            or tool.script.startswith("~")
            or re.match(r"^[A-Za-z]:", tool.script)
        ):
            problems.append(f"{where}: {tool.script!r} leaves the package; use a path inside the package folder")
            continue
        try:
            data = read(rel.as_posix())
        except OSError as exc:
            problems.append(f"{where}: {tool.script!r} cannot be read ({exc})")
            continue
        if data is None:
            problems.append(f"{where}: {tool.script!r} does not exist in the package")
            continue
        found.append(ScriptSource(rel.as_posix(), hashlib.sha256(data).hexdigest()))
    return tuple(sorted(found, key=lambda s: s.path))


def _guardrails(
    definition: SkillModel, model: GuardrailsModel | None, path: Path, problems: list[str]
) -> PackageGuardrails:
    skills = tuple(definition.skills)
    agents = tuple(definition.agents)
    tools = tuple(_tool(t).name for t in definition.tools)
    confirm = tuple(t.name for t in (_tool(t) for t in definition.tools) if t.requires_confirmation)
    if model is None:
        return PackageGuardrails(skills, agents, tools, confirmation_required_for=confirm)
    declared = {
        "allowedSkills": skills,
        "allowedAgents": agents,
        "allowedTools": tools,
        "confirmationRequiredFor": tools,
    }
    chosen = {
        "allowedSkills": model.allowed_skills,
        "allowedAgents": model.allowed_agents,
        "allowedTools": model.allowed_tools,
        "confirmationRequiredFor": model.confirmation_required_for,
    }
    for key, names in chosen.items():
        kind = {"allowedSkills": "skills", "allowedAgents": "agents"}.get(key, "tools")
        for name in names or ():
            if name not in declared[key]:
                problems.append(
                    f"{path}: {key}: {name!r} is not declared in skill.yaml {kind}:; an allow list can only "
                    "name declared items: declare it or remove it"
                )
    # A tool marked requiresConfirmation in skill.yaml keeps needing it: guardrails may add, never remove.
    confirmation = tuple(dict.fromkeys([*confirm, *(model.confirmation_required_for or ())]))
    return PackageGuardrails(
        allowed_skills=skills if model.allowed_skills is None else tuple(model.allowed_skills),
        allowed_agents=agents if model.allowed_agents is None else tuple(model.allowed_agents),
        allowed_tools=tools if model.allowed_tools is None else tuple(model.allowed_tools),
        max_iterations=model.max_iterations or DEFAULT_MAX_ITERATIONS,
        max_retries_per_action=(
            DEFAULT_MAX_RETRIES if model.max_retries_per_action is None else model.max_retries_per_action
        ),
        confirmation_required_for=confirmation,
    )


def _checks(
    definition: SkillModel, model: ChecksFileModel, path: Path, problems: list[str]
) -> tuple[RuntimeCheck, ...]:
    steps = {s.id for s in definition.orchestration.steps or ()}
    checks = []
    ids = [c.id for c in model.runtime]
    for dup in sorted({i for i in ids if ids.count(i) > 1}):
        problems.append(f"{path}: runtime: check id {dup!r} is used twice; check ids are unique")
    for index, c in enumerate(model.runtime):
        where = f"{path}: runtime[{index}]({c.id})"
        if c.type == "artifact_exists" and c.artifact is None:
            problems.append(f"{where}.artifact: required for artifact_exists; name the artifact to look for")
        if c.type == "state_equals" and c.field is None:
            problems.append(f"{where}.field: required for state_equals; name a run-state field, e.g. status")
        if c.step is not None and c.scope != "step":
            problems.append(f"{where}.step: only step-scope checks name a step; remove it or use scope: step")
        elif c.step is not None and c.step not in steps:
            problems.append(f"{where}.step: {c.step!r} is not a step id of skill.yaml")
        checks.append(RuntimeCheck(c.id, c.scope, c.type, c.artifact, c.field, c.equals, c.step, c.description))
    for index, step in enumerate(definition.orchestration.steps or ()):
        for check_id in step.completion_evals:
            if check_id not in ids:
                problems.append(
                    f"{path.parent / 'skill.yaml'}: orchestration.steps[{index}]({step.id}).completionEvals: "
                    f"{check_id!r} is not a check id of {path.name}"
                )
    return tuple(checks)

"""Reading and checking a skill's evaluation manifest (``comet/eval.yaml``) into its typed form
(scaffold.skill_eval.manifest).

Loading is two passes over the whole document, and every problem of both is reported at once (a
ManifestError carrying Problems that name the file, the path such as
``evaluation.tasks[0].expect.json[1].path`` and what is allowed):

1. the JSON Schema shipped beside this module (``eval.schema.json``, draft 2020-12), checked with
   ``jsonschema``: shapes, types, ranges, unknown keys;
2. the rules a schema cannot say: camelCase and snake_case spellings of one key set at once, paths that
   must stay inside the skill package (no absolute path, no ``..``, no symlink leading out), source tasks
   that must be valid task folders, task names that must not collide with each other or with built-in
   tasks, at least one deterministic expect per inline task, JSON paths in our dialect, gate expressions
   in the ``--gate`` grammar, http(s) base URLs.

Paths: ``skill.source`` is relative to the manifest's folder (the default is the package root: the folder
holding ``comet/``); task ``source`` and ``workspace`` are relative to the skill root; ``reporting.config``
is relative to the manifest's folder and must stay inside the skill root too.
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Collection, Mapping, Sequence
from functools import cache
from importlib import resources
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import yaml

from scaffold.catalog.tasks import load_task
from scaffold.catalog.treatments import CONTROL, SKILL_NAME_RULE, skill_name_problem
from scaffold.errors import GateError, ManifestError, Problem, TaskError
from scaffold.python.validation.core import json_path_steps
from scaffold.reports.gates import parse_gate
from scaffold.skill_eval.manifest import (
    DEFAULT_COMMAND_TIMEOUT,
    CommandExpect,
    Endpoint,
    EvalSkill,
    Expect,
    InlineTask,
    JsonExpect,
    Manifest,
    QualityGates,
    Reporting,
    SourceTask,
    package_root_of,
)
from scaffold.util.schema import load_yaml, yaml_problem

__all__ = ["load_manifest", "manifest_schema", "parse_manifest"]

# camelCase -> snake_case of every key with two spellings; each is read from either, both is an error.
_ALIASES = {
    "draftHash": "draft_hash",
    "generationHash": "generation_hash",
    "generationFile": "generation_file",
    "recommendedTasks": "recommended_tasks",
    "baselineTreatments": "baseline_treatments",
    "qualityGates": "quality_gates",
    "requiredOutputSchemas": "required_output_schemas",
    "expectedEvidence": "expected_evidence",
    "requiredSkills": "required_skills",
    "expectedArtifacts": "expected_artifacts",
    "generatedNodeSkills": "generated_node_skills",
    "routeConformance": "route_conformance",
    "expectedNodeOrder": "expected_node_order",
    "minWeightedScore": "min_weighted_score",
    "minPassAt1": "min_pass_at_1",
    "maxInstabilityGap": "max_instability_gap",
    "maxTurns": "max_turns",
    "simulatorPrompt": "simulator_prompt",
    "freshResumeMarker": "fresh_resume_marker",
    "decisionPatterns": "decision_patterns",
    "decisionReply": "decision_reply",
    "decisionReplies": "decision_replies",
    "continuePrompt": "continue_prompt",
    "baseUrl": "base_url",
}
_SOURCE_TASK_KEYS = frozenset({"name", "source"})
_TASK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_DRAFT_HASH = re.compile(r"^[0-9a-f]{64}$")
_DRAFT_PLACEHOLDER = "<current-bundle-hash>"


def load_manifest(path: Path, *, builtin_tasks: Collection[str]) -> Manifest:
    """Read and validate the manifest at *path*; ManifestError with every problem found."""
    path = Path(os.path.normpath(path.expanduser().absolute()))
    if path.is_dir():
        raise ManifestError([Problem(path, "is a folder; the manifest must be a YAML file (rename or remove it)")])
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ManifestError([Problem(path, "no such file: pass a comet/eval.yaml or a skill folder")]) from None
    except UnicodeDecodeError as exc:
        raise ManifestError([yaml_problem(path, exc)]) from None
    except OSError as exc:
        raise ManifestError([Problem(path, f"cannot be read: {exc.strerror}")]) from None
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        raise ManifestError([yaml_problem(path, exc)]) from None
    return parse_manifest(data, file=path, package_root=package_root_of(path), builtin_tasks=builtin_tasks)


@cache
def manifest_schema() -> Mapping[str, Any]:
    """The JSON Schema of the manifest (draft 2020-12), shipped as package data."""
    text = resources.files("scaffold.skill_eval").joinpath("eval.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def parse_manifest(data: object, *, file: Path, package_root: Path, builtin_tasks: Collection[str]) -> Manifest:
    """Validate *data* (the parsed YAML of *file*) and build the Manifest; ManifestError with every problem.

    *package_root* is the skill package the manifest belongs to (the default ``skill.source``);
    *builtin_tasks* the names of the built-in tasks (recommendedTasks must name one, the manifest's own
    tasks must not).
    """
    file = Path(file)
    if not isinstance(data, dict):
        raise ManifestError([Problem(file, "the manifest must be a mapping (apiVersion, kind, metadata, skill, ...)")])
    checker = _Checker(file, Path(os.path.normpath(package_root.absolute())), frozenset(builtin_tasks))
    manifest = checker.check(data)
    if checker.problems or manifest is None:
        # One problem can be found twice (jsonschema reports a missing key once per rule naming it).
        unique = {(p.key, p.message, repr(p.value)): p for p in checker.problems}
        raise ManifestError(sorted(unique.values(), key=_problem_order))
    return manifest


def _problem_order(problem: Problem) -> tuple[str, str]:
    return (problem.key, problem.message)


# --- schema problems -------------------------------------------------------------------------------------


def _path(parts: Sequence[object]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _join(base: str, name: str) -> str:
    return f"{base}.{name}" if base else name


def _schema_problems(file: Path, data: object) -> list[Problem]:
    validator = jsonschema.Draft202012Validator(manifest_schema())
    problems: list[Problem] = []
    for error in validator.iter_errors(data):
        problems.extend(_translate(file, error))
    return problems


_PATTERN_MEANING = {
    "^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$": (
        "must be a valid task name: a letter or digit, then letters, digits, '.', '_' or '-' (at most 100)"
    ),
    "^\\$": "must start with '$' (e.g. $.items[0].title)",
    "^[a-z][a-z0-9-]{1,31}$": "must be an agent id: a lowercase letter, then 1-31 lowercase letters, digits or '-'",
    "\\S": "must not be empty",
}


def _translate(file: Path, error: jsonschema.ValidationError) -> list[Problem]:
    key = _path(list(error.absolute_path))
    kind = error.validator
    instance = error.instance
    rule: Any = error.validator_value
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    if kind == "additionalProperties" and isinstance(instance, dict):
        allowed = sorted(schema.get("properties", {}))
        return [
            Problem(file, "unknown field; allowed: " + ", ".join(allowed), _join(key, str(extra)))
            for extra in sorted(set(instance) - set(allowed), key=str)
        ]
    if kind == "required" and isinstance(instance, dict):
        return [Problem(file, "required field is missing", _join(key, name)) for name in rule if name not in instance]
    if kind == "type":
        wanted = str(rule)
        noun = {"object": "a mapping", "array": "a list", "string": "a string", "integer": "an integer"}
        return [Problem(file, f"must be {noun.get(wanted, 'a ' + str(wanted))}", key, instance)]
    if kind == "const":
        return [Problem(file, f"must be {rule}", key, instance)]
    if kind == "enum":
        return [Problem(file, "must be one of: " + ", ".join(map(str, rule)), key, instance)]
    if kind == "pattern":
        meaning = _PATTERN_MEANING.get(str(rule), f"must match {rule}")
        return [Problem(file, meaning, key, instance)]
    if kind == "minLength":
        return [Problem(file, "must not be empty", key)]
    if kind == "minItems":
        return [Problem(file, "must list at least one string", key)]
    if kind in ("minimum", "maximum"):
        low, high = schema.get("minimum"), schema.get("maximum")
        if key.endswith(".timeout"):
            return [Problem(file, "must be 1..3600 (seconds)", key, instance)]
        if low == 0 and high == 1:
            return [Problem(file, "must be a number between 0 and 1", key, instance)]
        return [Problem(file, f"must be at least {low}", key, instance)]
    return [Problem(file, error.message, key)]


# --- the rules beyond the schema ---------------------------------------------------------------------------


def _get(obj: Mapping[str, Any], camel: str) -> Any:
    """*camel* or its snake_case spelling (the conflict itself is reported by _alias_problems)."""
    snake = _ALIASES.get(camel)
    if camel in obj:
        return obj[camel]
    return obj.get(snake) if snake else None


def _alias_problems(file: Path, node: object, where: str) -> list[Problem]:
    """Both spellings of one key, anywhere in the document."""
    problems: list[Problem] = []
    if isinstance(node, dict):
        for camel, snake in _ALIASES.items():
            if camel in node and snake in node:
                problems.append(Problem(file, f"{camel} and {snake} cannot both be set; keep one", _join(where, camel)))
        for name, value in node.items():
            problems.extend(_alias_problems(file, value, _join(where, str(name))))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            problems.extend(_alias_problems(file, value, f"{where}[{i}]"))
    return problems


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _strings(value: object) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list | tuple) else ()


def _workspace_path_problem(value: str) -> str | None:
    """Why *value* is not a path inside the task workspace (None: it is)."""
    pure = PurePosixPath(value)
    if pure.is_absolute() or value.startswith("~") or re.match(r"^[A-Za-z]:[\\/]", value):
        return "must stay within the task workspace: a relative path (not absolute)"
    if ".." in pure.parts or "\\" in value:
        return "must stay within the task workspace: a relative path without '..' or '\\'"
    if pure.parts in ((), (".",)):
        return "must name a file in the task workspace"
    return None


class _Checker:
    def __init__(self, file: Path, package_root: Path, builtin: frozenset[str]) -> None:
        self.file = file
        self.package_root = package_root
        self.builtin = builtin
        self.problems: list[Problem] = []

    def add(self, key: str, message: str, value: object = ...) -> None:
        if value is ...:
            self.problems.append(Problem(self.file, message, key))
        else:
            self.problems.append(Problem(self.file, message, key, value))

    def check(self, data: Mapping[str, Any]) -> Manifest | None:
        self.problems.extend(_schema_problems(self.file, data))
        self.problems.extend(_alias_problems(self.file, data, ""))
        metadata = _mapping(data.get("metadata"))
        skill_data = _mapping(data.get("skill"))
        evaluation = _mapping(data.get("evaluation"))

        draft = _get(metadata, "draftHash")
        if isinstance(draft, str) and draft != _DRAFT_PLACEHOLDER and not _DRAFT_HASH.match(draft):
            self.add("metadata.draftHash", f"must be 64 lowercase hex characters (or {_DRAFT_PLACEHOLDER})", draft)

        skill = self._skill(skill_data)
        tasks = self._tasks(evaluation.get("tasks"), skill.root if skill else None)
        recommended = self._recommended(_get(evaluation, "recommendedTasks"), tasks)
        baselines = _strings(_get(evaluation, "baselineTreatments")) or (CONTROL,)
        for i, name in enumerate(_strings(_get(evaluation, "baselineTreatments"))):
            if not name.strip():
                self.add(f"evaluation.baselineTreatments[{i}]", "must name a treatment (e.g. CONTROL)")
        gates = self._quality_gates(_mapping(_get(evaluation, "qualityGates")))
        # An explicit requiredSkills: [] opts out of requiring the skill under test; absent (None) keeps it.
        declared = _get(evaluation, "requiredSkills")
        required = None if declared is None else _strings(declared)
        expected = _strings(_get(evaluation, "expectedArtifacts"))
        for i, artifact in enumerate(expected):
            if why := _workspace_path_problem(artifact):
                self.add(f"evaluation.expectedArtifacts[{i}]", why, artifact)
        interaction = self._interaction(data.get("interaction"))
        execution = self._endpoint("execution", _mapping(data.get("execution")))
        judge = self._endpoint("judge", _mapping(data.get("judge")))
        reporting = self._reporting(_mapping(data.get("reporting")), skill.root if skill else None)
        if self.problems or skill is None:
            return None
        name = metadata.get("name") or skill.name
        return Manifest(
            file=self.file,
            name=str(name),
            skill=skill,
            description=str(metadata.get("description") or ""),
            tasks=tasks,
            recommended_tasks=recommended,
            baseline_treatments=baselines,
            quality_gates=gates,
            required_skills=required,
            expected_artifacts=expected,
            interaction=interaction,
            execution=execution,
            judge=judge,
            reporting=reporting,
            generation_hash=_optional_str(_get(metadata, "generationHash")),
            generation_file=_optional_str(_get(metadata, "generationFile")),
        )

    # -- skill --

    def _skill(self, data: Mapping[str, Any]) -> EvalSkill | None:
        source = data.get("source")
        if isinstance(source, str) and source:
            # An absolute source is allowed here (generated manifests live outside the package and point
            # back at it); everything else in the manifest is relative to the skill root found here.
            root = Path(os.path.normpath(self.file.absolute().parent / Path(source).expanduser()))
            key = "skill.source"
        else:
            root, key = self.package_root, "skill"
        if not root.is_dir():
            self.add(key, "must be the skill folder (relative to the manifest's folder); no such folder", str(root))
            return None
        if not (root / "SKILL.md").is_file():
            self.add(key, f"must be a skill folder holding SKILL.md; {root} has none", str(root))
            return None
        given = data.get("name")
        name = given if isinstance(given, str) and given else root.name
        if skill_name_problem(name):
            # The name becomes the skill's folder in every workspace: checked here, before anything is written.
            if name == given:
                self.add("skill.name", f"{SKILL_NAME_RULE}: it names the skill's folder in the workspace", name)
            else:
                self.add(key, f"the skill's folder name {name!r} {SKILL_NAME_RULE}: set skill.name", str(root))
            return None
        profile = data.get("profile") if isinstance(data.get("profile"), str) and data.get("profile") else None
        return EvalSkill(str(name), root, profile)

    def _inside(self, root: Path, key: str, value: str, what: str) -> Path | None:
        """*value* (relative to *root*) as an absolute path inside the package, or None and a Problem."""
        pure = PurePosixPath(value)
        if pure.is_absolute() or Path(value).is_absolute() or value.startswith("~"):
            self.add(key, f"must stay within the skill package: a path relative to {root}, not absolute", value)
            return None
        if ".." in pure.parts:
            self.add(key, "must stay within the skill package: a relative path without '..'", value)
            return None
        path = Path(os.path.normpath(root / value))
        if not path.exists():
            self.add(key, f"does not exist: no {what} at {path}", value)
            return None
        if not path.resolve().is_relative_to(root.resolve()):
            self.add(key, f"contains a symlink outside the skill package ({path} -> {path.resolve()})", value)
            return None
        for inner in [path, *path.rglob("*")] if path.is_dir() else [path]:
            if inner.is_symlink() and not inner.resolve().is_relative_to(root.resolve()):
                self.add(key, f"contains a symlink outside the skill package: {inner} -> {inner.resolve()}", value)
                return None
        return path

    # -- tasks --

    def _tasks(self, raw: object, root: Path | None) -> tuple[InlineTask | SourceTask, ...]:
        if not isinstance(raw, list):
            return ()
        tasks: list[InlineTask | SourceTask] = []
        first_index: dict[str, int] = {}
        for i, item in enumerate(raw):
            if not isinstance(item, dict):
                continue  # the schema said it must be a mapping
            key = f"evaluation.tasks[{i}]"
            task = self._source_task(key, item, root) if "source" in item else self._inline_task(key, item, root)
            name = task.name if task is not None else item.get("name")
            if isinstance(name, str) and name:
                if name in first_index:
                    self.add(f"{key}.name", f"duplicates evaluation.tasks[{first_index[name]}].name", name)
                else:
                    first_index[name] = i
                if name in self.builtin:
                    self.add(f"{key}.name", "conflicts with the built-in task of that name; choose another name", name)
            if task is not None:
                tasks.append(task)
        return tuple(tasks)

    def _source_task(self, key: str, item: Mapping[str, Any], root: Path | None) -> SourceTask | None:
        extra = sorted(set(item) - _SOURCE_TASK_KEYS)
        if extra:
            self.add(
                key,
                "a source task has only 'source' and an optional 'name'; remove "
                + ", ".join(extra)
                + " (or drop 'source' to write an inline task)",
            )
        source = item.get("source")
        if not isinstance(source, str) or not source or root is None:
            return None
        folder = self._inside(root, f"{key}.source", source, "task folder")
        if folder is None:
            return None
        if not (folder / "task.toml").is_file() or not (folder / "instruction.md").is_file():
            self.add(f"{key}.source", "must point to a task folder holding task.toml and instruction.md", source)
            return None
        try:
            task = load_task(folder)
        except TaskError as exc:
            for problem in exc.problems:
                self.add(f"{key}.source", f"is not a valid task: {problem}", source)
            return None
        given = item.get("name")
        if isinstance(given, str) and given and given != task.name:
            self.add(
                f"{key}.name",
                f"must equal the task's own name {task.name!r} (its folder and [metadata] name), or be left out",
                given,
            )
        return SourceTask(task.name, folder)

    def _inline_task(self, key: str, item: Mapping[str, Any], root: Path | None) -> InlineTask | None:
        ok = True
        name, prompt = item.get("name"), item.get("prompt")
        if "name" not in item:
            self.add(f"{key}.name", "required field is missing: every inline task needs a name")
            ok = False
        if "prompt" not in item:
            self.add(f"{key}.prompt", "required field is missing: the instruction the agent is given")
            ok = False
        workspace: Path | None = None
        raw_workspace = item.get("workspace")
        if isinstance(raw_workspace, str) and raw_workspace and root is not None:
            workspace = self._inside(root, f"{key}.workspace", raw_workspace, "workspace folder")
            if workspace is not None and not workspace.is_dir():
                self.add(
                    f"{key}.workspace", "must be a folder (its files are copied into the workspace)", raw_workspace
                )
                workspace = None
            ok = ok and workspace is not None
        expect = self._expect(f"{key}.expect", item.get("expect"))
        rubric = _strings(item.get("rubric"))
        if expect is None or not (isinstance(name, str) and isinstance(prompt, str)) or not ok:
            return None
        return InlineTask(name, prompt, workspace, expect, rubric)

    def _expect(self, key: str, raw: object) -> Expect | None:
        if raw is None or (
            isinstance(raw, dict) and not any(raw.get(k) for k in ("files", "contains", "json", "commands"))
        ):
            self.add(
                key,
                "must contain at least one deterministic expect: files, contains, json or commands "
                "(a rubric alone is not enough)",
            )
            return None
        if not isinstance(raw, dict):
            return None  # the schema said it must be a mapping
        ok = True
        files = _strings(raw.get("files"))
        for i, path in enumerate(files):
            if why := _workspace_path_problem(path):
                self.add(f"{key}.files[{i}]", why, path)
                ok = False
        contains: dict[str, tuple[str, ...]] = {}
        for target, needles in _mapping(raw.get("contains")).items():
            if why := _workspace_path_problem(str(target)):
                self.add(f"{key}.contains.{target}", why, target)
                ok = False
            contains[str(target)] = _strings(needles)
        checks: list[JsonExpect] = []
        for i, entry in enumerate(raw.get("json") or []):
            if not isinstance(entry, dict):
                continue
            json_file, json_path = entry.get("file"), entry.get("path")
            if isinstance(json_file, str) and (why := _workspace_path_problem(json_file)):
                self.add(f"{key}.json[{i}].file", why, json_file)
                ok = False
            if isinstance(json_path, str) and json_path.startswith("$"):
                try:
                    json_path_steps(json_path)
                except ValueError as exc:
                    self.add(f"{key}.json[{i}].path", str(exc))
                    ok = False
            if isinstance(json_file, str) and isinstance(json_path, str) and "equals" in entry:
                checks.append(JsonExpect(json_file, json_path, _frozen(entry["equals"])))
        commands: list[CommandExpect] = []
        for entry in raw.get("commands") or []:
            if isinstance(entry, dict) and isinstance(entry.get("run"), str):
                timeout = entry.get("timeout", DEFAULT_COMMAND_TIMEOUT)
                commands.append(
                    CommandExpect(entry["run"], timeout if type(timeout) is int else DEFAULT_COMMAND_TIMEOUT)
                )
        if not ok:
            return None
        return Expect(files, MappingProxyType(contains), tuple(checks), tuple(commands))

    def _recommended(self, raw: object, tasks: Sequence[InlineTask | SourceTask]) -> tuple[str, ...]:
        names = _strings(raw)
        first: dict[str, int] = {}
        own = {task.name: i for i, task in enumerate(tasks)}
        for i, name in enumerate(names):
            key = f"evaluation.recommendedTasks[{i}]"
            if name in first:
                self.add(key, f"duplicates evaluation.recommendedTasks[{first[name]}]", name)
                continue
            first[name] = i
            if name in own:
                self.add(
                    f"evaluation.tasks[{own[name]}].name",
                    f"conflicts with evaluation.recommendedTasks[{i}]; a task is either written here or built in",
                    name,
                )
            elif name not in self.builtin:
                allowed = ", ".join(sorted(self.builtin)) or "none are installed"
                self.add(key, f"unknown built-in task; allowed: {allowed}", name)
        return tuple(first)

    def _quality_gates(self, raw: Mapping[str, Any]) -> QualityGates:
        def unit(camel: str) -> float | None:
            value = _get(raw, camel)
            return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

        gates = _strings(raw.get("gates"))
        for i, expression in enumerate(gates):
            try:
                parse_gate(expression)
            except GateError as exc:
                self.add(f"evaluation.qualityGates.gates[{i}]", str(exc).removeprefix("--gate "), expression)
        return QualityGates(unit("minWeightedScore"), unit("minPassAt1"), unit("maxInstabilityGap"), gates)

    def _interaction(self, raw: object) -> Mapping[str, object] | None:
        if not isinstance(raw, dict):
            return None
        # task.toml's [interaction] spells its keys in snake_case: store them so, ready to be written.
        out: dict[str, object] = {}
        for name, value in raw.items():
            snake = _ALIASES.get(str(name), str(name))
            out[snake] = tuple(value) if isinstance(value, list) else value
        for i, pattern in enumerate(_strings(out.get("decision_patterns"))):
            try:
                re.compile(pattern)
            except re.error as exc:
                self.add(f"interaction.decisionPatterns[{i}]", f"is not a valid regular expression: {exc}", pattern)
        return MappingProxyType(out)

    def _endpoint(self, where: str, raw: Mapping[str, Any]) -> Endpoint:
        url = _get(raw, "baseUrl")
        if isinstance(url, str):
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                # Never echo the value: a base URL may carry credentials.
                self.add(f"{where}.baseUrl", "must be a valid absolute http(s) URL (e.g. https://api.example.com)")
        return Endpoint(_optional_str(raw.get("agent")), _optional_str(raw.get("model")), _optional_str(url))

    def _reporting(self, raw: Mapping[str, Any], root: Path | None) -> Reporting:
        config = raw.get("config")
        path: Path | None = None
        if isinstance(config, str) and config and root is not None:
            base = self.file.absolute().parent
            candidate = Path(os.path.normpath(base / config))
            if Path(config).is_absolute() or not candidate.is_relative_to(root):
                self.add(
                    "reporting.config", f"must stay within the skill package {root} (relative to the manifest)", config
                )
            elif not candidate.is_file():
                self.add("reporting.config", f"does not exist: no report configuration at {candidate}", config)
            elif not candidate.resolve().is_relative_to(root.resolve()):
                self.add("reporting.config", "contains a symlink outside the skill package", config)
            else:
                path = candidate
        return Reporting(_optional_str(raw.get("suite")), path)


def _optional_str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _frozen(value: object) -> object:
    """A private copy of a JSON value: the manifest never shares mutable data with its caller's document,
    and the value stays plain JSON (the check script writes it with json.dumps)."""
    return copy.deepcopy(value)

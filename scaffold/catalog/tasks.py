"""Task folders: ``task.toml``, ``instruction.md``, ``environment/``, ``validation/``, ``solution/``.

Loading validates everything a trial will rely on, so a broken task fails at collection with a message
naming the file, the key, the value and what is allowed, instead of failing later inside a workspace.
Loading never stops at the first problem: ``comet tasks check`` shows them all at once.

Two formats load: ours (strict: an unknown key is a problem), which also takes the original Comet eval's
folders unchanged (a ``[template]`` section, ``test_scripts`` as one string, no ``solve.sh``), and Harbor's
(Terminal-Bench 2, SkillsBench), recognised by its layout and mapped onto :class:`TaskSpec` by
scaffold.catalog.harbor, whose keys we do not use are kept, never errors.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Annotated, Literal

import yaml
from pydantic import Field, ValidationError, field_validator

from scaffold.catalog.compose import Compose, compose_file, load_compose, variables
from scaffold.catalog.harbor import harbor_marker, map_harbor
from scaffold.errors import Problem, TaskError
from scaffold.util.schema import (
    Model,
    NonEmptyStr,
    PositiveNumber,
    Seconds,
    StrList,
    load_yaml,
    problems_from,
    yaml_problem,
)

__all__ = [
    "INDEX_FILE",
    "TASK_FILE",
    "HarborSettings",
    "Task",
    "TaskCatalog",
    "TaskFormat",
    "TaskSpec",
    "load_catalog",
    "load_task",
    "render_instruction",
]

TASK_FILE = "task.toml"
INDEX_FILE = "index.yaml"
TASK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_TEMPLATE_VAR = re.compile(r"\{([a-z_]+)\}")

PositiveInt = Annotated[int, Field(strict=True, gt=0)]
OutputName = Annotated[str, Field(strict=True, pattern=r"^[A-Za-z_][A-Za-z0-9_.-]{0,99}$")]


class Metadata(Model):
    name: NonEmptyStr
    description: Annotated[str, Field(strict=True)] = ""
    difficulty: Literal["easy", "medium", "hard"] = "medium"
    category: NonEmptyStr = "generic"
    default_treatments: StrList = ("CONTROL",)
    tags: StrList = ()


class Environment(Model):
    description: Annotated[str, Field(strict=True)] = ""
    dockerfile: NonEmptyStr = "environment/Dockerfile"
    timeout_sec: Seconds = 600.0
    # Container limits (docker backend); defaults as Harbor's.
    cpus: PositiveNumber = 1.0
    memory_mb: PositiveInt = 2048
    pids_limit: PositiveInt = 1024


class Validation(Model):
    test_scripts: StrList = ()
    target_artifacts: StrList = ()
    timeout: Seconds = 120.0

    @field_validator("test_scripts", mode="before")
    @classmethod
    def _one_script(cls, value: object) -> object:
        # The original Comet eval's task.toml may name its one script as a string.
        return (value,) if isinstance(value, str) else value


class Evaluation(Model):
    profile: NonEmptyStr | None = None
    expected_artifacts: StrList = ()
    required_skills: StrList = ()
    require_skill_invocation: Annotated[bool, Field(strict=True)] = False
    # With no required skill installed, DYNAMIC_SKILL's and TASK_SKILLS' own skills are expected
    # (scaffold.rubrics.expected); false: skill_invocation is N/A for them (eval.yaml's requiredSkills: []).
    expect_skills_under_test: Annotated[bool, Field(strict=True)] = True
    rubric_criteria: StrList = ()
    # Named values the task hands its validators (``_test_context.json``) and its profile's rubric, e.g.
    # ``skill_package_path = "generated-skill"`` for authoring-skill. Strings only, like every other value
    # a trial passes around: a validator reads them as written, and a validator's own ``outputs`` in
    # ``_test_results.json`` (also strings) can replace them without a type to reconcile.
    outputs: dict[OutputName, NonEmptyStr] = Field(default_factory=dict)


class Interaction(Model):
    mode: Literal["none", "auto_user"] = "none"
    max_turns: PositiveInt = 12
    simulator_prompt: Annotated[str, Field(strict=True)] | None = None
    decision_patterns: StrList = ()
    decision_reply: Annotated[str, Field(strict=True)] | None = None
    decision_replies: StrList = ()
    continue_prompt: Annotated[str, Field(strict=True)] = "Please continue until the task is complete."
    fresh_resume_marker: Annotated[str, Field(strict=True)] | None = None


class TaskSpec(Model):
    """The contents of ``task.toml``."""

    metadata: Metadata
    environment: Environment = Environment()
    validation: Validation = Validation()
    evaluation: Evaluation = Evaluation()
    interaction: Interaction = Interaction()


class IndexEntry(Model):
    name: NonEmptyStr
    category: NonEmptyStr = "generic"
    default_treatments: StrList = ("CONTROL",)
    description: Annotated[str, Field(strict=True)] = ""


class IndexFile(Model):
    tasks: tuple[IndexEntry, ...] = ()


TaskFormat = Literal["comet", "harbor"]
"""``comet``: this project's layout (also the original Comet eval's, which it accepts unchanged);
``harbor``: Harbor's (Terminal-Bench 2, SkillsBench), recognised by its layout and mapped onto TaskSpec."""


@dataclass(frozen=True, slots=True)
class HarborSettings:
    """What a Harbor-format ``task.toml`` says that :class:`TaskSpec` has no place for (HARBOR_FORMAT.md).

    The mapped keys (difficulty, timeouts, limits, required_skills) live in the task's ``spec``; these
    are the ones only the Harbor runtime reads. ``unused``: their keys we do not act on, kept as written
    (shown by ``comet tasks show``), never an error: Harbor's schema grows and is not ours to police."""

    verifier_env: tuple[tuple[str, str], ...] = ()
    solution_env: tuple[tuple[str, str], ...] = ()
    environment_env: tuple[tuple[str, str], ...] = ()
    allow_internet: bool = True
    docker_image: str | None = None
    build_timeout_sec: float | None = None
    distractor_skills: tuple[str, ...] = ()
    uv_shim: Literal["auto", "always", "never"] = "auto"
    """The local stand-in for verifiers that bootstrap ``uv`` from the internet (``[comet] uv_shim``)."""
    compose: Compose | None = None
    """The environment's compose file (scaffold.catalog.compose): the main service and its sidecars."""
    unused: Mapping[str, object] = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True, slots=True)
class Task:
    """A loaded, valid task. Paths are absolute."""

    name: str
    root: Path
    spec: TaskSpec
    format: TaskFormat = "comet"
    harbor: HarborSettings | None = None
    """Set exactly when ``format`` is ``harbor``."""
    without_skills: bool = False
    """The environment's own skills (``environment/skills``, the Dockerfile's ``COPY skills`` lines) are
    left out of the image: set by the trial runner for every treatment but the task's own skills."""
    warnings: tuple[Problem, ...] = ()
    """What loading noticed but accepted (an index.yaml entry that disagrees: task.toml wins)."""
    template: Mapping[str, object] = field(default_factory=dict, hash=False, compare=False)
    """The original Comet eval's ``[template]`` section, accepted and kept as written (no effect here)."""

    @property
    def tests_dir(self) -> Path:
        """Harbor's verifier folder (``tests/test.sh``), copied to ``/tests`` after the agent."""
        return self.root / "tests"

    @property
    def skills_dir(self) -> Path:
        """Harbor (SkillsBench): the skills shipped with the task's environment."""
        return self.environment_dir / "skills"

    @property
    def has_solution(self) -> bool:
        return (self.solution_dir / "solve.sh").is_file()

    @property
    def instruction_path(self) -> Path:
        return self.root / "instruction.md"

    @property
    def environment_dir(self) -> Path:
        return self.root / "environment"

    @property
    def validation_dir(self) -> Path:
        return self.root / "validation"

    @property
    def solution_dir(self) -> Path:
        return self.root / "solution"

    @property
    def data_dir(self) -> Path:
        return self.root / "data"


@dataclass(frozen=True)
class TaskCatalog:
    """Every task found in the task folders: the valid ones and, by name, the problems of the others.

    ``partial``: the broken tasks whose ``task.toml`` is valid, so what depends on it (treatments,
    profile) can be checked too and every problem of a task shows at once, not one per fix.
    """

    tasks: Mapping[str, Task]
    broken: Mapping[str, tuple[Problem, ...]]
    general: tuple[Problem, ...] = ()
    dirs: tuple[Path, ...] = field(default=())
    partial: Mapping[str, Task] = field(default_factory=dict)

    def names(self) -> list[str]:
        return sorted({*self.tasks, *self.broken})

    def problems(self) -> list[Problem]:
        out = list(self.general)
        for name in sorted(self.broken):
            out.extend(self.broken[name])
        return out


def render_instruction(text: str, variables: Mapping[str, str]) -> str:
    """Replace ``{name}`` for the known *variables* only; other braces (code, JSON) stay as written."""
    return _TEMPLATE_VAR.sub(lambda m: variables.get(m.group(1), m.group(0)), text)


def load_task(folder: Path, *, require_solution: bool = False) -> Task:
    """Load and validate one task folder; raise TaskError listing every problem found.

    *require_solution*: ``solution/solve.sh`` must exist (the project's own tasks: each passes with the
    oracle); for other tasks it is optional, and only the oracle refuses a task without one.
    """
    folder = folder.absolute()
    task, problems = _read_task(folder, require_solution=require_solution)
    if problems or task is None:
        raise TaskError(problems)
    return task


def _read_task(folder: Path, *, require_solution: bool) -> tuple[Task | None, list[Problem]]:
    """The task of *folder* (None when task.toml is missing or invalid) and every problem found.

    A task.toml that does not parse does not stop the checks of the folder's other files: each fix
    would otherwise reveal the next problem. Harbor's format is recognised by its layout (a task.toml
    marked as Harbor's and ``tests/test.sh``) and mapped onto :class:`TaskSpec` (scaffold.catalog.harbor).
    """
    toml_path = folder / TASK_FILE
    problems: list[Problem] = []
    raw: object = None
    if not toml_path.is_file():
        problems.append(Problem(toml_path, f"missing: every task folder needs a {TASK_FILE}"))
    else:
        try:
            with toml_path.open("rb") as handle:
                raw = tomllib.load(handle)
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            problems.append(Problem(toml_path, f"not valid TOML: {exc}"))
        except OSError as exc:
            problems.append(Problem(toml_path, f"cannot be read: {exc.strerror}"))

    marker = harbor_marker(raw) if isinstance(raw, dict) else None
    if isinstance(raw, dict) and marker is not None and (folder / "tests" / "test.sh").is_file():
        return _read_harbor(folder, toml_path, raw, require_solution=require_solution)

    spec: TaskSpec | None = None
    template: dict[str, object] = {}
    if isinstance(raw, dict):
        raw = dict(raw)
        # The original Comet eval's [template] section: accepted and kept as written, read by nothing here.
        kept = raw.pop("template", {})
        if isinstance(kept, dict):
            template = kept
        else:
            problems.append(Problem(toml_path, "expected a table", "[template]", kept))
        try:
            spec = TaskSpec.model_validate(raw)
        except ValidationError as exc:
            problems.extend(problems_from(exc, toml_path, TaskSpec, sections=True))
    if marker is not None:
        problems.append(
            Problem(
                folder / "tests" / "test.sh",
                f"missing: {TASK_FILE} looks like Harbor's format (it has {marker}), whose verifier is "
                "tests/test.sh; without it the folder is read as this project's format",
            )
        )
    problems.extend(_check_files(folder, toml_path, spec, require_solution=require_solution))
    task = Task(name=folder.name, root=folder, spec=spec, template=template) if spec is not None else None
    return task, problems


def _read_harbor(
    folder: Path, toml_path: Path, raw: dict[str, object], *, require_solution: bool
) -> tuple[Task | None, list[Problem]]:
    instruction_path = folder / "instruction.md"
    try:
        instruction = instruction_path.read_text(encoding="utf-8") if instruction_path.is_file() else None
    except (OSError, UnicodeDecodeError):
        instruction = None
    skills = folder / "environment" / "skills"
    has_skills = skills.is_dir() and any((p / "SKILL.md").is_file() for p in skills.iterdir())
    mapped = map_harbor(raw, name=folder.name, toml_path=toml_path, instruction=instruction, has_skills=has_skills)
    problems = list(mapped.problems)
    spec: TaskSpec | None = None
    try:
        spec = TaskSpec.model_validate(mapped.spec)
    except ValidationError as exc:
        # Values are checked while mapping; what is left names their key, not the one it became here.
        for problem in problems_from(exc, toml_path, TaskSpec, sections=True):
            key = problem.key
            for ours, theirs in mapped.origin.items():
                if key == ours or key.startswith(ours + "["):
                    key = theirs + key[len(ours) :]
                    break
            problems.append(dataclasses.replace(problem, key=key))
    if not TASK_NAME.match(folder.name):
        problems.append(Problem(folder, f"the folder name is the task's name, which {_NAME_RULE}", value=folder.name))
    problems.extend(_harbor_files(folder, require_solution=require_solution))
    problems.extend(_symlinks_outside(folder))
    if spec is None:
        return None, problems
    settings = dict(mapped.settings)
    compose, compose_problems, warnings = _read_compose(folder, spec, settings.get("environment_env", ()))
    problems.extend(compose_problems)
    harbor = HarborSettings(**settings, compose=compose, unused=mapped.unused)
    return Task(folder.name, folder, spec, format="harbor", harbor=harbor, warnings=tuple(warnings)), problems


def _read_compose(
    folder: Path, spec: TaskSpec, env: Sequence[tuple[str, str]]
) -> tuple[Compose | None, list[Problem], list[Problem]]:
    """The environment's compose file, when it has one, with its problems and warnings."""
    environment = folder / "environment"
    path = compose_file(environment)
    if path is None:
        return None, [], []
    limits = spec.environment
    names = variables(
        task=folder.name, environment_dir=environment, cpus=limits.cpus, memory_mb=limits.memory_mb, env=dict(env)
    )
    return load_compose(path, variables=names, has_dockerfile=(environment / "Dockerfile").is_file())


def _harbor_files(folder: Path, *, require_solution: bool) -> list[Problem]:
    problems: list[Problem] = []
    if not (folder / "instruction.md").is_file():
        problems.append(Problem(folder / "instruction.md", "missing: the agent's instruction goes here"))
    if not (folder / "environment" / "Dockerfile").is_file() and compose_file(folder / "environment") is None:
        problems.append(
            Problem(
                folder / "environment" / "Dockerfile",
                "missing: a Harbor task's image is built from it (or from its docker-compose.yaml)",
            )
        )
    if require_solution and not (folder / "solution" / "solve.sh").is_file():
        problems.append(
            Problem(folder / "solution" / "solve.sh", "missing: the reference solution the oracle agent runs")
        )
    return problems


_NAME_RULE = "must start with a letter or digit and use only letters, digits, '.', '_' and '-'"


def _check_files(folder: Path, toml_path: Path, spec: TaskSpec | None, *, require_solution: bool) -> list[Problem]:
    problems: list[Problem] = []
    if spec is not None:
        name = spec.metadata.name
        if name != folder.name:
            problems.append(Problem(toml_path, f"must equal the folder name {folder.name!r}", "[metadata] name", name))
        elif not TASK_NAME.match(name):
            problems.append(Problem(toml_path, _NAME_RULE, "[metadata] name", name))
    if not (folder / "instruction.md").is_file():
        problems.append(Problem(folder / "instruction.md", "missing: the agent's instruction goes here"))
    if require_solution and not (folder / "solution" / "solve.sh").is_file():
        problems.append(
            Problem(folder / "solution" / "solve.sh", "missing: the reference solution the oracle agent runs")
        )
    if not (folder / "environment").is_dir():
        problems.append(Problem(folder / "environment", "missing: the folder of the workspace's starting files"))
    links = _links(folder)
    problems.extend(_symlinks_outside(folder, links))
    if spec is None:
        return problems

    # Without a link in the folder, no path below it can resolve outside it: nothing to resolve then.
    root = folder.resolve() if links else None
    problems.extend(_relative_path(toml_path, "[environment] dockerfile", spec.environment.dockerfile, folder, root))
    for i, script in enumerate(spec.validation.test_scripts):
        problems.extend(
            _relative_path(toml_path, f"[validation] test_scripts[{i}]", script, folder / "validation", root)
        )
    for key, globs in (
        ("[validation] target_artifacts", spec.validation.target_artifacts),
        ("[evaluation] expected_artifacts", spec.evaluation.expected_artifacts),
    ):
        for i, pattern in enumerate(globs):
            problems.extend(_workspace_glob(toml_path, f"{key}[{i}]", pattern))
    for i, pattern in enumerate(spec.interaction.decision_patterns):
        try:
            re.compile(pattern)
        except re.error as exc:
            problems.append(
                Problem(
                    toml_path,
                    f"not a valid regular expression: {exc}",
                    f"[interaction] decision_patterns[{i}]",
                    pattern,
                )
            )
    if not spec.validation.test_scripts and not spec.validation.target_artifacts:
        problems.append(
            Problem(
                toml_path,
                "nothing is validated: give test_scripts or target_artifacts (a task that checks nothing "
                "always passes)",
                "[validation]",
            )
        )
    return problems


def _is_absolute(value: str) -> bool:
    return value.startswith(("/", "\\", "~")) or bool(re.match(r"^[A-Za-z]:", value))


def _relative_path(file: Path, key: str, value: str, base: Path, root: Path | None) -> list[Problem]:
    """A path inside the task folder, relative to *base*, that must exist and must not escape *root* (the
    task folder, resolved; None when the folder holds no link, so that nothing below it can escape)."""
    if _is_absolute(value):
        return [Problem(file, f"must be a path relative to {base.name}/, not absolute", key, value)]
    if ".." in PurePosixPath(value).parts:
        return [Problem(file, "must not contain '..': paths stay inside the task folder", key, value)]
    target = base / value
    try:
        is_file = target.is_file()
    except OSError as exc:  # e.g. a name too long for the file system
        return [Problem(file, f"not a usable path: {exc.strerror}", key, value)]
    if not is_file:
        return [Problem(file, f"no such file: {target}", key, value)]
    if root is not None and not target.resolve().is_relative_to(root):
        return [Problem(file, "resolves outside the task folder", key, value)]
    return []


def _workspace_glob(file: Path, key: str, pattern: str) -> list[Problem]:
    if not pattern.strip():
        return [Problem(file, "must not be empty", key, pattern)]
    if _is_absolute(pattern):
        return [Problem(file, "must be a glob relative to the workspace, not absolute", key, pattern)]
    if ".." in PurePosixPath(pattern).parts:
        return [Problem(file, "must not contain '..': artifacts stay inside the workspace", key, pattern)]
    return []


def _symlinks_outside(folder: Path, links: list[str] | None = None) -> list[Problem]:
    """A problem for each link below *folder* (:func:`_links`, when not given) that cannot be resolved or
    resolves outside it."""
    links = _links(folder) if links is None else links
    if not links:
        return []
    root = folder.resolve()
    problems: list[Problem] = []
    for link in links:
        path = Path(link)
        target = os.readlink(path)
        try:
            resolved = path.resolve()
        except (OSError, RuntimeError):  # a symlink loop
            problems.append(Problem(path, "symlink cannot be resolved (a loop?)", value=target))
            continue
        if not resolved.is_relative_to(root):
            problems.append(Problem(path, "symlink points outside the task folder", value=target))
    return problems


def _links(folder: Path | str) -> list[str]:
    """Every symbolic link below *folder*: each folder's in name order, folders top-down as os.walk visits
    them. One ``scandir`` a folder and no call a file: a catalog checks every file of every task."""
    try:
        with os.scandir(folder) as listing:
            entries = sorted(listing, key=lambda e: e.name)
    except OSError:  # unreadable or gone: nothing of it can be checked (os.walk skips it the same way)
        return []
    found = [e.path for e in entries if e.is_symlink()]
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            found.extend(_links(entry.path))
    return found


def load_catalog(dirs: Sequence[Path], *, require_solution: Collection[Path] = ()) -> TaskCatalog:
    """Load every task of every tasks folder and cross-check each folder's ``index.yaml``.

    Problems never raise here: they are returned by task name so the other tasks still run. The tasks of
    the folders in *require_solution* (the project's own: the session passes them) must ship
    ``solution/solve.sh``; elsewhere it is optional.

    ``index.yaml`` registers this project's tasks (a folder it does not list is a problem); Harbor-format
    tasks need no entry, as Harbor's corpora have no index: a folder of Harbor tasks alone needs no
    index.yaml, and in a mixed folder only its comet-format tasks must be listed. An entry whose fields
    disagree with the task's task.toml is a warning of the task (task.toml wins), not a problem: the
    original Comet eval's own example has different descriptions in the two files.
    """
    tasks: dict[str, Task] = {}
    broken: dict[str, list[Problem]] = {}
    general: list[Problem] = []
    partial: dict[str, Task] = {}
    seen_in: dict[str, Path] = {}
    strict = {Path(d).absolute().resolve() for d in require_solution}

    for tasks_dir in dirs:
        tasks_dir = tasks_dir.absolute()
        if not tasks_dir.is_dir():
            general.append(Problem(tasks_dir, "tasks folder does not exist"))
            continue
        index_path = tasks_dir / INDEX_FILE
        index, index_problems = _load_index(index_path)
        missing_index = not index_path.is_file()
        general.extend(p for p in index_problems if not missing_index)
        needs_index = False
        folders = sorted(p for p in tasks_dir.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
        for folder in folders:
            name = folder.name
            if name in seen_in:
                broken.setdefault(name, []).append(
                    Problem(folder, f"task {name!r} is defined twice: here and in {seen_in[name]}")
                )
                tasks.pop(name, None)
                partial.pop(name, None)
                continue
            seen_in[name] = folder
            task, problems = _read_task(folder.absolute(), require_solution=tasks_dir.resolve() in strict)
            harbor = task is not None and task.format == "harbor"
            needs_index = needs_index or not harbor
            if task is not None and index is not None:
                entry = index.get(name)
                if entry is None and not harbor:
                    problems.append(_unregistered(index_path, task))
                elif entry is not None:
                    task = dataclasses.replace(
                        task, warnings=(*task.warnings, *_index_mismatch(index_path, entry, task))
                    )
            if problems:
                broken.setdefault(name, []).extend(problems)
                if task is not None:
                    partial[name] = task
                continue
            if task is not None:
                tasks[name] = task
        if missing_index and needs_index:
            general.extend(index_problems)
        if index is not None:
            present = {f.name for f in folders}
            for name in sorted(set(index) - present):
                broken.setdefault(name, []).append(
                    Problem(
                        index_path,
                        f"registers task {name!r} but there is no folder {tasks_dir / name}",
                        "tasks",
                        name,
                    )
                )
    return TaskCatalog(
        tasks=dict(sorted(tasks.items())),
        broken={k: tuple(v) for k, v in sorted(broken.items())},
        general=tuple(general),
        dirs=tuple(d.absolute() for d in dirs),
        partial={k: v for k, v in sorted(partial.items()) if k in broken},
    )


def _load_index(path: Path) -> tuple[dict[str, IndexEntry] | None, list[Problem]]:
    if not path.is_file():
        return None, [
            Problem(path, "missing: each tasks folder registers its tasks in index.yaml (tasks: [{name: ...}])")
        ]
    try:
        raw = load_yaml(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        return None, [yaml_problem(path, exc)]
    try:
        parsed = IndexFile.model_validate(raw if raw is not None else {})
    except ValidationError as exc:
        return None, problems_from(exc, path, IndexFile, sections=False)
    entries: dict[str, IndexEntry] = {}
    problems: list[Problem] = []
    for i, entry in enumerate(parsed.tasks):
        if entry.name in entries:
            problems.append(Problem(path, "registered twice", f"tasks[{i}].name", entry.name))
        entries[entry.name] = entry
    return entries, problems


def _unregistered(index_path: Path, task: Task) -> Problem:
    return Problem(
        index_path,
        f"does not register the task folder {task.root}; add '- name: {task.name}' under tasks",
        "tasks",
    )


def _index_mismatch(index_path: Path, entry: IndexEntry, task: Task) -> list[Problem]:
    """Warnings for the fields of *entry* that disagree with the task's own: task.toml wins."""
    toml_path = task.root / TASK_FILE
    warnings = []
    meta = task.spec.metadata
    for key in ("category", "default_treatments", "description"):
        ours, theirs = getattr(entry, key), getattr(meta, key)
        if key in entry.model_fields_set and ours != theirs:
            warnings.append(
                Problem(
                    index_path,
                    f"differs from [metadata] {key} = {list(theirs) if isinstance(theirs, tuple) else theirs!r}"
                    f" in {toml_path}; task.toml wins (make them equal to silence this)",
                    f"tasks[{task.name}].{key}",
                    list(ours) if isinstance(ours, tuple) else ours,
                )
            )
    return warnings

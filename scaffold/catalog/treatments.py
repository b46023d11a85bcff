"""Treatments: named sets of skills (and optionally a CLAUDE.md) installed into a trial's workspace.

A treatments file is YAML mapping names to ``{description, skills: [...], claude_md?}``. A skill entry is
a folder path relative to the file (``- path/to/skill`` or ``- {name, path}``) or a named snapshot under
a base folder (``- {name, skill: 040-beta/comet, base: benchmarks, variant?}``); a base folder ``NAME``
is ``--skill-base NAME=DIR`` when given, else the folder ``NAME`` beside the treatments folder.

A treatment may also be of a kind (scaffold.catalog.treatment_kinds): ``skills_of: NAME`` (the skills
under test are another treatment's, e.g. DYNAMIC_SKILL), ``distractors: {count, pool?, seed?}``,
``nudge: true``, ``self_written: true``; its skills are then the skills under test.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypeVar

import yaml
from pydantic import Field, ValidationError

from scaffold.catalog.treatment_kinds import Distractors, kind_name
from scaffold.errors import Problem, SelectionError
from scaffold.util.schema import Model, NonEmptyStr, load_yaml, problems_from, yaml_problem

__all__ = [
    "CONTROL",
    "DYNAMIC_SKILL",
    "SELF_WRITTEN",
    "SKILL_NAME_RULE",
    "TASK_SKILLS",
    "TASK_SKILLS_PLACEHOLDER",
    "SkillRef",
    "Treatment",
    "TreatmentCatalog",
    "dynamic_treatment",
    "frontmatter_name",
    "invocation_name",
    "kind_treatments",
    "load_treatments",
    "parse_skill_bases",
    "skill_name_problem",
    "task_treatment",
]

CONTROL = "CONTROL"
DYNAMIC_SKILL = "DYNAMIC_SKILL"
TASK_SKILLS = "TASK_SKILLS"
"""The treatment of a task's own skills (a Harbor task's ``environment/skills``, as SkillsBench ships
them), resolved per task: the same name gives each task its own skills, and every other treatment of
such a task runs without them (scaffold.catalog.tasks.Task.without_skills)."""
SELF_WRITTEN = "SELF_WRITTEN"
"""The self-written kind's base name: the agent writes the skill under test itself, before the task."""
TREATMENT_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,99}$")
SKILL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class _SkillEntry(Model):
    name: NonEmptyStr | None = None
    path: NonEmptyStr | None = None
    skill: NonEmptyStr | None = None
    base: NonEmptyStr | None = None
    variant: NonEmptyStr | None = None


class _ClaudeMdFile(Model):
    file: NonEmptyStr


class _DistractorsEntry(Model):
    count: Annotated[int, Field(strict=True, ge=1, le=100)]
    pool: NonEmptyStr | None = None
    seed: Annotated[int, Field(strict=True, ge=0)] = 0


class _TreatmentEntry(Model):
    description: Annotated[str, Field(strict=True)] = ""
    # Entries are checked one by one in _build: a pydantic union would report every alternative's
    # error under internal names instead of the one the user meant.
    skills: tuple[Any, ...] = ()
    claude_md: Any = None
    skills_of: NonEmptyStr | None = None
    distractors: _DistractorsEntry | None = None
    nudge: Annotated[bool, Field(strict=True)] = False
    self_written: Annotated[bool, Field(strict=True)] = False


@dataclass(frozen=True, slots=True)
class SkillRef:
    """A skill folder (holding SKILL.md) and the name it is installed under."""

    name: str
    path: Path
    variant: str | None = None
    source: str | None = field(default=None, compare=False)
    """Where the skill came from, as reports name it: the folder given (``--skill-path``, a treatments
    file's ``path``), ``snapshot BASE/SKILL (...)``, or ``task skills (...)``; None: its folder. A label,
    not part of the skill's identity."""
    install_as: str | None = None
    """The folder it is installed under when that is not *name*: a task's own skill keeps its folder's
    name (where its image's ``COPY skills`` lines put it too), while *name* is its SKILL.md's ``name``."""

    @property
    def folder_name(self) -> str:
        """The folder of the agent's skills folder it is installed in."""
        return self.install_as or self.name


@dataclass(frozen=True, slots=True)
class Treatment:
    name: str
    description: str = ""
    skills: tuple[SkillRef, ...] = ()
    claude_md: str | None = None
    source: Path | None = None
    skills_of: str | None = None
    """The treatment whose skills come first (DYNAMIC_SKILL, TASK_SKILLS, a named one): resolved per trial
    (scaffold.trial.runner), when they are known."""
    distractors: Distractors | None = None
    drawn: tuple[SkillRef, ...] = ()
    """The distractors drawn for one task (the resolved treatment of a trial): installed, never expected."""
    nudge: bool = False
    self_written: bool = False

    @property
    def skill_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.skills)

    @property
    def installed(self) -> tuple[SkillRef, ...]:
        """Every skill put in the workspace: the skills under test, then the drawn distractors."""
        return (*self.skills, *self.drawn)

    @property
    def is_kind(self) -> bool:
        """Of a kind (distractors, nudge, self-written, built on another's skills): its skills are under test."""
        return bool(self.skills_of or self.distractors or self.nudge or self.self_written)

    @property
    def names_by_folder(self) -> dict[str, str]:
        """Folder -> name for the skills installed under a folder that is not their name (a task's own
        skill whose SKILL.md names it otherwise), leaving out a folder that is another skill's name."""
        names = {s.name for s in self.installed}
        return {s.folder_name: s.name for s in self.installed if s.folder_name != s.name and s.folder_name not in names}


_BUILTIN_CONTROL = Treatment(CONTROL, "No skills (baseline)")
TASK_SKILLS_PLACEHOLDER = Treatment(TASK_SKILLS, "The task's own skills (environment/skills)")
"""What the catalog holds under TASK_SKILLS: the skills themselves come from each task (task_treatment)."""


def task_treatment(skills_dir: Path) -> Treatment:
    """TASK_SKILLS for one task: every folder of *skills_dir* that holds a SKILL.md, named as the agent
    invokes it (:func:`invocation_name`) and installed under the folder's own name."""
    found = sorted(p for p in skills_dir.iterdir() if (p / "SKILL.md").is_file()) if skills_dir.is_dir() else []
    names = [invocation_name(p) for p in found]
    refs = []
    for folder, name in zip(found, names, strict=True):
        if names.count(name) > 1:  # two SKILL.md files claiming one name: their folders tell them apart
            name = folder.name
        refs.append(
            SkillRef(
                name,
                folder.absolute(),
                source=f"task skills ({folder.absolute()})",
                install_as=folder.name if name != folder.name else None,
            )
        )
    return Treatment(TASK_SKILLS, TASK_SKILLS_PLACEHOLDER.description, tuple(refs))


def invocation_name(folder: Path) -> str:
    """The name an agent invokes the skill in *folder* by: its SKILL.md's frontmatter ``name`` (Claude
    Code's ``Skill`` call gives it), else the folder's name: a SKILL.md without one, or with one outside
    :data:`SKILL_NAME_RULE` (a display name with spaces), goes by its folder's."""
    name = frontmatter_name(folder / "SKILL.md")
    return name if name is not None and skill_name_problem(name) is None else folder.name


def frontmatter_name(skill_file: Path) -> str | None:
    """The ``name`` of *skill_file*'s YAML frontmatter (between its first two ``---`` lines), None when it
    has none, or the file cannot be read or parsed: a skill is still a skill without one."""
    try:
        text = skill_file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        return None
    end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), None)
    if end is None:
        return None
    try:
        data = load_yaml("\n".join(lines[1:end]))
    except yaml.YAMLError:
        return None
    name = data.get("name") if isinstance(data, dict) else None
    return name.strip() if isinstance(name, str) and name.strip() else None


@dataclass(frozen=True)
class TreatmentCatalog:
    treatments: Mapping[str, Treatment]
    broken: Mapping[str, tuple[Problem, ...]]
    general: tuple[Problem, ...] = ()

    def names(self) -> list[str]:
        return sorted({*self.treatments, *self.broken})

    def problems(self) -> list[Problem]:
        out = list(self.general)
        for name in sorted(self.broken):
            out.extend(self.broken[name])
        return out

    def with_treatment(self, treatment: Treatment) -> TreatmentCatalog:
        return TreatmentCatalog({**self.treatments, treatment.name: treatment}, self.broken, self.general)

    def checked(self) -> TreatmentCatalog:
        """The catalog with every treatment whose ``skills_of`` names no treatment moved to the broken ones,
        once every treatment is in (DYNAMIC_SKILL is added after the files are read)."""
        known = {*self.treatments, TASK_SKILLS}
        missing = {n: t for n, t in self.treatments.items() if t.skills_of is not None and t.skills_of not in known}
        if not missing:
            return self
        broken = dict(self.broken)
        for name, treatment in missing.items():
            fix = f"{DYNAMIC_SKILL} exists with --skill-path" if treatment.skills_of == DYNAMIC_SKILL else "define it"
            problem = Problem(
                treatment.source or Path(name),
                f"skills_of names no treatment ({fix})",
                f"{name}.skills_of",
                treatment.skills_of,
            )
            broken[name] = (*broken.get(name, ()), problem)
        kept = {n: t for n, t in self.treatments.items() if n not in missing}
        return TreatmentCatalog(kept, dict(sorted(broken.items())), self.general)


def load_treatments(dirs: Sequence[Path], *, skill_bases: Mapping[str, Path] | None = None) -> TreatmentCatalog:
    """Load every ``*.yaml``/``*.yml`` under each folder (recursively, in sorted order).

    CONTROL always exists. A name defined in two files is a problem naming both files.
    """
    treatments: dict[str, Treatment] = {}
    broken: dict[str, list[Problem]] = {}
    general: list[Problem] = []
    defined_in: dict[str, Path] = {}
    for root in dirs:
        root = root.absolute()
        if not root.is_dir():
            general.append(Problem(root, "treatments folder does not exist"))
            continue
        files = sorted(p for p in root.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
        for file in files:
            entries, problems = _read_file(file)
            general.extend(problems)
            for name, raw in entries.items():
                if name in defined_in:
                    broken.setdefault(name, []).append(
                        Problem(file, f"treatment {name!r} is also defined in {defined_in[name]}", name)
                    )
                    treatments.pop(name, None)
                    continue
                defined_in[name] = file
                try:
                    treatments[name] = _build(name, raw, file, root, skill_bases or {})
                except _Invalid as exc:
                    broken.setdefault(name, []).extend(exc.problems)
    if CONTROL not in treatments and CONTROL not in broken:
        treatments[CONTROL] = _BUILTIN_CONTROL
    return TreatmentCatalog(
        dict(sorted(treatments.items())), {k: tuple(v) for k, v in sorted(broken.items())}, tuple(general)
    )


def parse_skill_bases(values: Sequence[str]) -> dict[str, Path]:
    """``--skill-base NAME=DIR`` values as a mapping; a value without ``=`` is a SelectionError."""
    bases: dict[str, Path] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise SelectionError(f"--skill-base={value!r}: expected NAME=DIR")
        bases[name] = Path(path).absolute()
    return bases


def dynamic_treatment(skill_path: Path, skill_name: str | None = None) -> Treatment:
    """The ``DYNAMIC_SKILL`` treatment of ``--skill-path`` (and ``--skill-name``)."""
    path = Path(os.path.normpath(skill_path.expanduser().absolute()))
    name = skill_name or path.name
    problem = _skill_problem(path, name)
    if problem:
        raise SelectionError(f"--skill-path {skill_path}: {problem}")
    return Treatment(DYNAMIC_SKILL, f"The skill at {path}", (SkillRef(name, path, source=str(path)),))


def kind_treatments(
    *, distractors: int = 0, pool: Path | None = None, nudge: bool = False, self_written: bool = False
) -> tuple[Treatment, ...]:
    """The treatments of ``--distractors N`` (with ``--skill-pool DIR``), ``--nudge`` and ``--self-written``:
    each adds one kind, named by what it is; the first two build on DYNAMIC_SKILL (``--skill-path``)."""
    if pool is not None:
        pool = Path(os.path.normpath(pool.expanduser().absolute()))
        if not pool.is_dir():
            raise SelectionError(f"--skill-pool {pool}: no such folder")
    if pool is not None and not distractors:
        raise SelectionError(f"--skill-pool {pool}: give --distractors N, the number of skills to draw from it")
    out = []
    if nudge:
        out.append(
            Treatment(
                kind_name(DYNAMIC_SKILL, nudge=True),
                "The skill under test, and a line in the instructions file saying skills are installed",
                skills_of=DYNAMIC_SKILL,
                nudge=True,
            )
        )
    if distractors:
        spec = Distractors(distractors, pool)
        out.append(
            Treatment(
                kind_name(DYNAMIC_SKILL, distractors=distractors),
                f"The skill under test among {spec.describe()}",
                skills_of=DYNAMIC_SKILL,
                distractors=spec,
            )
        )
    if self_written:
        out.append(Treatment(SELF_WRITTEN, "A skill the agent writes itself before the task", self_written=True))
    return tuple(out)


class _Invalid(Exception):
    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems


def _read_file(file: Path) -> tuple[dict[str, Any], list[Problem]]:
    try:
        raw = load_yaml(file.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        return {}, [yaml_problem(file, exc)]
    if raw is None:
        return {}, []
    if not isinstance(raw, dict):
        return {}, [Problem(file, "expected a mapping of treatment names to {description, skills}", value=raw)]
    entries: dict[str, Any] = {}
    problems = []
    for name, body in raw.items():
        if not isinstance(name, str) or not TREATMENT_NAME.match(name):
            problems.append(
                Problem(
                    file,
                    "treatment names start with a letter and use only letters, digits and '_'",
                    "",
                    name,
                )
            )
            continue
        entries[name] = body
    return entries, problems


def _build(name: str, raw: Any, file: Path, root: Path, bases: Mapping[str, Path]) -> Treatment:
    try:
        entry = _TreatmentEntry.model_validate(raw if raw is not None else {})
    except ValidationError as exc:
        raise _Invalid(
            [
                Problem(p.file, p.message, f"{name}.{p.key}" if p.key else name, p.value)
                for p in problems_from(exc, file, _TreatmentEntry, sections=False)
            ]
        ) from None
    problems: list[Problem] = []
    skills: list[SkillRef] = []
    for i, item in enumerate(entry.skills):
        key = f"{name}.skills[{i}]"
        parsed = _parse(_SkillEntry, item, file, key, problems, short="path")
        if parsed is None:
            continue
        ref, problem = _resolve_skill(parsed, file, root, bases)
        if problem:
            problems.append(Problem(file, problem, key, item))
        elif ref is not None:
            if ref.name in {s.name for s in skills}:
                problems.append(Problem(file, "skill installed twice under the same name", key, ref.name))
            skills.append(ref)
    if name == CONTROL and (skills or entry.skills_of or entry.distractors or entry.nudge or entry.self_written):
        problems.append(Problem(file, "CONTROL is the no-skill baseline and cannot hold skills", f"{name}.skills"))
    if entry.skills_of in (name, CONTROL):
        problems.append(Problem(file, "skills_of names a treatment with skills to build on", f"{name}.skills_of"))
    distractors = None
    if entry.distractors is not None:
        pool = None
        if entry.distractors.pool is not None:
            pool = Path(os.path.normpath(file.parent.absolute() / entry.distractors.pool))
            if not pool.is_dir():
                problems.append(Problem(file, f"skill pool {pool} does not exist", f"{name}.distractors.pool"))
        distractors = Distractors(entry.distractors.count, pool, entry.distractors.seed)
    claude_md: str | None = None
    if isinstance(entry.claude_md, str):
        claude_md = entry.claude_md
    elif entry.claude_md is not None:
        md_file = _parse(_ClaudeMdFile, entry.claude_md, file, f"{name}.claude_md", problems, short=None)
        if md_file is not None:
            md_path = file.parent / md_file.file
            try:
                claude_md = md_path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                problems.append(Problem(file, f"cannot read {md_path}: {exc}", f"{name}.claude_md.file"))
    if problems:
        raise _Invalid(problems)
    return Treatment(
        name,
        entry.description,
        tuple(skills),
        claude_md,
        file,
        skills_of=entry.skills_of,
        distractors=distractors,
        nudge=entry.nudge,
        self_written=entry.self_written,
    )


_M = TypeVar("_M", bound=Model)


def _parse(model: type[_M], raw: Any, file: Path, key: str, problems: list[Problem], *, short: str | None) -> _M | None:
    """*raw* as *model*; a non-empty string stands for ``{short: raw}`` when *short* is given."""
    if short and isinstance(raw, str) and raw:
        raw = {short: raw}
    if not isinstance(raw, dict):
        shapes = f"a string ({short}) or " if short else ""
        keys = ", ".join(model.model_fields)
        problems.append(Problem(file, f"expected {shapes}a mapping with keys {keys}", key, raw))
        return None
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        problems.extend(
            Problem(p.file, p.message, f"{key}.{p.key}", p.value)
            for p in problems_from(exc, file, model, sections=False)
        )
        return None


def _resolve_skill(item: _SkillEntry, file: Path, root: Path, bases: Mapping[str, Path]) -> tuple[SkillRef | None, str]:
    if item.path and item.skill:
        return None, "give either path (relative to this file) or skill with base, not both"
    if item.path:
        folder = Path(os.path.normpath(file.parent.absolute() / item.path))
        source = str(folder)
    elif item.skill:
        if not item.base:
            return None, "a skill snapshot needs a base folder name (base: NAME)"
        base = bases.get(item.base, root.parent / item.base)
        folder = Path(os.path.normpath(base.absolute() / item.skill))
        source = f"snapshot {item.base}/{item.skill} ({folder})"
    else:
        return None, "a skill entry needs path (a folder relative to this file) or skill with base"
    name = item.name or folder.name
    problem = _skill_problem(folder, name)
    return (None, problem) if problem else (SkillRef(name, folder, item.variant, source), "")


SKILL_NAME_RULE = "must start with a letter or digit and use only letters, digits, '.', '_' and '-' (at most 100)"
"""What SKILL_NAME allows, as a message says it."""


def skill_name_problem(name: str) -> str | None:
    """Why *name* cannot name an installed skill (it becomes a folder of the workspace), None when it can."""
    return None if SKILL_NAME.match(name) else f"skill name {name!r} {SKILL_NAME_RULE}"


def _skill_problem(folder: Path, name: str) -> str:
    if problem := skill_name_problem(name):
        return problem
    if not folder.is_dir():
        return f"skill folder {folder} does not exist"
    if not (folder / "SKILL.md").is_file():
        return f"skill folder {folder} has no SKILL.md"
    return ""

"""Property tests of the task loader: valid specs round-trip, junk only ever gives TaskError with located problems."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from scaffold.catalog.tasks import TASK_FILE, TaskSpec, load_task
from scaffold.errors import TaskError

FOLDER = "junk-task"
NewFolder = Callable[[], Path]
SECTIONS = ("metadata", "environment", "validation", "evaluation", "interaction")


def section_model(section: str) -> type[BaseModel]:
    annotation = TaskSpec.model_fields[section].annotation
    assert isinstance(annotation, type)
    assert issubclass(annotation, BaseModel)
    return annotation


KNOWN_KEYS = sorted({key for section in SECTIONS for key in section_model(section).model_fields})


# --- writing TOML by hand, so junk can be any value TOML can hold ------------------------------------


def toml_string(text: str) -> str:
    out = []
    for char in text:
        if char == '"':
            out.append('\\"')
        elif char == "\\":
            out.append("\\\\")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_string(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(value)


def to_toml(data: dict[str, Any]) -> str:
    """Top-level keys only, with inline tables: valid TOML for any nesting and any key."""
    return "".join(f"{toml_string(key)} = {toml_value(value)}\n" for key, value in data.items())


def to_toml_sections(data: dict[str, dict[str, Any]]) -> str:
    """The usual layout of a task.toml: one [section] table per section."""
    return "".join(
        f"[{section}]\n" + "".join(f"{key} = {toml_value(value)}\n" for key, value in body.items()) + "\n"
        for section, body in data.items()
    )


def write_task(
    folder: Path,
    toml: str | bytes,
    *,
    instruction: bool = True,
    solve: bool = True,
    environment: bool = True,
    files: tuple[str, ...] = (),
    symlink: str | None = None,
) -> None:
    folder.mkdir(parents=True)
    toml_path = folder / TASK_FILE
    if isinstance(toml, bytes):
        toml_path.write_bytes(toml)
    else:
        toml_path.write_text(toml, encoding="utf-8")
    if instruction:
        (folder / "instruction.md").write_text("Do it.\n")
    if solve:
        (folder / "solution").mkdir()
        (folder / "solution" / "solve.sh").write_text("true\n")
    if environment:
        (folder / "environment").mkdir()
        (folder / "environment" / "Dockerfile").write_text("FROM scratch\n")
        if symlink is not None:
            (folder / "environment" / "link").symlink_to(symlink)
    for rel in files:
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")


@pytest.fixture(scope="module")
def new_folder(tmp_path_factory: pytest.TempPathFactory) -> NewFolder:
    """A fresh, not yet existing task folder per call (hypothesis forbids function-scoped tmp_path)."""

    def make() -> Path:
        return tmp_path_factory.mktemp("prop") / FOLDER

    return make


# --- (a) valid values round-trip -----------------------------------------------------------------

TEXT = st.text(st.characters(codec="utf-8"), max_size=20)
NON_EMPTY = st.text(st.characters(codec="utf-8"), min_size=1, max_size=20)
SECONDS = st.one_of(
    st.floats(min_value=0.001, max_value=1e9, allow_nan=False, allow_infinity=False),
    st.integers(min_value=1, max_value=10**9),
)
POSITIVE_INT = st.integers(min_value=1, max_value=2**62)
SCRIPT = st.from_regex(r"\A(?:[a-z]{1,4}/)?[a-z][a-z0-9_]{0,8}\.(?:py|sh)\Z")
GLOB = st.from_regex(r"\A[A-Za-z0-9*?_][A-Za-z0-9*?_./-]{0,15}\Z").filter(
    lambda g: ".." not in PurePosixPath(g).parts and bool(g.strip())
)
DOCKERFILE = st.sampled_from(["environment/Dockerfile", "Dockerfile", "docker/Containerfile", "environment/x/D"])


def optional(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional=fields)


VALID_SPECS = st.fixed_dictionaries(
    {
        "metadata": optional(
            description=TEXT,
            difficulty=st.sampled_from(["easy", "medium", "hard"]),
            category=NON_EMPTY,
            default_treatments=st.lists(NON_EMPTY, max_size=3),
            tags=st.lists(TEXT, max_size=3),
        ),
        "environment": optional(
            description=TEXT,
            dockerfile=DOCKERFILE,
            timeout_sec=SECONDS,
            cpus=SECONDS,
            memory_mb=POSITIVE_INT,
            pids_limit=POSITIVE_INT,
        ),
        "validation": st.fixed_dictionaries(
            {
                "test_scripts": st.lists(SCRIPT, max_size=3, unique=True),
                "target_artifacts": st.lists(GLOB, max_size=3),
            },
            optional={"timeout": SECONDS},
        ).filter(lambda v: bool(v["test_scripts"] or v["target_artifacts"])),
        "evaluation": optional(
            profile=NON_EMPTY,
            expected_artifacts=st.lists(GLOB, max_size=3),
            required_skills=st.lists(TEXT, max_size=3),
            require_skill_invocation=st.booleans(),
            rubric_criteria=st.lists(TEXT, max_size=3),
        ),
        "interaction": optional(mode=st.sampled_from(["none", "auto_user"]), max_turns=POSITIVE_INT),
    }
)


def as_spec_value(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


@settings(max_examples=60, deadline=None)
@given(values=VALID_SPECS, name=st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,30}\Z"), sections=st.data())
def test_valid_task_toml_round_trips(
    new_folder: NewFolder, values: dict[str, Any], name: str, sections: st.DataObject
) -> None:
    # Sections holding only defaults may be left out of the file altogether.
    present = [s for s in SECTIONS if s in ("metadata", "validation") or values[s] or sections.draw(st.booleans())]
    values["metadata"]["name"] = name
    folder = new_folder().parent / name
    dockerfile = values["environment"].get("dockerfile", "environment/Dockerfile")
    scripts = tuple(f"validation/{s}" for s in values["validation"]["test_scripts"])
    write_task(folder, to_toml_sections({s: values[s] for s in present}), files=(dockerfile, *scripts))

    task = load_task(folder)

    assert task.name == name
    assert task.root == folder
    for section in SECTIONS:
        loaded = getattr(task.spec, section)
        model = section_model(section)
        for key, field in model.model_fields.items():
            if key in values[section]:
                expected = as_spec_value(values[section][key])
            else:
                expected = field.get_default(call_default_factory=True)
            assert getattr(loaded, key) == expected, f"[{section}] {key}"
            if key in values[section] and field.annotation is float:
                assert isinstance(getattr(loaded, key), float)


# --- (b) junk never escapes as anything but TaskError --------------------------------------------

SCALARS = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(),
    TEXT,
    st.text(max_size=300),
)
KEYS = st.one_of(st.sampled_from(KNOWN_KEYS), TEXT)
JUNK = st.recursive(
    SCALARS,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(KEYS, children, max_size=4)),
    max_leaves=10,
)
JUNK_SECTIONS = st.dictionaries(
    st.one_of(st.sampled_from(SECTIONS), TEXT),
    st.one_of(st.dictionaries(KEYS, JUNK, max_size=6), JUNK),
    max_size=6,
)
BASE: dict[str, dict[str, Any]] = {
    "metadata": {"name": FOLDER},
    "validation": {"test_scripts": ["check.py"]},
}


def merged(junk: dict[str, Any]) -> dict[str, Any]:
    """The valid base with junk merged in, so junk also reaches the checks that run on a valid spec."""
    out: dict[str, Any] = {k: dict(v) for k, v in BASE.items()}
    for section, body in junk.items():
        if isinstance(body, dict) and isinstance(out.get(section), dict):
            out[section].update(body)
        else:
            out[section] = body
    return out


LAYOUT = st.fixed_dictionaries(
    {
        "instruction": st.booleans(),
        "solve": st.booleans(),
        "environment": st.booleans(),
        "symlink": st.one_of(st.none(), st.sampled_from(["link", "../../..", "../instruction.md", "/"])),
    }
)


def assert_only_located_task_errors(folder: Path) -> None:
    try:
        task = load_task(folder)
    except TaskError as exc:
        assert exc.problems
        for problem in exc.problems:
            assert problem.file == folder / TASK_FILE or problem.file.is_relative_to(folder), str(problem)
            assert str(problem).startswith(str(problem.file))
        return
    assert task.name == FOLDER


@settings(max_examples=100, deadline=None)
@given(junk=JUNK_SECTIONS, keep_base=st.booleans(), layout=LAYOUT)
def test_junk_toml_only_raises_task_error(
    new_folder: NewFolder, junk: dict[str, Any], keep_base: bool, layout: dict[str, Any]
) -> None:
    folder = new_folder()
    data = merged(junk) if keep_base else junk
    write_task(folder, to_toml(data), files=("validation/check.py",), **layout)

    assert_only_located_task_errors(folder)


@settings(max_examples=75, deadline=None)
@given(raw=st.binary(max_size=300), prefix=st.sampled_from([b"", b'[metadata]\nname = "junk-task"\n']))
def test_junk_bytes_only_raise_task_error(new_folder: NewFolder, raw: bytes, prefix: bytes) -> None:
    folder = new_folder()
    write_task(folder, prefix + raw)

    assert_only_located_task_errors(folder)


# Short junk, and names longer than any file system allows (255 bytes).
PATHS = st.one_of(st.text(max_size=40), st.text(min_size=260, max_size=400))


@settings(max_examples=50, deadline=None)
@given(scripts=st.lists(PATHS, min_size=1, max_size=3), dockerfile=PATHS)
def test_junk_paths_only_raise_task_error(new_folder: NewFolder, scripts: list[str], dockerfile: str) -> None:
    folder = new_folder()
    data = merged({"validation": {"test_scripts": scripts}, "environment": {"dockerfile": dockerfile}})
    write_task(folder, to_toml(data))

    assert_only_located_task_errors(folder)

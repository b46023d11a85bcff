"""Resolution: explicit path, then the project's .comet/skills/<name>, then built-in, else fail closed."""

from __future__ import annotations

from pathlib import Path

import pytest

from comet_engine.errors import SkillNotFoundError, SkillPackageError
from comet_engine.skills import BUILTIN_ROOT, resolve
from tests.engine.skillpkg import minimal_skill, write_package


@pytest.fixture
def builtins(tmp_path: Path) -> Path:
    root = tmp_path / "builtin"
    write_package(root / "demo", minimal_skill("demo", goal={"statement": "built-in"}))
    return root


def test_an_explicit_path_wins(tmp_path: Path, builtins: Path) -> None:
    write_package(tmp_path / "project" / ".comet" / "skills" / "demo", minimal_skill(goal={"statement": "project"}))
    explicit = write_package(tmp_path / "elsewhere" / "demo", minimal_skill(goal={"statement": "explicit"}))

    found = resolve(str(explicit), tmp_path / "project", builtin_root=builtins)

    assert found.source == "path"
    assert found.package.definition.goal.statement == "explicit"


def test_the_project_package_overrides_the_builtin(tmp_path: Path, builtins: Path) -> None:
    write_package(tmp_path / "project" / ".comet" / "skills" / "demo", minimal_skill(goal={"statement": "project"}))

    found = resolve("demo", tmp_path / "project", builtin_root=builtins)

    assert (found.source, found.package.definition.goal.statement) == ("project", "project")


def test_the_builtin_is_used_when_the_project_has_none(tmp_path: Path, builtins: Path) -> None:
    found = resolve("demo", tmp_path / "project", builtin_root=builtins)

    assert (found.source, found.package.definition.goal.statement) == ("builtin", "built-in")


def test_an_invalid_project_override_fails_closed_instead_of_falling_back(tmp_path: Path, builtins: Path) -> None:
    broken = minimal_skill(goal={})
    write_package(tmp_path / "project" / ".comet" / "skills" / "demo", broken)

    with pytest.raises(SkillPackageError, match=r"goal\.statement: required field is missing"):
        resolve("demo", tmp_path / "project", builtin_root=builtins)


def test_an_empty_override_folder_also_fails_closed(tmp_path: Path, builtins: Path) -> None:
    (tmp_path / "project" / ".comet" / "skills" / "demo").mkdir(parents=True)

    with pytest.raises(SkillPackageError, match=r"skill\.yaml: missing"):
        resolve("demo", tmp_path / "project", builtin_root=builtins)


def test_an_override_must_carry_its_folder_name(tmp_path: Path, builtins: Path) -> None:
    write_package(tmp_path / "project" / ".comet" / "skills" / "demo", minimal_skill("other"))

    with pytest.raises(SkillPackageError, match=r"metadata\.name 'other' but is installed as 'demo'"):
        resolve("demo", tmp_path / "project", builtin_root=builtins)


def test_nothing_found_is_an_error_naming_where_it_looked(tmp_path: Path, builtins: Path) -> None:
    with pytest.raises(SkillNotFoundError) as info:
        resolve("absent", tmp_path / "project", builtin_root=builtins)

    message = str(info.value)
    assert str(tmp_path / "project" / ".comet" / "skills" / "absent") in message
    assert "built-in skills (demo)" in message and "comet skill add" in message


def test_paths_and_names(tmp_path: Path) -> None:
    with pytest.raises(SkillNotFoundError, match="no such skill package directory"):
        resolve("./nowhere", tmp_path)
    with pytest.raises(SkillNotFoundError, match="not a skill name"):
        resolve("Has Spaces", tmp_path)


def test_the_shipped_builtin_comet_classic_resolves(tmp_path: Path) -> None:
    found = resolve("comet-classic", tmp_path)

    assert found.source == "builtin" and found.package.root == BUILTIN_ROOT / "comet-classic"
    assert found.package.guardrails.max_iterations == 500

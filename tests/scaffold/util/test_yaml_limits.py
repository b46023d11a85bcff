"""Every YAML the project reads is loaded within limits: size, nesting, nodes with aliases expanded.

A few lines of aliases of aliases (an alias bomb) grew memory without bound, and 50,000 nested brackets
crashed the process (libyaml's composer recurses in C): both in a real ``comet`` process here, refused
with a message naming the file, and the documents within the limits load as plain YAML does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from scaffold.util.schema import YAML_MAX_DEPTH, YamlLimitError, check_yaml_limits, load_yaml
from tests.support.factories import REPO, TaskFactory

DEEP = "[" * 50_000 + "]" * 50_000
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)
)


def comet(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command line in a process of its own, its memory capped: a bomb that went off could not take
    the machine with it, it would fail here."""
    cap = "ulimit -v 2000000; exec " + " ".join(f"'{a}'" for a in (sys.executable, "-m", "scaffold.cli.main", *argv))
    return subprocess.run(["bash", "-c", cap], cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def test_a_deep_nesting_and_an_alias_bomb_are_refused_before_anything_is_built() -> None:
    with pytest.raises(YamlLimitError, match=f"nested deeper than {YAML_MAX_DEPTH} levels"):
        load_yaml(DEEP)
    with pytest.raises(YamlLimitError, match="expands to more than 1,000,000 nodes"):
        load_yaml(BOMB)
    with pytest.raises(YamlLimitError, match="longer than"):
        load_yaml("a: " + "x" * (9 * 1024 * 1024))
    assert load_yaml("base: &b {image: x}\nuse: *b\n") == {"base": {"image": "x"}, "use": {"image": "x"}}


_SCALARS = st.none() | st.booleans() | st.integers() | st.text(alphabet="abc xyz-", max_size=5)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text("abc", min_size=1, max_size=3), inner, max_size=4)
    ),
    max_leaves=40,
)


@settings(max_examples=200)
@given(_VALUES)
def test_what_is_within_the_limits_loads_as_plain_yaml_does(value: object) -> None:
    text = yaml.safe_dump(value)
    check_yaml_limits(text)
    assert load_yaml(text) == yaml.safe_load(text)


def test_comet_tasks_check_names_a_deep_treatments_file_and_does_not_crash(factory: TaskFactory) -> None:
    factory.task("t")
    (factory.treatments_dir / "deep.yaml").write_text("DEEP: " + DEEP + "\n")
    done = comet("tasks", "check", str(factory.tasks_dir), cwd=factory.tasks_dir.parent)
    assert done.returncode == 1, done.stderr[-500:]  # a problem found, not a crash (139)
    assert "deep.yaml" in done.stdout and "nested deeper than 100 levels" in done.stdout


def test_comet_eval_collect_refuses_an_alias_bomb_manifest(tmp_path: Path) -> None:
    skill = tmp_path / "my-skill"
    (skill / "comet").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: my-skill\ndescription: x\n---\n# x\n")
    (skill / "comet" / "eval.yaml").write_text(BOMB)
    done = comet("eval", str(skill), "--collect", "--agent", "oracle", cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-500:]
    assert "eval.yaml" in done.stderr and "expands to more than 1,000,000 nodes" in done.stderr


def test_comet_skill_refuses_a_deep_skill_package(tmp_path: Path) -> None:
    package = tmp_path / "deep-skill"
    (package / "comet").mkdir(parents=True)
    (package / "SKILL.md").write_text("---\nname: deep-skill\ndescription: x\n---\n# x\n")
    (package / "comet" / "skill.yaml").write_text("name: " + DEEP + "\n")
    done = comet("skill", "show", str(package), "--project", str(tmp_path), cwd=tmp_path)
    said = done.stdout + done.stderr
    assert done.returncode not in (0, 139), said[-500:]  # refused, not a crash
    assert "skill.yaml" in said and "nested deeper than 100 levels" in said


def test_the_model_server_refuses_an_alias_bomb_script(tmp_path: Path) -> None:
    script = tmp_path / "bomb.yaml"
    script.write_text(BOMB)
    done = comet("model-server", "--script", str(script), cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-500:]
    assert "bomb.yaml" in done.stderr and "expands to more than 1,000,000 nodes" in done.stderr


def test_repo_examples_stay_within_the_limits() -> None:
    for path in [*REPO.glob("scaffold/builtin/**/*.yaml"), *REPO.glob("examples/**/*.yaml")]:
        check_yaml_limits(path.read_text(encoding="utf-8"))

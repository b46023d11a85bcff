"""Immutable snapshots: the original Comet engine's skill hash, written once, verified on every reload,
tamper is typed."""

from __future__ import annotations

import hashlib
import json
import stat
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from comet_engine.errors import CorruptRunError, SnapshotError
from comet_engine.skills import load_package, load_snapshot, skill_hash, write_snapshot
from comet_engine.skills.snapshot import MANIFEST, SNAPSHOTS, stable_json
from tests.engine.skillpkg import copy_example, minimal_skill, write_package


def test_the_hash_is_the_seed_formula(tmp_path: Path) -> None:
    package = load_package(copy_example(tmp_path / "pkg"))
    control = tmp_path / "pkg" / "comet"
    documents = {
        "definition": yaml.safe_load((control / "skill.yaml").read_text()),
        "evals": yaml.safe_load((control / "checks.yaml").read_text()),
        "guardrails": yaml.safe_load((control / "guardrails.yaml").read_text()),
    }
    script = (tmp_path / "pkg" / "scripts" / "publish.sh").read_bytes()
    scripts = [{"path": "scripts/publish.sh", "sha256": hashlib.sha256(script).hexdigest()}]
    text = (
        json.dumps(documents, sort_keys=True, separators=(",", ":"))
        + "\n"
        + (tmp_path / "pkg" / "SKILL.md").read_text()
        + "\n"
        + json.dumps(scripts, separators=(",", ":"))
        + "\n"
    )

    assert skill_hash(package) == hashlib.sha256(text.encode()).hexdigest()


def test_the_hash_ignores_yaml_layout_but_not_content(tmp_path: Path) -> None:
    skill = minimal_skill()
    a = load_package(write_package(tmp_path / "a", skill))
    reordered = dict(reversed(list(skill.items())))
    b = load_package(write_package(tmp_path / "b", yaml.safe_dump(reordered, default_flow_style=True)))
    c = load_package(write_package(tmp_path / "c", minimal_skill(goal={"statement": "another goal"})))
    d = load_package(write_package(tmp_path / "d", skill, skill_md="---\nname: demo\n---\nDo it!\n"))

    assert skill_hash(a) == skill_hash(b)
    assert len({skill_hash(a), skill_hash(c), skill_hash(d)}) == 3


def test_a_script_tool_source_is_part_of_the_hash(tmp_path: Path) -> None:
    first = load_package(copy_example(tmp_path / "one"))
    second_root = copy_example(tmp_path / "two")
    (second_root / "scripts" / "publish.sh").write_text("#!/bin/sh\necho changed\n")

    assert skill_hash(first) != skill_hash(load_package(second_root))


@settings(max_examples=50, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
        max_leaves=20,
    )
)
def test_stable_json_is_independent_of_key_order(value: object) -> None:
    def reverse(v: object) -> object:
        if isinstance(v, dict):
            return {k: reverse(v[k]) for k in reversed(list(v))}
        if isinstance(v, list):
            return [reverse(x) for x in v]
        return v

    assert stable_json(value) == stable_json(reverse(value))
    assert json.loads(stable_json(value)) == value


def test_write_and_reload(tmp_path: Path) -> None:
    package = load_package(copy_example(tmp_path / "pkg"))
    project = tmp_path / "project"

    snap = write_snapshot(package, project)

    assert snap.path == project / SNAPSHOTS / skill_hash(package)
    assert snap.package.name == "release-notes"
    manifest = json.loads((snap.path / MANIFEST).read_text())
    assert manifest["skillHash"] == snap.skill_hash
    assert sorted(manifest["files"]) == [
        "SKILL.md",
        "comet/checks.yaml",
        "comet/eval.yaml",
        "comet/guardrails.yaml",
        "comet/skill.yaml",
        "scripts/publish.sh",
    ]
    assert not (snap.path / "SKILL.md").stat().st_mode & stat.S_IWUSR
    # Later edits of the source package do not touch the snapshot.
    (tmp_path / "pkg" / "SKILL.md").write_text("---\nname: release-notes\n---\nchanged\n")
    assert load_snapshot(project, snap.skill_hash).package.skill_md == package.skill_md
    # Writing the same package again reuses the verified snapshot; no temporary folders are left.
    assert write_snapshot(package, project).path == snap.path
    assert [p.name for p in (project / SNAPSHOTS).iterdir()] == [snap.skill_hash]


def tamper(path: Path, text: str) -> None:
    path.chmod(0o644)
    path.write_text(text)


@pytest.mark.parametrize(
    ("rel", "expected"),
    [
        ("comet/skill.yaml", "modified after the snapshot was taken"),
        ("SKILL.md", "modified after the snapshot was taken"),
        ("scripts/publish.sh", "modified after the snapshot was taken"),
        ("notes.txt", "added after the snapshot was taken"),
    ],
)
def test_tampering_is_detected(tmp_path: Path, rel: str, expected: str) -> None:
    snap = write_snapshot(load_package(copy_example(tmp_path / "pkg")), tmp_path / "project")
    target = snap.path / rel
    if target.exists():
        tamper(target, target.read_text() + "\n# edited\n")
    else:
        target.write_text("extra\n")

    with pytest.raises(SnapshotError) as info:
        load_snapshot(tmp_path / "project", snap.skill_hash, run_id="r1")

    message = str(info.value)
    assert str(target) in message and expected in message
    assert f"run 'r1' pinned skill hash {snap.skill_hash}" in message and "start a new run" in message
    assert isinstance(info.value, CorruptRunError)


def test_rewriting_the_manifest_too_is_caught_by_the_skill_hash(tmp_path: Path) -> None:
    snap = write_snapshot(load_package(copy_example(tmp_path / "pkg")), tmp_path / "project")
    skill_yaml = snap.path / "comet" / "skill.yaml"
    tamper(skill_yaml, skill_yaml.read_text().replace('version: "1"', 'version: "2"'))
    manifest = json.loads((snap.path / MANIFEST).read_text())
    manifest["files"]["comet/skill.yaml"] = hashlib.sha256(skill_yaml.read_bytes()).hexdigest()
    tamper(snap.path / MANIFEST, json.dumps(manifest))

    with pytest.raises(SnapshotError, match=f"hashes to [0-9a-f]{{64}}, not {snap.skill_hash}"):
        load_snapshot(tmp_path / "project", snap.skill_hash)


def test_missing_snapshot_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="missing; skill snapshot abc"):
        load_snapshot(tmp_path, "abc")

    snap = write_snapshot(load_package(copy_example(tmp_path / "pkg")), tmp_path / "project")
    (snap.path / "comet" / "eval.yaml").unlink()
    with pytest.raises(SnapshotError, match=r"eval\.yaml: missing from the snapshot"):
        load_snapshot(tmp_path / "project", snap.skill_hash)

"""The generated-task cache: its key, layout, validity, reuse without a generator call, the lock between
two real processes, and the partial report of a failed generation."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from scaffold.catalog.builtin import BUILTIN_SKILLS_DIR
from scaffold.errors import GenerationError
from scaffold.skill_eval import generated
from scaffold.skill_eval.generated import cached, ensure_generated, generation_key, load_generated, lock_path
from scaffold.skill_eval.generator import Attempt, GeneratorResult, GeneratorSettings
from scaffold.skill_eval.manifest import EvalSkill, Manifest, synthesize_manifest
from scaffold.skill_eval.snapshot import take_snapshot
from tests.scaffold.skill_eval.fake_generator import BUILTIN, fake
from tests.support.factories import REPO

SETTINGS = GeneratorSettings("claude-code", "m")


@pytest.fixture
def skill(tmp_path: Path) -> Path:
    # A space in the path, not in the name: a skill's name becomes its folder in workspaces and must be plain.
    root = tmp_path / "my skills" / "my-skill"
    root.parent.mkdir()
    shutil.copytree(BUILTIN_SKILLS_DIR / "markdown-report", root)
    return root


def _ensure(manifest: Manifest, owner: Path, **kw: Any) -> Path:
    return ensure_generated(manifest, owner=owner, settings=SETTINGS, builtin_tasks=BUILTIN, env={}, **kw)


def test_key_changes_with_each_input(skill: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    manifest = synthesize_manifest(skill)
    snap = take_snapshot(skill).hash
    base: dict[str, Any] = {"agent": "claude-code", "model": "m", "base_url": None}
    key = generation_key(snap, manifest, **base)
    assert len(key) == 64 and key == generation_key(snap, manifest, **base)
    variants = [
        generation_key("sha256:" + "0" * 64, manifest, **base),
        generation_key(snap, manifest, agent="codex", model="m", base_url=None),
        generation_key(snap, manifest, agent="claude-code", model="other", base_url=None),
        generation_key(snap, manifest, agent="claude-code", model=None, base_url=None),
        generation_key(snap, manifest, agent="claude-code", model="m", base_url="http://127.0.0.1:9/"),
        generation_key(
            snap, dataclasses.replace(manifest, skill=EvalSkill(manifest.skill.name, skill, "comet-workflow")), **base
        ),
        generation_key(snap, dataclasses.replace(manifest, interaction={"mode": "auto_user"}), **base),
    ]
    assert len({key, *variants}) == len(variants) + 1
    for constant in ("GENERATOR_VERSION", "API_VERSION"):
        with monkeypatch.context() as patch:
            patch.setattr(generated, constant, getattr(generated, constant) + ".next")
            assert generation_key(snap, manifest, **base) != key


def test_key_changes_with_skill_content(skill: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    owner = tmp_path / "owner"
    manifest = synthesize_manifest(skill)
    calls = tmp_path / "calls"
    monkeypatch.setattr(generated, "run_generator", fake(calls))
    first = _ensure(manifest, owner)
    (skill / "templates" / "result.md").write_text("changed\n")
    assert cached(manifest, owner=owner, agent="claude-code", model="m", base_url=None, builtin_tasks=BUILTIN) is None
    second = _ensure(manifest, owner)
    assert first != second and len(calls.read_text().splitlines()) == 2


def test_layout_files_and_reuse_without_generator_call(
    skill: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    owner = tmp_path / "owner"
    calls = tmp_path / "calls"
    monkeypatch.setattr(generated, "run_generator", fake(calls))
    manifest = synthesize_manifest(skill)
    assert cached(manifest, owner=owner, agent="claude-code", model="m", base_url=None, builtin_tasks=BUILTIN) is None
    assert not owner.exists()  # cached() only reads
    path = _ensure(manifest, owner)
    key = generation_key(take_snapshot(skill).hash, manifest, agent="claude-code", model="m", base_url=None)
    assert path == owner / ".comet" / "eval" / "generated" / "my-skill" / key / "eval.yaml"
    assert lock_path(owner, key).is_file()
    assert (owner / ".comet" / ".gitignore").read_text() == "*\n"  # the cache is never committed with the skill
    data = yaml.safe_load(path.read_text())
    assert data["apiVersion"] == "comet.eval/v1alpha1" and data["kind"] == "SkillEvalManifest"
    assert data["metadata"]["generationHash"] == key and data["skill"]["source"] == str(skill)
    assert [t["name"] for t in data["evaluation"]["tasks"]] == ["gen-one", "gen-two"]
    generation = json.loads((path.parent / "generation.json").read_text())
    assert generation["schema"] == "comet.eval.generation.v1" and generation["generation_hash"] == key
    assert generation["manifest_hash"] == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    assert generation["generation_overhead"]["attempt_count"] == 1
    assert generation["generation_overhead"]["total_tokens"] == 120
    assert generation["api"] == "default"
    assert [p.name for p in path.parent.parent.iterdir()] == [key]  # no staging folder left
    loaded = load_generated(path, builtin_tasks=BUILTIN)
    assert loaded.source == "generated" and loaded.skill.root == skill and loaded.task_names == ("gen-one", "gen-two")

    assert _ensure(manifest, owner) == path
    assert cached(manifest, owner=owner, agent="claude-code", model="m", base_url=None, builtin_tasks=BUILTIN) == path
    assert len(calls.read_text().splitlines()) == 1  # reused: no second generator call


@pytest.mark.parametrize("damage", ["edit-manifest", "drop-generation", "wrong-hash", "one-task"])
def test_invalid_cache_is_regenerated(
    skill: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    owner, calls = tmp_path / "owner", tmp_path / "calls"
    monkeypatch.setattr(generated, "run_generator", fake(calls))
    manifest = synthesize_manifest(skill)
    path = _ensure(manifest, owner)
    generation = path.parent / "generation.json"
    if damage == "edit-manifest":
        path.write_text(path.read_text() + "# edited\n")
    elif damage == "drop-generation":
        generation.unlink()
    elif damage == "wrong-hash":
        data = json.loads(generation.read_text())
        generation.write_text(json.dumps({**data, "generation_hash": "0" * 64}))
    else:  # a valid file with one task: the manifest validator accepts it, the cache's 2-4 rule does not
        data = yaml.safe_load(path.read_text())
        data["evaluation"]["tasks"] = data["evaluation"]["tasks"][:1]
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        meta = json.loads(generation.read_text())
        meta["manifest_hash"] = "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
        generation.write_text(json.dumps(meta))
    assert cached(manifest, owner=owner, agent="claude-code", model="m", base_url=None, builtin_tasks=BUILTIN) is None
    assert _ensure(manifest, owner) == path
    assert len(calls.read_text().splitlines()) == 2
    assert cached(manifest, owner=owner, agent="claude-code", model="m", base_url=None, builtin_tasks=BUILTIN) == path
    assert sorted(p.name for p in path.parent.parent.iterdir()) == [path.parent.name]  # the old entry is gone


def _blocked_on_lock(lock: Path) -> bool:
    """/proc/locks lists a process waiting for a lock with ``->``: the second process is blocked in flock."""
    inode = lock.stat().st_ino
    lines = Path("/proc/locks").read_text().splitlines()
    return any("->" in line and f":{inode} " in line for line in lines)


def test_two_processes_generate_once(skill: Path, tmp_path: Path) -> None:
    owner, calls, hold = tmp_path / "owner", tmp_path / "calls", tmp_path / "hold"
    cmd = [sys.executable, "-m", "tests.scaffold.skill_eval.fake_generator", str(owner), str(skill), str(calls)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    first = subprocess.Popen([*cmd, str(hold)], cwd=REPO, env=env, stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120  # only against a hang: nothing is measured
        while not hold.with_suffix(".started").exists():  # the first holds the lock, generating
            assert first.poll() is None and time.monotonic() < deadline, "the first process never generated"
            time.sleep(0.01)
        second = subprocess.Popen([*cmd, str(hold)], cwd=REPO, env=env, stdout=subprocess.PIPE, text=True)
        key = generation_key(
            take_snapshot(skill).hash, synthesize_manifest(skill), agent="claude-code", model="m", base_url=None
        )
        while not _blocked_on_lock(lock_path(owner, key)):  # the second found no entry and waits for the lock
            assert second.poll() is None and time.monotonic() < deadline, "the second did not wait for the lock"
            time.sleep(0.01)
        hold.with_suffix(".release").write_text("1")
        out_first, _ = first.communicate(timeout=60)
        out_second, _ = second.communicate(timeout=60)
    finally:
        for proc in (first, locals().get("second")):
            if proc is not None and proc.poll() is None:
                proc.kill()
    assert first.returncode == 0 and second.returncode == 0
    assert out_first.strip() == out_second.strip()
    assert len(calls.read_text().splitlines()) == 1  # generated once


def _failing(calls: Path, error: str) -> object:
    def run_generator(snapshot: object, **_: object) -> GeneratorResult:
        calls.write_text("called")
        attempts = tuple(Attempt(n, 1.0, 0, False, 10, 5, None, error) for n in (1, 2))
        return GeneratorResult((), attempts, 2.0, None, None, error)

    return run_generator


@pytest.mark.parametrize("html_report", [False, True])
def test_failure_writes_partial_report_and_raises(
    skill: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, html_report: bool
) -> None:
    owner = tmp_path / "owner"
    secret = "sk-ant-generation-secret-123456"
    monkeypatch.setattr(
        generated, "run_generator", _failing(tmp_path / "calls", f"task_generation: bad <answer> {secret}")
    )
    with pytest.raises(GenerationError) as info:
        ensure_generated(
            synthesize_manifest(skill), owner=owner, settings=SETTINGS, builtin_tasks=BUILTIN,
            env={"ANTHROPIC_API_KEY": secret}, experiment_id="exp-1", html_report=html_report,
        )  # fmt: skip
    run = owner / ".comet" / "eval" / "runs" / "exp-1"
    report = run / ("summary.html" if html_report else "summary.md")
    assert info.value.report_path == report
    assert str(info.value).endswith(f"\nPartial report: {report}")
    assert secret not in str(info.value)
    text = report.read_text()
    assert "Evaluation stopped during task generation" in text
    assert "Attribution: `task_generation`" in text and "Attempts: 2" in text and "Task denominator: 0" in text
    assert ("&lt;answer&gt;" in text) if html_report else ("<answer>" in text)
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["schema"] == "comet.eval.generation.failure.v1" and meta["attribution"] == "task_generation"
    assert meta["attempt_count"] == 2 and meta["case_count"] == 0 and meta["task_denominator"] == 0
    assert meta["generation_overhead"]["attempt_count"] == 2
    for path in run.rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(), path
    assert not list((owner / ".comet" / "eval" / "generated").rglob("eval.yaml"))

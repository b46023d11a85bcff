"""I/O. Generated tasks, cached by what produced them: ``<owner>/.comet/eval/generated/<skill>/<key>/``.

A skill without declared tasks gets 2-4 inline tasks from a generator session (scaffold.skill_eval.generator),
written as a normal manifest (``eval.yaml``) beside ``generation.json`` (what made it, and what it cost).

* **Key**: the hex sha256 of the canonical JSON of the skill snapshot's hash, the agent, the model, the base
  URL, the profile, the interaction, the generator version and the manifest schema version. Any of them
  changing means other tasks could come out, so it is another cache entry, never a stale reuse.
* **Valid** only when both files exist, ``generation.json`` names this key and the sha256 of the
  ``eval.yaml`` bytes, and the manifest passes the manifest validator with 2-4 inline tasks (a hand edit,
  a half-copied folder or a newer validator's rule makes it regenerate, never run wrong tasks).
* **Lock**: ``<owner>/.comet/eval/locks/generated-<key>.lock`` (``fcntl.flock``) around check-generate-
  publish, with the check repeated inside the lock: two ``comet eval`` runs started together generate once,
  the second reuses what the first wrote.
* **Atomic**: the entry is written into a staging folder beside it and renamed into place (an invalid
  old entry is renamed aside first, then removed), so a reader sees no entry or a whole one.

Generation is overhead of the run, never a task failure. When it fails (twice an invalid answer, or a
failed generator agent) a partial report is written to ``<owner>/.comet/eval/runs/<experiment>/``
(``summary.md`` or ``summary.html``, ``metadata.json``, the attempts' streams), redacted, and
:class:`scaffold.errors.GenerationError` is raised (``comet eval`` exits 3).
"""

from __future__ import annotations

import dataclasses
import hashlib
import html
import json
import re
import shutil
import tempfile
import time
from collections.abc import Collection, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import yaml

from scaffold.agents.credentials import REDACTED, Redactor, load_environment
from scaffold.errors import GenerationError, ManifestError
from scaffold.skill_eval.answer import MAX_TASKS, MIN_TASKS
from scaffold.skill_eval.generator import GENERATOR_VERSION, GeneratorResult, GeneratorSettings, run_generator
from scaffold.skill_eval.manifest import API_VERSION, KIND, InlineTask, Manifest
from scaffold.skill_eval.manifest_check import load_manifest, parse_manifest
from scaffold.skill_eval.project import comet_folder
from scaffold.skill_eval.snapshot import SkillSnapshot, take_snapshot
from scaffold.util.atomic import locked, write_json_atomic, write_text_atomic
from scaffold.util.hashing import canonical_json
from scaffold.util.schema import load_yaml

__all__ = [
    "FAILURE_SCHEMA",
    "GENERATION_SCHEMA",
    "cache_dir",
    "cached",
    "ensure_generated",
    "generation_key",
    "load_generated",
    "lock_path",
    "safe_name",
]

GENERATION_SCHEMA: Final = "comet.eval.generation.v1"
FAILURE_SCHEMA: Final = "comet.eval.generation.failure.v1"
_DEFAULT: Final = "runtime-default"
# Values of these variables are never written (the streams are redacted by the agent adapter already;
# this covers the report's own text: an error message quoting the agent's output).
_SECRET_NAME: Final = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|AUTH)", re.IGNORECASE)
_SECRET_PATTERN: Final = re.compile(r"\b(sk-[A-Za-z0-9_-]{8,}|gh[pousr]_[A-Za-z0-9]{16,}|Bearer\s+\S{8,})")


def safe_name(name: str) -> str:
    """A skill name as one safe folder name: runs of other characters become ``-``; empty gives ``skill``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "skill"


def generation_key(
    snapshot_hash: str, manifest: Manifest, *, agent: str, model: str | None, base_url: str | None
) -> str:
    """The cache key (64 hex digits) of tasks generated for this snapshot, generator and settings."""
    return hashlib.sha256(
        canonical_json(
            {
                "snapshot_hash": snapshot_hash,
                "agent": agent,
                "model": model or _DEFAULT,
                "base_url": base_url or _DEFAULT,
                "profile": manifest.skill.profile or "generic",
                "interaction": dict(manifest.interaction) if manifest.interaction else None,
                "generator_version": GENERATOR_VERSION,
                "task_schema_version": API_VERSION,
            }
        ).encode("utf-8")
    ).hexdigest()


def cache_dir(owner: Path, skill_name: str, key: str) -> Path:
    return owner / ".comet" / "eval" / "generated" / safe_name(skill_name) / key


def lock_path(owner: Path, key: str) -> Path:
    return owner / ".comet" / "eval" / "locks" / f"generated-{key}.lock"


def cached(
    manifest: Manifest,
    *,
    owner: Path,
    agent: str,
    model: str | None,
    base_url: str | None,
    builtin_tasks: Collection[str],
) -> Path | None:
    """The valid cached ``eval.yaml`` for these inputs, or None. Reads only: never generates, never locks,
    never creates a folder (``--collect`` uses it and must leave no trace)."""
    snapshot = take_snapshot(manifest.skill.root)
    key = generation_key(snapshot.hash, manifest, agent=agent, model=model, base_url=base_url)
    folder = cache_dir(owner, manifest.skill.name, key)
    return folder / "eval.yaml" if _valid(folder, key, builtin_tasks) else None


def load_generated(path: Path, *, builtin_tasks: Collection[str]) -> Manifest:
    """The generated manifest at *path* (from :func:`cached` or :func:`ensure_generated`), marked generated.

    The caller keeps its own manifest's settings (gates, baseline treatments, execution) and takes the
    tasks from this one.
    """
    return dataclasses.replace(load_manifest(path, builtin_tasks=builtin_tasks), source="generated")


def ensure_generated(
    manifest: Manifest,
    *,
    owner: Path,
    settings: GeneratorSettings,
    builtin_tasks: Collection[str],
    env: Mapping[str, str] | None = None,
    experiment_id: str | None = None,
    html_report: bool = False,
    environment_dir: Path | None = None,
) -> Path:
    """The cached ``eval.yaml`` for these inputs, generating and publishing it first on a miss.

    Raises GenerationError (after writing the partial report) when generation fails.
    """
    env = load_environment() if env is None else env
    snapshot = take_snapshot(manifest.skill.root)
    key = generation_key(
        snapshot.hash, manifest, agent=settings.agent, model=settings.model, base_url=settings.base_url
    )
    folder = cache_dir(owner, manifest.skill.name, key)
    if _valid(folder, key, builtin_tasks):
        return folder / "eval.yaml"
    comet_folder(owner)  # the first file under <owner>/.comet: made ignored by git
    with locked(lock_path(owner, key)):
        # Another run may have generated while this one waited for the lock: check again inside it.
        if _valid(folder, key, builtin_tasks):
            return folder / "eval.yaml"
        result = run_generator(
            snapshot,
            skill_name=manifest.skill.name,
            profile=manifest.skill.profile,
            settings=settings,
            validate=lambda tasks: _problems(_manifest_data(manifest, key, tasks), folder, manifest, builtin_tasks),
            env=env,
            environment_dir=environment_dir,
        )
        try:
            if not result.ok:
                report = _failure_report(owner, result, env, experiment_id, html_report)
                error = _redact(result.error or "task_generation: failed", env)
                raise GenerationError(f"{error}\nPartial report: {report}", report)
            text = yaml.safe_dump(
                _manifest_data(manifest, key, list(result.tasks)), sort_keys=False, allow_unicode=True
            )
            generation = _redacted(_generation_json(manifest, snapshot, key, settings, result, text), env)
            _publish(folder, key, text, generation)
        finally:
            if result.scratch is not None:
                shutil.rmtree(result.scratch, ignore_errors=True)
    return folder / "eval.yaml"


# --- the entry: its manifest, its validity, its publication ----------------------------------------------


def _manifest_data(manifest: Manifest, key: str, tasks: list[Any]) -> dict[str, Any]:
    skill: dict[str, Any] = {"name": manifest.skill.name, "source": str(manifest.skill.root)}
    if manifest.skill.profile:
        skill["profile"] = manifest.skill.profile
    data: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": manifest.name, "generationHash": key, "generationFile": "generation.json"},
        "skill": skill,
        "evaluation": {"tasks": tasks},
    }
    if manifest.interaction:
        data["interaction"] = dict(manifest.interaction)
    return data


def _problems(data: dict[str, Any], folder: Path, manifest: Manifest, builtin_tasks: Collection[str]) -> list[str]:
    """The manifest validator's problems of a candidate, as the generator is told them (path: message)."""
    try:
        parse_manifest(data, file=folder / "eval.yaml", package_root=manifest.skill.root, builtin_tasks=builtin_tasks)
    except ManifestError as exc:
        return [f"{p.key}: {p.message}" if p.key else p.message for p in exc.problems]
    return []


def _valid(folder: Path, key: str, builtin_tasks: Collection[str]) -> bool:
    manifest_file, generation_file = folder / "eval.yaml", folder / "generation.json"
    try:
        data = load_yaml(generation_file.read_text(encoding="utf-8"))
        raw = manifest_file.read_bytes()
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    if not isinstance(data, dict) or data.get("generation_hash") != key:
        return False
    if data.get("manifest_hash") != "sha256:" + hashlib.sha256(raw).hexdigest():
        return False
    try:
        loaded = load_manifest(manifest_file, builtin_tasks=builtin_tasks)
    except ManifestError:
        return False
    return MIN_TASKS <= len(loaded.tasks) <= MAX_TASKS and all(isinstance(t, InlineTask) for t in loaded.tasks)


def _publish(folder: Path, key: str, text: str, generation: dict[str, Any]) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=folder.parent))
    try:
        write_text_atomic(stage / "eval.yaml", text)
        write_json_atomic(stage / "generation.json", generation)
        retired = folder.parent / f".{key}.{time.time_ns()}.retired"
        if folder.exists():
            folder.rename(retired)
        stage.rename(folder)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    shutil.rmtree(retired, ignore_errors=True)


def _overhead(result: GeneratorResult) -> dict[str, Any]:
    """What generation cost: recorded as the run's overhead, never as a task's."""
    attempts = [a.to_json() for a in result.attempts]
    ins = [a.input_tokens for a in result.attempts if a.input_tokens is not None]
    outs = [a.output_tokens for a in result.attempts if a.output_tokens is not None]
    costs = [a.cost_usd for a in result.attempts if a.cost_usd is not None]
    return {
        "attempt_count": len(result.attempts),
        "duration_seconds": round(result.duration_s, 3),
        "input_tokens": sum(ins) if ins else None,
        "output_tokens": sum(outs) if outs else None,
        "total_tokens": sum(ins) + sum(outs) if ins or outs else None,
        "total_cost_usd": round(sum(costs), 6) if costs else None,
        "telemetry_status": "available" if ins or outs or costs else "N/A",
        "attempts": attempts,
    }


def _generation_json(
    manifest: Manifest,
    snapshot: SkillSnapshot,
    key: str,
    settings: GeneratorSettings,
    result: GeneratorResult,
    text: str,
) -> dict[str, Any]:
    return {
        "schema": GENERATION_SCHEMA,
        "generation_hash": key,
        "generator_version": GENERATOR_VERSION,
        "task_schema_version": API_VERSION,
        "skill_name": manifest.skill.name,
        "skill_path": str(manifest.skill.root),
        "skill_snapshot_hash": snapshot.hash,
        "snapshot_files": [f.path for f in snapshot.files],
        "agent": settings.agent,
        "agent_version": result.agent_version,
        "model": settings.model,
        # Only whether an endpoint was chosen: a URL may carry a key or a token.
        "api": "custom" if settings.base_url else "default",
        "backend": settings.backend,
        "profile": manifest.skill.profile or "generic",
        "interaction": _without_credentials(manifest.interaction),
        "manifest_hash": "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "created_at": datetime.now(UTC).isoformat(),
        "generation_overhead": _overhead(result),
    }


def _without_credentials(value: Mapping[str, object] | None) -> dict[str, object] | None:
    if not value:
        return None
    return {k: v for k, v in value.items() if not _SECRET_NAME.search(k)}


# --- the partial report of a failed generation ------------------------------------------------------------


def _redact(text: str, env: Mapping[str, str]) -> str:
    secrets = [v for k, v in env.items() if _SECRET_NAME.search(k) and v]
    return _SECRET_PATTERN.sub(REDACTED, Redactor(secrets).text(text))


def _redacted(data: dict[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """*data* with every secret value replaced, however deep (attempt errors quote the agent's output)."""
    out: dict[str, Any] = json.loads(_redact(json.dumps(data, ensure_ascii=False), env))
    return out


def _failure_report(
    owner: Path, result: GeneratorResult, env: Mapping[str, str], experiment_id: str | None, html_report: bool
) -> Path:
    run = owner / ".comet" / "eval" / "runs" / (experiment_id or f"task-generation-{time.time_ns()}")
    error = _redact(result.error or "task_generation: failed", env)
    attempts = len(result.attempts)
    if result.scratch is not None and (result.scratch / "logs").is_dir():
        # The attempts' raw streams (already redacted by the agent adapter) for whoever debugs the prompt.
        shutil.copytree(result.scratch / "logs", run / "task-generation", dirs_exist_ok=True)
    lines = [
        "# Evaluation stopped during task generation",
        "",
        "No task was declared for this skill, and the generator could not produce valid tasks, so no trial ran.",
        "",
        "- Attribution: `task_generation`",
        f"- Attempts: {attempts}",
        "- Task denominator: 0",
        f"- Generator streams: `{run / 'task-generation'}`",
        "",
        "## Error",
        "",
        "```",
        error,
        "```",
        "",
        "Declare tasks in `comet/eval.yaml` (evaluation.tasks), or run again with another --model.",
    ]
    if html_report:
        report = run / "summary.html"
        body = "\n".join(html.escape(line) for line in lines)
        write_text_atomic(report, f"<!doctype html>\n<meta charset=utf-8>\n<pre>\n{body}\n</pre>\n")
    else:
        report = run / "summary.md"
        write_text_atomic(report, "\n".join(lines) + "\n")
    write_json_atomic(
        run / "metadata.json",
        _redacted(
            {
                "schema": FAILURE_SCHEMA,
                "attribution": "task_generation",
                "category": "task_generation",
                "attempt_count": attempts,
                "case_count": 0,
                "task_denominator": 0,
                "subject_metrics": {},
                "generation_overhead": _overhead(result),
                "error": error,
                "report_path": str(report),
                "report_output": "html" if html_report else "markdown",
            },
            env,
        ),
    )
    return report

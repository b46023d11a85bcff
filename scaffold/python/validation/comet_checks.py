"""The comet-workflow checks a comet-* task's validator runs in the workspace, after the agent.

The original Comet eval's validators import them as a top-level module (``from comet_checks import
run_comet_checks, write_results, _passed, _failed, WORKSPACE``); the harness installs this module under
that name (and under the original's package path, ``scaffold.python.validation.comet_workflow``) beside
``core`` for validation only (scaffold.workspaces.layout.shim_files), never while the agent works.

A check is a dict ``{"check": name, "status": "passed" | "failed", "message": text}``, as the original's;
:func:`write_results` writes them in the harness's results shape (``{"checks": [{"name", "status",
"reason"}]}``). The checks read the workspace's files (the change folders of OpenSpec, the workflow's
state, its checkpoint) with the same evidence as the comet-workflow rubric (scaffold.rubrics.comet_workflow):
every listing sorted, so a result never depends on the order a file system lists entries in.

Standard library only: it runs inside task containers, where comet-eval is not installed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from scaffold.python.validation.core import RESULTS_FILE, write_test_results

__all__ = [
    "CHANGE_ROOTS",
    "PHASES",
    "WORKSPACE",
    "check_checkpoint",
    "check_comet_state",
    "check_openspec_artifacts",
    "check_tests_written",
    "check_workflow_phases",
    "find_change_dirs",
    "run_comet_checks",
    "run_recovery_checks",
    "workspace_paths",
    "write_results",
]

WORKSPACE = Path.cwd()
"""The workspace: validation scripts run with it as their working directory (``/workspace`` in a
container, a temporary folder on the local backend). A module attribute, as the original's, so a test
may point it elsewhere."""
CHANGE_ROOTS = ("openspec/changes", "docs/openspec/changes")
"""Where OpenSpec keeps its change folders (the second: Comet's classic docs layout)."""
PHASES = ("open", "design", "build", "verify", "archive")
STATE_PHASES = frozenset({*PHASES, "archived"})
_MARKS = (".comet.yaml", ".comet", "proposal.md", "tasks.md")
_PHASE_LINE = re.compile(r"(?m)^\s*phase:\s*(\S+)")


def _passed(name: str, message: str = "") -> dict[str, str]:
    return {"check": name, "status": "passed", "message": message}


def _failed(name: str, message: str) -> dict[str, str]:
    return {"check": name, "status": "failed", "message": message}


# -- the evidence


def workspace_paths(root: Path | None = None) -> list[str]:
    """Every file and folder under the workspace, relative, ``/``-separated and sorted; the harness's own
    folders (``.eval-validation``, ``.eval-solution``) left out: they are no work of the agent's."""
    base = WORKSPACE if root is None else root
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(base):
        rel = Path(dirpath).relative_to(base)
        dirnames[:] = sorted(d for d in dirnames if not (rel == Path() and d.startswith(".eval-")))
        for name in [*dirnames, *filenames]:
            out.append((rel / name).as_posix())
    return sorted(out)


def find_change_dirs(root: Path | None = None) -> list[Path]:
    """The change folders, archived first, each sorted by name: folders under a change root (or its
    ``archive/``) that hold ``.comet.yaml``, ``.comet/``, ``proposal.md`` or ``tasks.md``."""
    base = WORKSPACE if root is None else root
    archived: list[Path] = []
    active: list[Path] = []
    for changes in CHANGE_ROOTS:
        folder = base / changes
        if not folder.is_dir():
            continue
        for entry in sorted(folder.iterdir()):
            if not entry.is_dir():
                continue
            if entry.name == "archive":
                archived.extend(d for d in sorted(entry.iterdir()) if d.is_dir() and _is_change(d))
            elif _is_change(entry):
                active.append(entry)
    return [*archived, *active]


def _is_change(folder: Path) -> bool:
    return any((folder / mark).exists() for mark in _MARKS)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _existing_roots(base: Path) -> list[Path]:
    return [base / root for root in CHANGE_ROOTS if (base / root).is_dir()]


# -- the four checks of the original's run_comet_checks


def check_openspec_artifacts() -> dict[str, str]:
    """A change folder (active or archived) holds both ``proposal.md`` and ``tasks.md``."""
    if not _existing_roots(WORKSPACE):
        return _failed("openspec_artifacts", "openspec/changes/ directory not found")
    changes = find_change_dirs()
    if not changes:
        return _failed("openspec_artifacts", "no change directories found")
    for change in changes:
        if (change / "proposal.md").is_file() and (change / "tasks.md").is_file():
            return _passed("openspec_artifacts", f"found in {change.name}")
    return _failed("openspec_artifacts", f"proposal.md/tasks.md not found together (checked {len(changes)} dirs)")


def check_comet_state() -> dict[str, str]:
    """The workflow's state says where it is: a ``.comet.yaml`` with a known ``phase:``, or the engine's
    ``.comet/run-state.json`` (completed, or at a step), or an archived change with proposal and tasks."""
    roots = _existing_roots(WORKSPACE)
    if not roots:
        return _failed("comet_state", "openspec/changes/ not found")
    state_files = sorted(p for root in roots for p in root.rglob(".comet.yaml") if p.is_file())
    if state_files:
        text = _read(state_files[0])
        if text is None:
            return _failed("comet_state", f"cannot read {state_files[0].relative_to(WORKSPACE)}")
        m = _PHASE_LINE.search(text)
        if not m:
            return _failed("comet_state", "no 'phase:' field in .comet.yaml")
        if m.group(1) not in STATE_PHASES:
            return _failed("comet_state", f"unrecognised phase: {m.group(1)}")
        return _passed("comet_state", f"phase={m.group(1)}")
    for change in find_change_dirs():
        state = _json(change / ".comet" / "run-state.json")
        if isinstance(state, dict) and state.get("runId"):
            if state.get("status") == "completed" or state.get("currentStep"):
                return _passed("comet_state", f"run-state status={state.get('status')}")
            return _failed("comet_state", f"run-state.json is neither completed nor at a step ({change.name})")
    for change in find_change_dirs():
        if change.parent.name == "archive" and (change / "proposal.md").is_file() and (change / "tasks.md").is_file():
            return _passed("comet_state", "phase=archived")  # archiving ends a workflow: its state may go with it
    return _failed("comet_state", "no .comet.yaml or run-state.json found under openspec/changes/")


_SIGNALS = {
    "open": (r"{C}/(?:archive/)?[^/\n]+/(?:proposal|tasks)\.md$",),
    "design": (r"^docs/superpowers/specs/.+\.md$", r"{C}/(?:archive/)?[^/\n]+/design\.md$"),
    "build": (
        r"{C}/(?:archive/)?[^/\n]+/plan\.md$",
        r"^docs/superpowers/plans/.+\.md$",
        r"{C}/(?:archive/)?[^/\n]+/\.comet$",
    ),
    "verify": (
        r"{C}/(?:archive/)?[^/\n]+/verification(?:-report)?\.md$",
        r"^docs/superpowers/reports/.+\.md$",
    ),
    "archive": (r"{C}/archive$",),
}
"""Per phase, the paths that show it was reached (``{C}``: a change root), as the rubric's main_flow."""


def _phase_patterns() -> dict[str, list[re.Pattern[str]]]:
    roots = "(?:^|/)(?:" + "|".join(re.escape(root) for root in CHANGE_ROOTS) + ")"
    return {phase: [re.compile(rx.replace("{C}", roots), re.M) for rx in rxs] for phase, rxs in _SIGNALS.items()}


def check_workflow_phases(minimum: int = 4) -> dict[str, str]:
    """Evidence of the workflow's five phases (open, design, build, verify, archive) among the workspace's
    files; passes with at least *minimum* of them (the original's rule: four of five)."""
    haystack = "\n".join(workspace_paths())
    found = [phase for phase, patterns in _phase_patterns().items() if any(p.search(haystack) for p in patterns)]
    message = f"{len(found)}/{len(PHASES)} phases ({','.join(found) or 'none'})"
    return (_passed if len(found) >= minimum else _failed)("workflow_phases", message)


def check_tests_written() -> dict[str, str]:
    """The agent wrote tests: a ``test_*.py`` with an assertion, outside hidden folders (the harness's
    copies and the agents' skill folders are none of the agent's tests)."""
    tests = [
        WORKSPACE / rel
        for rel in workspace_paths()
        if re.search(r"(?:^|/)test_[^/]*\.py$", rel) and not any(part.startswith(".") for part in rel.split("/"))
    ]
    with_assert = [t for t in tests if "assert" in (_read(t) or "").lower()]
    if with_assert:
        return _passed("tests_written", f"{len(tests)} test file(s), {len(with_assert)} with assertions")
    if tests:
        return _failed("tests_written", f"{len(tests)} test file(s) but none with assertions")
    return _failed("tests_written", "no test files written by the agent")


def run_comet_checks() -> list[dict[str, str]]:
    """The four generic comet-workflow checks, in the original's order: OpenSpec artifacts, the workflow's
    state, its phases, tests written. A task's validator appends its own checks to the list."""
    return [check_openspec_artifacts(), check_comet_state(), check_workflow_phases(), check_tests_written()]


# -- recovery: the run's checkpoint and trajectory (the rubric's recovery_resilience, as checks)


def check_checkpoint() -> dict[str, str]:
    """``<change>/.comet/checkpoint.json`` is whole: the engine's (its ``stateDigest`` is the digest of
    ``run-state.json`` beside it, so a state edited after its checkpoint fails) or the original Comet
    layout's (``runId``, ``contextHash``, ``artifactsHash``, ``createdAt``); without one, the state files
    it would be made from (``run-state.json``, ``state-events.jsonl``) are enough."""
    changes = find_change_dirs()
    if not changes:
        return _failed("checkpoint", "no change directory")
    state_dir = changes[0] / ".comet"
    checkpoint = _json(state_dir / "checkpoint.json")
    if checkpoint is _MISSING:
        if (state_dir / "run-state.json").is_file() or (state_dir / "state-events.jsonl").is_file():
            return _passed("checkpoint", "checkpoint=state-events")
        return _failed("checkpoint", "checkpoint=missing")
    if not isinstance(checkpoint, dict) or not checkpoint.get("runId"):
        return _failed("checkpoint", "checkpoint=invalid (not a JSON object naming a runId)")
    if "stateDigest" in checkpoint:
        state = _json(state_dir / "run-state.json")
        if isinstance(state, dict) and checkpoint["stateDigest"] != state_digest(state):
            return _failed("checkpoint", "checkpoint=invalid (made from another state than run-state.json)")
        return _passed("checkpoint", "checkpoint=valid")
    if "contextHash" in checkpoint and checkpoint.get("artifactsHash") and checkpoint.get("createdAt"):
        return _passed("checkpoint", "checkpoint=valid")
    return _failed("checkpoint", "checkpoint=invalid (neither a stateDigest nor contextHash, artifactsHash, createdAt)")


def check_trajectory() -> dict[str, str]:
    """``<change>/.comet/trajectory*.jsonl`` exists and every line of it is JSON."""
    changes = find_change_dirs()
    if not changes:
        return _failed("trajectory", "no change directory")
    files = sorted((changes[0] / ".comet").glob("trajectory*.jsonl"))
    if not files:
        return _failed("trajectory", "trajectory=missing")
    for path in files:
        for number, line in enumerate((_read(path) or "").splitlines(), start=1):
            if line.strip():
                try:
                    json.loads(line)
                except ValueError:
                    return _failed("trajectory", f"trajectory=corrupt ({path.name} line {number} is not JSON)")
    return _passed("trajectory", "trajectory=exists")


def run_recovery_checks() -> list[dict[str, str]]:
    """The run's checkpoint and trajectory: what a resumed run would read."""
    return [check_checkpoint(), check_trajectory()]


def state_digest(state: dict[str, Any]) -> str:
    """The engine's digest of a run state (comet_engine.skills.companions.state_digest), without the
    store's own bookkeeping key: canonical JSON, SHA-256. Written out here: this module imports nothing of
    the engine, which is not installed where validators run."""
    stored = {key: value for key, value in state.items() if key != "trajectoryBytes"}
    text = json.dumps(stored, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


_MISSING: Any = object()


def _json(path: Path) -> Any:
    text = _read(path)
    if text is None:
        return _MISSING
    try:
        return json.loads(text)
    except ValueError:
        return None


# -- reporting


def write_results(results: list[dict[str, Any]], path: str | os.PathLike[str] | None = None) -> int:
    """Write *results* (the check dicts) as the harness reads them, print a summary, and exit 1 when a
    check failed, as the original's did (a validator ends with ``write_results(run_all())``). Returns 0
    when every check passed, for a caller that goes on."""
    entries = [
        {
            "name": str(r.get("check") or r.get("name") or "check"),
            "status": "passed" if str(r.get("status", "")).lower() in ("passed", "pass", "ok") else "failed",
            "reason": str(r.get("message") or r.get("reason") or ""),
        }
        for r in results
    ]
    write_test_results({"checks": entries}, WORKSPACE / RESULTS_FILE if path is None else path)
    failed = [e for e in entries if e["status"] == "failed"]
    for entry in entries:
        mark = "PASS" if entry["status"] == "passed" else "FAIL"
        print(f"  {mark} {entry['name']}" + (f": {entry['reason']}" if entry["reason"] else ""))
    print(f"\n{len(entries) - len(failed)}/{len(entries)} checks passed")
    if failed:
        sys.exit(1)
    return 0

"""The comet-workflow checks a comet-* validator imports (``comet_checks``): what each says about real
workspaces, the results file it writes, and that the copy installed for validation works on its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from comet_engine.skills.companions import state_digest as engine_digest
from scaffold.python.validation import comet_checks
from scaffold.workspaces.layout import shim_files, write_shim

CHANGE = "openspec/changes/archive/2026-01-01-add-ttl"


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(comet_checks, "WORKSPACE", tmp_path)
    return tmp_path


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


FULL_RUN = {
    f"{CHANGE}/proposal.md": "# Proposal\n",
    f"{CHANGE}/tasks.md": "- [x] one\n",
    f"{CHANGE}/design.md": "# Design\n",
    f"{CHANGE}/plan.md": "# Plan\n",
    f"{CHANGE}/verification.md": "# Verified\n",
    f"{CHANGE}/.comet.yaml": "workflow: full\nphase: archive\n",
    "tests/test_cache.py": "def test_ttl():\n    assert True\n",
}


def by_name(results: list[dict[str, str]]) -> dict[str, tuple[str, str]]:
    return {r["check"]: (r["status"], r["message"]) for r in results}


def test_a_whole_workflow_passes_the_four_checks(workspace: Path) -> None:
    write(workspace, FULL_RUN)

    assert by_name(comet_checks.run_comet_checks()) == {
        "openspec_artifacts": ("passed", "found in 2026-01-01-add-ttl"),
        "comet_state": ("passed", "phase=archive"),
        "workflow_phases": ("passed", "5/5 phases (open,design,build,verify,archive)"),
        "tests_written": ("passed", "1 test file(s), 1 with assertions"),
    }


def test_an_empty_workspace_fails_each_check_saying_why(workspace: Path) -> None:
    assert by_name(comet_checks.run_comet_checks()) == {
        "openspec_artifacts": ("failed", "openspec/changes/ directory not found"),
        "comet_state": ("failed", "openspec/changes/ not found"),
        "workflow_phases": ("failed", "0/5 phases (none)"),
        "tests_written": ("failed", "no test files written by the agent"),
    }


def test_the_classic_docs_layout_counts_too(workspace: Path) -> None:
    write(workspace, {k.replace("openspec/", "docs/openspec/", 1): v for k, v in FULL_RUN.items()})

    assert all(r["status"] == "passed" for r in comet_checks.run_comet_checks())


def test_three_phases_are_not_enough(workspace: Path) -> None:
    write(workspace, {"openspec/changes/add-ttl/proposal.md": "x", "openspec/changes/add-ttl/design.md": "x"})
    write(workspace, {"docs/superpowers/plans/p.md": "x"})

    result = comet_checks.check_workflow_phases()

    assert result == {"check": "workflow_phases", "status": "failed", "message": "3/5 phases (open,design,build)"}


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"openspec/changes/x/.comet.yaml": "phase: design\n"}, ("passed", "phase=design")),
        ({"openspec/changes/x/.comet.yaml": "phase: dreaming\n"}, ("failed", "unrecognised phase: dreaming")),
        ({"openspec/changes/x/.comet.yaml": "workflow: full\n"}, ("failed", "no 'phase:' field in .comet.yaml")),
        (
            {"openspec/changes/x/.comet/run-state.json": '{"runId": "r1", "status": "completed"}'},
            ("passed", "run-state status=completed"),
        ),
        (
            {"openspec/changes/x/.comet/run-state.json": '{"runId": "r1", "status": "running"}'},
            ("failed", "run-state.json is neither completed nor at a step (x)"),
        ),
        (
            {f"{CHANGE}/proposal.md": "p", f"{CHANGE}/tasks.md": "t"},
            ("passed", "phase=archived"),
        ),
    ],
)
def test_the_state_check_reads_the_workflow_state(
    workspace: Path, files: dict[str, str], expected: tuple[str, str]
) -> None:
    write(workspace, files)

    result = comet_checks.check_comet_state()

    assert (result["status"], result["message"]) == expected


def test_tests_written_ignores_hidden_folders_and_needs_an_assert(workspace: Path) -> None:
    write(workspace, {".eval-validation/test_check.py": "assert 1\n", ".claude/skills/s/test_x.py": "assert 1\n"})
    assert comet_checks.check_tests_written()["message"] == "no test files written by the agent"
    write(workspace, {"test_app.py": "def test_a():\n    pass\n"})
    assert comet_checks.check_tests_written()["message"] == "1 test file(s) but none with assertions"


def test_checkpoint_of_the_engine_must_match_its_state(workspace: Path) -> None:
    state = {"runId": "r1", "status": "completed", "iteration": 3, "trajectoryBytes": 120}
    digest = engine_digest({k: v for k, v in state.items() if k != "trajectoryBytes"})
    write(
        workspace,
        {
            f"{CHANGE}/proposal.md": "p",
            f"{CHANGE}/.comet/run-state.json": json.dumps(state),
            f"{CHANGE}/.comet/checkpoint.json": json.dumps({"runId": "r1", "stateDigest": digest}),
            f"{CHANGE}/.comet/trajectory.jsonl": '{"type": "started"}\n{"type": "done"}\n',
        },
    )

    assert comet_checks.state_digest(state) == digest  # the stdlib copy agrees with the engine
    assert by_name(comet_checks.run_recovery_checks()) == {
        "checkpoint": ("passed", "checkpoint=valid"),
        "trajectory": ("passed", "trajectory=exists"),
    }
    (workspace / CHANGE / ".comet" / "run-state.json").write_text(json.dumps({**state, "status": "running"}))
    (workspace / CHANGE / ".comet" / "trajectory.jsonl").write_text("{broken\n")
    assert by_name(comet_checks.run_recovery_checks()) == {
        "checkpoint": ("failed", "checkpoint=invalid (made from another state than run-state.json)"),
        "trajectory": ("failed", "trajectory=corrupt (trajectory.jsonl line 1 is not JSON)"),
    }


def test_the_original_layouts_checkpoint(workspace: Path) -> None:
    checkpoint = {"runId": "r1", "contextHash": None, "artifactsHash": "sha256:ab", "createdAt": "2026-01-01"}
    write(workspace, {f"{CHANGE}/proposal.md": "p", f"{CHANGE}/.comet/checkpoint.json": json.dumps(checkpoint)})

    assert comet_checks.check_checkpoint()["message"] == "checkpoint=valid"
    (workspace / CHANGE / ".comet" / "checkpoint.json").write_text('{"runId": "r1"}')
    assert comet_checks.check_checkpoint()["status"] == "failed"


def test_write_results_writes_the_harness_shape_and_exits_1_on_a_failure(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = [comet_checks._passed("a", "fine"), comet_checks._failed("b", "broken")]

    with pytest.raises(SystemExit) as exited:
        comet_checks.write_results(results)

    assert exited.value.code == 1
    assert json.loads((workspace / "_test_results.json").read_text()) == {
        "checks": [
            {"name": "a", "status": "passed", "reason": "fine"},
            {"name": "b", "status": "failed", "reason": "broken"},
        ]
    }
    assert "1/2 checks passed" in capsys.readouterr().out
    assert comet_checks.write_results([comet_checks._passed("a")]) == 0


def test_the_installed_copy_imports_by_the_original_names_without_comet_eval(tmp_path: Path) -> None:
    lib, ws = tmp_path / "lib", tmp_path / "ws"
    write_shim(lib)
    write(ws, FULL_RUN)
    script = tmp_path / "validator.py"
    script.write_text(
        "from comet_checks import run_comet_checks, write_results, _passed, _failed, WORKSPACE\n"
        "from scaffold.python.validation.core import load_test_context\n"
        "import comet_checks, scaffold.python.validation.comet_workflow as original\n"
        "assert original is comet_checks, 'one module under both names'\n"
        "assert str(WORKSPACE) == __import__('os').getcwd()\n"
        "write_results([*run_comet_checks(), _passed('mine', 'ok')])\n"
    )

    # -S: no site-packages, so nothing of this checkout's installed comet-eval can be imported.
    done = subprocess.run(
        [sys.executable, "-S", str(script)],
        cwd=ws,
        env={"PATH": os.environ["PATH"], "PYTHONPATH": str(lib)},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )

    assert done.returncode == 0, done.stderr
    checks = json.loads((ws / "_test_results.json").read_text())["checks"]
    assert [c["name"] for c in checks] == [
        "openspec_artifacts", "comet_state", "workflow_phases", "tests_written", "mine",
    ]  # fmt: skip
    assert {rel for rel, _ in shim_files()} >= {
        "comet_checks.py",
        "scaffold/python/validation/comet_checks.py",
        "scaffold/python/validation/comet_workflow.py",
    }

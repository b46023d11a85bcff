"""Validation: result parsing, and real scripts in real workspaces (crash, timeout, exit codes)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from scaffold.catalog.tasks import load_task
from scaffold.experiment.cases import Case
from scaffold.validation.results import ValidationCheck, ValidationOutcome, parse_results
from scaffold.validation.runner import validate
from scaffold.workspaces.layout import VALIDATION_DIR
from scaffold.workspaces.local import LocalBackend
from tests.support.factories import TaskFactory, make_runner

# The example validation script of the original Comet eval's documentation, verbatim.
SEED_SCRIPT = """from pathlib import Path
from scaffold.python.validation.core import write_test_results

def main():
    passed = []
    failed = []

    # 检查产物是否存在
    result = Path("result.md")
    if not result.exists():
        write_test_results({"passed": [], "failed": ["result.md missing"]})
        return

    text = result.read_text(encoding="utf-8")

    # 检查内容
    if "# My Task Result" in text:
        passed.append("heading present")
    else:
        failed.append("heading missing")

    write_test_results({"passed": passed, "failed": failed})

if __name__ == "__main__":
    main()
"""


class TestParseResults:
    def test_passed_failed_lists(self) -> None:
        checks = parse_results(json.dumps({"passed": ["a", "b"], "failed": ["c"]}), "", "script:x.py")
        assert checks == [
            ValidationCheck("a", "passed", "script:x.py"),
            ValidationCheck("b", "passed", "script:x.py"),
            ValidationCheck("c", "failed", "script:x.py"),
        ]

    def test_the_original_comet_evals_check_and_message_keys(self) -> None:
        text = json.dumps({"checks": [{"check": "phases", "passed": False, "message": "3 of 5"}]})
        assert parse_results(text, "", "s") == [ValidationCheck("phases", "failed", "s", "3 of 5")]

    def test_checks_list_with_statuses_and_reasons(self) -> None:
        text = json.dumps(
            {
                "checks": [
                    {"name": "a", "status": "PASS"},
                    {"name": "b", "status": "failed", "reason": "wrong"},
                    {"name": "c", "status": "skipped"},
                    {"name": "d", "passed": True},
                    {"name": "e", "status": "maybe"},
                ]
            }
        )
        checks = parse_results(text, "", "s")
        assert checks is not None
        assert [(c.name, c.status) for c in checks] == [
            ("a", "passed"),
            ("b", "failed"),
            ("c", "skipped"),
            ("d", "passed"),
            ("e", "failed"),
        ]
        assert checks[1].reason == "wrong"
        assert "unknown status 'maybe'" in checks[4].reason

    def test_falls_back_to_last_json_line_of_stdout(self) -> None:
        stdout = 'noise\n{"passed": ["old"]}\nmore noise\n{"failed": ["new"]}\ntrailing text\n'
        checks = parse_results(None, stdout, "s")
        assert checks == [ValidationCheck("new", "failed", "s")]

    def test_no_results_anywhere_is_none(self) -> None:
        assert parse_results(None, "all good\n{not json}\n", "s") is None

    def test_invalid_results_file_is_a_failed_check(self) -> None:
        checks = parse_results("{oops", "", "s")
        assert checks is not None and checks[0].status == "failed"
        assert "not valid JSON" in checks[0].reason

    def test_results_of_the_wrong_shape_are_a_failed_check(self) -> None:
        checks = parse_results(json.dumps({"ok": True}), "", "s")
        assert checks is not None and checks[0].status == "failed"
        checks = parse_results(json.dumps({"checks": [{"status": "passed"}, "x"]}), "", "s")
        assert checks is not None and all(c.status == "failed" for c in checks)

    def test_outcome_pass_rate_ignores_skipped(self) -> None:
        outcome = ValidationOutcome(
            (
                ValidationCheck("a", "passed", "s"),
                ValidationCheck("b", "skipped", "s"),
                ValidationCheck("c", "failed", "s"),
            )
        )
        assert outcome.pass_rate == 0.5
        assert not outcome.all_passed
        assert ValidationOutcome().pass_rate is None
        assert not ValidationOutcome().all_passed  # nothing checked is not a pass


def _validate(
    factory: TaskFactory,
    tmp_path: Path,
    scripts: dict[str, str],
    *,
    workspace_files: dict[str, str],
    **sections: dict[str, object],
) -> ValidationOutcome:
    folder = factory.task("t", scripts=scripts, **sections)
    task = load_task(folder)
    workspace = LocalBackend(tmp_path / "ws").create(task, "t")
    for rel, text in workspace_files.items():
        workspace.write_text(rel, text)
    return validate(task, workspace, tmp_path / "logs")


class TestScripts:
    def test_seed_example_script_runs_unchanged(self, factory: TaskFactory, tmp_path: Path) -> None:
        section = {"validation": {"test_scripts": ["test_my_task.py"]}}
        good = _validate(
            factory,
            tmp_path,
            {"test_my_task.py": SEED_SCRIPT},
            workspace_files={"result.md": "# My Task Result\n- a\n"},
            **section,
        )
        assert [(c.name, c.status) for c in good.checks] == [("heading present", "passed")]
        bad = _validate(
            factory, tmp_path, {"test_my_task.py": SEED_SCRIPT}, workspace_files={"result.md": "# Other\n"}, **section
        )
        assert [(c.name, c.status) for c in bad.checks] == [("heading missing", "failed")]
        missing = _validate(factory, tmp_path, {"test_my_task.py": SEED_SCRIPT}, workspace_files={}, **section)
        assert [(c.name, c.status) for c in missing.checks] == [("result.md missing", "failed")]

    def test_crashing_script_is_a_failed_check_with_its_reason(self, factory: TaskFactory, tmp_path: Path) -> None:
        outcome = _validate(
            factory, tmp_path, {"check.py": "raise RuntimeError('boom in validator')\n"}, workspace_files={}
        )
        (check,) = outcome.checks
        assert check.status == "failed" and check.name == "check.py"
        assert "exited with code 1" in check.reason and "boom in validator" in check.reason

    def test_timeout_is_a_failed_check(self, factory: TaskFactory, tmp_path: Path) -> None:
        outcome = _validate(
            factory,
            tmp_path,
            {"check.py": "import time\ntime.sleep(30)\n"},
            workspace_files={},
            validation={"timeout": 0.5},
        )
        (check,) = outcome.checks
        assert check.status == "failed" and "timed out after 0.5s" in check.reason

    def test_exit_code_alone_decides_without_results(self, factory: TaskFactory, tmp_path: Path) -> None:
        outcome = _validate(
            factory,
            tmp_path,
            {"ok.sh": "exit 0\n", "bad.sh": "echo nope >&2; exit 3\n"},
            workspace_files={},
            validation={"test_scripts": ["ok.sh", "bad.sh"]},
        )
        assert [(c.name, c.status) for c in outcome.checks] == [("ok.sh", "passed"), ("bad.sh", "failed")]
        assert outcome.checks[1].reason == "exited with code 3: nope"

    def test_nonzero_exit_after_only_passes_adds_a_failure(self, factory: TaskFactory, tmp_path: Path) -> None:
        script = textwrap.dedent("""\
            import sys
            from scaffold.python.validation.core import write_test_results
            write_test_results({"passed": ["looked fine"]})
            sys.exit(2)
        """)
        outcome = _validate(factory, tmp_path, {"check.py": script}, workspace_files={})
        assert [c.status for c in outcome.checks] == ["passed", "failed"]

    def test_each_script_gets_a_fresh_results_file(self, factory: TaskFactory, tmp_path: Path) -> None:
        writer = (
            'from scaffold.python.validation.core import write_test_results\nwrite_test_results({"passed": ["a"]})\n'
        )
        outcome = _validate(
            factory,
            tmp_path,
            {"one.py": writer, "two.py": "print('no results')\n"},
            workspace_files={},
            validation={"test_scripts": ["one.py", "two.py"]},
        )
        # two.py must not be credited with one.py's results file
        assert [(c.name, c.status) for c in outcome.checks] == [("a", "passed"), ("two.py", "passed")]
        assert outcome.checks[1].reason == "exited 0 without a results file"

    def test_run_checks_helper(self, factory: TaskFactory, tmp_path: Path) -> None:
        script = textwrap.dedent("""\
            import sys
            from scaffold.python.validation.core import run_checks
            def good(): pass
            def bad(): assert 1 == 2, "one is not two"
            def crash(): {}["k"]
            sys.exit(run_checks({"good": good, "bad": bad, "crash": crash}))
        """)
        outcome = _validate(factory, tmp_path, {"check.py": script}, workspace_files={})
        assert [(c.name, c.status) for c in outcome.checks] == [
            ("good", "passed"),
            ("bad", "failed"),
            ("crash", "failed"),
        ]
        assert outcome.checks[1].reason == "one is not two"
        assert outcome.checks[2].reason.startswith("KeyError")

    def test_artifacts_are_checked_and_validation_files_arrive_only_now(
        self, factory: TaskFactory, tmp_path: Path
    ) -> None:
        outcome = _validate(
            factory,
            tmp_path,
            {"check.py": "import pathlib; assert pathlib.Path('.eval-validation/check.py').exists()\n"},
            workspace_files={"out/a.txt": "x"},
            validation={"target_artifacts": ["out/*.txt", "missing.md"]},
            evaluation={"expected_artifacts": ["out/**/*.txt", "nope/*"]},
        )
        by_name = {c.name: c for c in outcome.checks}
        assert by_name["artifact out/*.txt"].status == "passed"
        assert by_name["artifact missing.md"].status == "failed"
        assert by_name["check.py"].status == "passed"
        assert outcome.expected_artifacts == {"out/**/*.txt": ("out/a.txt",), "nope/*": ()}


def test_agent_never_sees_validation_files(factory: TaskFactory, tmp_path: Path) -> None:
    # solve.sh records what it can see; validation is copied in only after the agent finished.
    factory.task("t", solve=f"ls -a > seen.txt; test ! -e {VALIDATION_DIR}; echo done > out.txt\n")
    runner = make_runner([factory.tasks_dir], [factory.treatments_dir], tmp_path, keep_workspaces="all")
    outcome = runner.run(Case("t", "CONTROL", 1))
    assert outcome.record.verdict == "passed"
    seen = (Path(outcome.record.workspace.path) / "seen.txt").read_text()
    assert VALIDATION_DIR not in seen and "check.py" not in seen


@pytest.mark.parametrize("status", ["passed", "failed"])
def test_validation_logs_are_kept_with_the_trial(factory: TaskFactory, tmp_path: Path, status: str) -> None:
    script = f"print('hello from validation'); import json; print(json.dumps({{'{status}': ['x']}}))\n"
    factory.task("t", scripts={"check.py": script})
    runner = make_runner([factory.tasks_dir], [factory.treatments_dir], tmp_path)
    outcome = runner.run(Case("t", "CONTROL", 1))
    log = outcome.record_path.parent / "validation" / "check.py.stdout.log"
    assert "hello from validation" in log.read_text()
    assert outcome.record.verdict == status


def test_results_written_by_several_threads_at_once_never_collide(tmp_path: Path) -> None:
    """Each writer has a temporary file of its own: the results file is always one whole document."""
    import json
    import threading

    from scaffold.python.validation.core import write_test_results

    target = tmp_path / "_test_results.json"
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for i in range(50):
                write_test_results({"passed": [f"writer {n} round {i}"]}, target)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert json.loads(target.read_text())["passed"][0].startswith("writer ")
    assert [p.name for p in tmp_path.iterdir()] == ["_test_results.json"]  # no temporary file left
    assert target.stat().st_mode & 0o777 == 0o644

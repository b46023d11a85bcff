"""The original Comet eval's task folders load and run unchanged (tests/data/original-tasks): a ``[template]``
section, ``test_scripts`` as a string, no ``solution/solve.sh`` (the oracle refuses such a task, by name),
an index.yaml whose descriptions differ from task.toml's (a warning; task.toml wins), validators importing
``load_test_context`` and ``comet_checks``."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from scaffold.catalog.builtin import BUILTIN_TASKS_DIR, SUITES, builtin_folders
from scaffold.catalog.tasks import load_catalog
from scaffold.catalog.treatments import load_treatments
from scaffold.errors import Problem
from scaffold.experiment.cases import Broken, Case, select_cases
from scaffold.session import refuse_without_solution
from tests.support.factories import REPO, TaskFactory

ORIGINAL = REPO / "tests" / "data" / "original-tasks"


def test_the_original_layout_loads_with_warnings_only() -> None:
    catalog = load_catalog([ORIGINAL])

    assert catalog.problems() == []
    assert list(catalog.tasks) == ["comet-api-cache-ttl", "comet-fix-median", "word-count"]
    assert {t.format for t in catalog.tasks.values()} == {"comet"}
    median = catalog.tasks["comet-fix-median"]
    assert median.spec.validation.test_scripts == ("test_fix_median.py",)  # written as a string
    assert dict(median.template) == {"source": "python-stats", "variables": ["run_id"]}
    assert median.spec.metadata.description.startswith("Fix median() for even-length")  # task.toml wins
    for task in catalog.tasks.values():
        (warning,) = task.warnings
        assert warning.key == f"tasks[{task.name}].description"
        assert "task.toml wins" in warning.message
    assert not catalog.tasks["comet-api-cache-ttl"].has_solution
    assert catalog.tasks["word-count"].has_solution


def test_a_template_that_is_not_a_table_is_a_problem(factory: TaskFactory) -> None:
    folder = factory.task("templated")
    (folder / "task.toml").write_text('template = "python"\n' + (folder / "task.toml").read_text())

    catalog = load_catalog([factory.tasks_dir])

    (problem,) = catalog.broken["templated"]
    assert (problem.key, problem.value, problem.message) == ("[template]", "python", "expected a table")


def test_builtin_tasks_must_ship_a_solution(tmp_path: Path) -> None:
    assert builtin_folders([ORIGINAL, BUILTIN_TASKS_DIR, tmp_path]) == [BUILTIN_TASKS_DIR]
    strict = load_catalog([ORIGINAL], require_solution=[ORIGINAL])
    (problem,) = strict.broken["comet-api-cache-ttl"]
    assert problem.file == ORIGINAL / "comet-api-cache-ttl" / "solution" / "solve.sh"


def test_the_oracle_refuses_a_task_without_a_solution_by_name() -> None:
    catalog = load_catalog([ORIGINAL])
    items = select_cases(catalog, load_treatments([]), count=2)

    refused = refuse_without_solution(items, catalog)

    assert [item.id for item in refused] == [
        "comet-api-cache-ttl-INVALID",
        "comet-fix-median-CONTROL-r1",
        "comet-fix-median-CONTROL-r2",
        "word-count-CONTROL-r1",
        "word-count-CONTROL-r2",
    ]
    broken = refused[0]
    assert isinstance(broken, Broken)
    (problem,) = broken.problems
    assert problem == Problem(
        ORIGINAL / "comet-api-cache-ttl" / "solution" / "solve.sh",
        "the oracle agent runs the task's reference solution and task 'comet-api-cache-ttl' has none; add "
        "solution/solve.sh or run the task with another --agent",
    )
    assert all(isinstance(item, Case) for item in refused[1:])


def test_the_original_tasks_run_with_the_oracle_on_the_local_backend(pytester: pytest.Pytester) -> None:
    (pytester.path / "test_tasks.py").write_text(SUITES["local"].read_text())
    pytester.makeini("[pytest]\n")

    result = pytester.runpytest(
        f"--tasks-dir={ORIGINAL}",
        "--agent=oracle",
        "--backend=local",
        f"--workspace-root={pytester.path / 'ws'}",
        f"--logs-dir={pytester.path / 'logs'}",
        "-W",
        "default::scaffold.errors.TaskWarning",
        "-rA",
    )

    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*comet-api-cache-ttl/solution/solve.sh: the oracle agent runs the task's reference solution and task "
            "'comet-api-cache-ttl' has none*",
            "*PASSED test_tasks.py::test_task[[]comet-fix-median-CONTROL-r1[]]*",
            "*PASSED test_tasks.py::test_task[[]word-count-CONTROL-r1[]]*",
        ]
    )
    # Each disagreeing index entry is said once, at collection, as a TaskWarning.
    assert result.stdout.str().count("TaskWarning: ") == 2  # the two tasks that run
    records = sorted((pytester.path / "logs").glob("experiments/*/trials/*/record.json"))
    assert [r.parent.name for r in records] == ["comet-fix-median-CONTROL-r1", "word-count-CONTROL-r1"]
    median = records[0].read_text()
    for check in (
        "openspec_artifacts",
        "comet_state",
        "workflow_phases",
        "tests_written",
        "median_fix",
        "test_context",
    ):
        assert f'"name": "{check}"' in median


@pytest.mark.docker
@pytest.mark.slow
def test_the_original_tasks_run_on_docker_from_their_own_base_image(
    pytester: pytest.Pytester, docker_base_image: str
) -> None:
    # Their Dockerfiles say FROM python:3.12-slim and pip install pytest at build time: built as written,
    # the base through --image-alias, pip through the host's CA bundle.
    (pytester.path / "test_tasks.py").write_text(SUITES["local"].read_text())
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest_subprocess(
        f"--tasks-dir={ORIGINAL}",
        "--agent=oracle",
        "--backend=docker",
        f"--image-alias=python:3.12-slim={docker_base_image}",
        f"--workspace-root={pytester.path / 'ws'}",
        f"--logs-dir={pytester.path / 'logs'}",
        "-W",
        "default::scaffold.errors.TaskWarning",
        "-rA",
    )
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*PASSED test_tasks.py::test_task[[]comet-fix-median-CONTROL-r1[]]*"])


def test_the_original_validator_fails_what_the_agent_did_not_do(tmp_path: Path) -> None:
    # The nop agent leaves the workspace as it was: the comet checks and the fix fail, with reasons (the
    # environment's own test_stats.py counts as tests written, as in the original).
    from tests.support.factories import make_runner

    runner = make_runner([ORIGINAL], [], tmp_path, agent="nop")
    record = runner.run(Case("comet-fix-median", "CONTROL", 1)).record

    assert record.verdict == "failed"
    failed = {c.name: c.reason for c in record.checks if c.status == "failed"}
    assert set(failed) == {"openspec_artifacts", "comet_state", "workflow_phases", "median_fix"}
    assert failed["openspec_artifacts"] == "openspec/changes/ directory not found"
    assert textwrap.shorten(failed["median_fix"], 40).startswith("median([4, 1, 3, 2])")

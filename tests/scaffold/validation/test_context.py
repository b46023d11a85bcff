"""Task outputs and the test context: task.toml's outputs, validators' outputs over them, and
``_test_context.json`` read by a validator through ``load_test_context`` in real trials (local, docker)."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scaffold.agents import create_agent
from scaffold.catalog.tasks import load_task
from scaffold.errors import TaskError
from scaffold.experiment.cases import Case
from scaffold.python.validation.core import load_test_context
from scaffold.validation.results import parse_outputs
from scaffold.validation.runner import validate
from scaffold.workspaces.layout import CONTEXT_FILE
from scaffold.workspaces.local import LocalBackend
from tests.support.factories import TaskFactory, make_runner

# A validator as the original's authoring validators are written: it reads its context, checks the
# package path it names, and reports a check per value it saw (the test reads them back from the record).
CONTEXT_CHECK = textwrap.dedent(
    """\
    import json
    from pathlib import Path
    from scaffold.python.validation.core import load_test_context, write_test_results

    context = load_test_context()
    Path("seen.json").write_text(json.dumps(context))
    package = Path(context["outputs"]["skill_package_path"])
    keys = ("task", "treatment", "trial", "run_id")
    write_test_results(
        {
            "checks": [
                {"name": f"{key}={context[key]}", "status": "passed"} for key in keys
            ]
            + [{"name": "package exists", "status": "passed" if package.is_dir() else "failed"}],
            "outputs": {"reported": "yes", "skill_package_path": str(Path.cwd() / package)},
        }
    )
    """
)
OUTPUTS = {"evaluation.outputs": {"skill_package_path": "generated-skill", "kept": "from-task"}}


def test_task_outputs_are_a_strict_table_of_strings(factory: TaskFactory) -> None:
    task = load_task(factory.task("ok", **OUTPUTS))
    assert task.spec.evaluation.outputs == {"skill_package_path": "generated-skill", "kept": "from-task"}
    with pytest.raises(TaskError, match=r"\[evaluation\] outputs.n: expected a string \(got 3\)"):
        load_task(factory.task("bad", **{"evaluation.outputs": {"n": 3}}))
    with pytest.raises(TaskError, match=r"\[evaluation\] outputs"):
        load_task(factory.task("empty", **{"evaluation.outputs": {"x": ""}}))


def test_parse_outputs_reads_the_results_object_and_names_bad_entries() -> None:
    text = json.dumps({"passed": ["a"], "outputs": {"p": "pkg", "n": 1}})
    outputs, problems = parse_outputs(text, "", "script:c.py")
    assert outputs == {"p": "pkg"}
    assert [(c.name, c.status) for c in problems] == [("outputs.n", "failed")]
    assert parse_outputs(None, 'noise\n{"passed": ["a"], "outputs": {"p": "out"}}\n', "s") == ({"p": "out"}, [])
    assert parse_outputs(json.dumps({"passed": []}), "", "s") == ({}, [])
    _, problems = parse_outputs(json.dumps({"passed": [], "outputs": ["x"]}), "", "s")
    assert [c.reason for c in problems] == ["'outputs' must be an object of strings"]


def test_validator_outputs_override_the_tasks_and_the_context_is_no_artifact(
    factory: TaskFactory, tmp_path: Path
) -> None:
    folder = factory.task(
        "t",
        scripts={"check.py": CONTEXT_CHECK},
        validation={"target_artifacts": ["*.json"]},
        evaluation={"expected_artifacts": ["_test_context.*"]},
        **OUTPUTS,
    )
    task = load_task(folder)
    workspace = LocalBackend(tmp_path / "ws").create(task, "t")
    workspace.write_text("generated-skill/SKILL.md", "x")
    workspace.write_text(CONTEXT_FILE, "planted by the agent")
    context = {"task": "t", "treatment": "CONTROL", "trial": 2, "run_id": "exp-t"}
    outcome = validate(task, workspace, tmp_path / "logs", context)
    # The validator's absolute path inside the workspace comes back workspace-relative.
    assert outcome.outputs == {"skill_package_path": "generated-skill", "kept": "from-task", "reported": "yes"}
    assert outcome.checks[0].name == "artifact *.json" and outcome.checks[0].status == "failed"
    assert outcome.expected_artifacts == {"_test_context.*": ()}
    seen = json.loads(workspace.read_text("seen.json") or "")
    assert seen == {**context, "outputs": {"skill_package_path": "generated-skill", "kept": "from-task"}}


def test_load_test_context_says_who_writes_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"the harness writes _test_context\.json"):
        load_test_context()
    (tmp_path / "_test_context.json").write_text("[1]")
    with pytest.raises(ValueError, match="expected a JSON object"):
        load_test_context()


def _check_record(record: Any) -> None:
    assert record.verdict == "passed", (record.errors, record.checks)
    names = [c.name for c in record.checks]
    assert names == [
        "task=ctx",
        "treatment=CONTROL",
        "trial=1",
        f"run_id={record.experiment_id}-{record.case_id}",
        "package exists",
    ]


def _context_task(factory: TaskFactory) -> None:
    factory.task(
        "ctx",
        scripts={"check.py": CONTEXT_CHECK},
        solve="mkdir -p generated-skill && echo done > generated-skill/SKILL.md\n",
        **OUTPUTS,
    )


def test_a_validator_reads_its_context_in_a_local_trial(factory: TaskFactory, tmp_path: Path) -> None:
    _context_task(factory)
    runner = make_runner([factory.tasks_dir], [factory.treatments_dir], tmp_path)
    _check_record(runner.run(Case("ctx", "CONTROL", 1)).record)


@pytest.fixture
def docker_backend(docker_base_image: str, tmp_path: Path) -> Iterator[Any]:
    from scaffold.workspaces.docker import DockerBackend

    made = DockerBackend(tmp_path / "ws")
    yield made
    made.close()


@pytest.mark.docker
def test_a_validator_reads_its_context_in_a_docker_trial(
    docker_backend: Any, factory: TaskFactory, tmp_path: Path
) -> None:
    from tests.support.docker import docker_runner

    _context_task(factory)
    runner = docker_runner([factory.tasks_dir], factory, tmp_path, docker_backend, create_agent("oracle"))
    _check_record(runner.run(Case("ctx", "CONTROL", 1)).record)

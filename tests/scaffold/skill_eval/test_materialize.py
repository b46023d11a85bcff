"""Inline eval.yaml tasks as real task folders, run for real after the agent on both backends."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from scaffold.agents import create_agent
from scaffold.catalog.builtin import BUILTIN_TASKS_DIR, builtin_environment
from scaffold.catalog.tasks import load_catalog, load_task
from scaffold.catalog.treatments import load_treatments
from scaffold.errors import SelectionError
from scaffold.experiment import Experiment
from scaffold.experiment.cases import Case
from scaffold.skill_eval.manifest import API_VERSION, KIND, Manifest
from scaffold.skill_eval.manifest_check import load_manifest
from scaffold.skill_eval.materialize import CHECK_SCRIPT, plan_tasks, write_tasks
from scaffold.trial.runner import Runner, Settings
from scaffold.workspaces.backends import create_backend
from tests.support.factories import TaskFactory

BUILTIN_DIR = BUILTIN_TASKS_DIR
ENVIRONMENT = builtin_environment([BUILTIN_DIR])

# Every expect kind, each with a check that the "good" solution passes and the "bad" one fails.
EXPECT = {
    "files": ["report.md", "data/in.json"],
    "contains": {"report.md": ["# Report", "done"]},
    "json": [
        {"file": "out.json", "path": "$.status", "equals": "ok"},
        {"file": "out.json", "path": "$.items[1]['the count']", "equals": 2},
        {"file": "data/in.json", "path": "$.seed", "equals": [1, True, None]},
    ],
    "commands": [
        {"run": "test -s report.md && grep -q done report.md"},
        {"run": "python3 -c 'import json; json.load(open(\"out.json\"))'", "timeout": 30},
    ],
}
GOOD = """cat > report.md <<'EOF'
# Report
All done.
EOF
printf '{"status": "ok", "items": [{}, {"the count": 2}]}' > out.json
"""
BAD = """printf '# Report\\n' > report.md
printf '{"status": "failed", "items": [{}, {"the count": true}]}' > out.json
"""


def skill_package(tmp_path: Path, **evaluation: Any) -> Path:
    root = tmp_path / "my-skill"
    (root / "comet").mkdir(parents=True)
    (root / "SKILL.md").write_text("---\nname: my-skill\ndescription: d\n---\nUse it.\n")
    (root / "ws" / "data").mkdir(parents=True)
    (root / "ws" / "data" / "in.json").write_text('{"seed": [1, true, null]}')
    (root / "ws" / "Dockerfile").write_text("FROM scratch\n")  # never replaces the environment's
    data = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": "demo"},
        "skill": {},
        "evaluation": evaluation,
    }
    path = root / "comet" / "eval.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def every_kind(tmp_path: Path) -> Manifest:
    path = skill_package(
        tmp_path,
        tasks=[
            {
                "name": "inline-all",
                "prompt": "Write report.md and out.json.",
                "workspace": "ws",
                "expect": EXPECT,
                "rubric": ["Clear."],
            }
        ],
    )
    return load_manifest(path, builtin_tasks=["generic-skill-smoke"])


def with_solution(tasks_dir: Path, name: str, script: str) -> None:
    (tasks_dir / name / "solution" / "solve.sh").write_text("set -eu\n" + script)


EXPECTED_CHECKS = [
    "file report.md exists",
    "file data/in.json exists",
    "report.md contains '# Report'",
    "report.md contains 'done'",
    'out.json $.status equals "ok"',
    "out.json $.items[1]['the count'] equals 2",
    "data/in.json $.seed equals [1, true, null]",
    "command 1: test -s report.md && grep -q done report.md",
    "command 2: python3 -c 'import json; json.load(open(\"out.json\"))'",
]


def run_trial(tasks_dir: Path, tmp_path: Path, backend: Any, experiment: str) -> Any:
    runner = Runner(
        load_catalog([tasks_dir]),
        load_treatments([]),
        Experiment.under(tmp_path / "logs", experiment),
        Settings(backend=backend.name if hasattr(backend, "name") else "local", agent="oracle"),
        backend,
        create_agent("oracle"),
    )
    return runner.run(Case("inline-all", "CONTROL", 1)).record


# --- the folder -----------------------------------------------------------------------------------------------


def test_an_inline_task_becomes_a_valid_task_folder(tmp_path: Path) -> None:
    manifest = every_kind(tmp_path)
    dest = write_tasks(manifest, None, tmp_path / "tasks", environment=ENVIRONMENT)
    catalog = load_catalog([dest])
    assert catalog.problems() == [] and list(catalog.tasks) == ["inline-all"]
    task = catalog.tasks["inline-all"]
    assert task.instruction_path.read_text() == "Write report.md and out.json.\n"
    assert task.spec.evaluation.rubric_criteria == ("Clear.",)
    assert task.spec.evaluation.expected_artifacts == ("report.md", "data/in.json")
    assert task.spec.validation.test_scripts == (CHECK_SCRIPT,)
    assert task.spec.validation.timeout == 120 + 120 + 30
    assert task.spec.environment.timeout_sec == 900
    # The built-in environment, the workspace's files over it, its Dockerfile kept.
    assert (task.environment_dir / "README.md").is_file()
    assert (task.environment_dir / "data" / "in.json").read_text() == '{"seed": [1, true, null]}'
    assert (task.environment_dir / "Dockerfile").read_text() == (ENVIRONMENT / "Dockerfile").read_text()


def test_planned_tasks_equal_written_ones_and_write_nothing(tmp_path: Path) -> None:
    manifest = every_kind(tmp_path)
    planned = plan_tasks(manifest, None, tmp_path / "tasks", environment=ENVIRONMENT)
    assert not (tmp_path / "tasks").exists()
    written = load_catalog([write_tasks(manifest, None, tmp_path / "tasks", environment=ENVIRONMENT)]).tasks
    assert planned["inline-all"].spec == written["inline-all"].spec
    assert planned["inline-all"].root == written["inline-all"].root


def test_interaction_profile_and_required_skills_reach_task_toml(tmp_path: Path) -> None:
    path = skill_package(
        tmp_path,
        tasks=[{"name": "t", "prompt": 'p "quoted" \x7f', "expect": {"files": ["a"]}}],
        requiredSkills=["my-skill"],
    )
    data = yaml.safe_load(path.read_text())
    data["skill"] = {"profile": "generic"}
    data["interaction"] = {
        "mode": "auto_user",
        "maxTurns": 4,
        "decisionPatterns": ["(?i)which"],
        "decisionReply": "the first",
    }
    path.write_text(yaml.safe_dump(data))
    manifest = load_manifest(path, builtin_tasks=())
    task = load_task(write_tasks(manifest, None, tmp_path / "tasks", environment=ENVIRONMENT) / "t")
    assert task.spec.evaluation.profile == "generic"
    assert task.spec.evaluation.required_skills == ("my-skill",)
    assert (task.spec.interaction.mode, task.spec.interaction.max_turns) == ("auto_user", 4)
    assert task.spec.interaction.decision_patterns == ("(?i)which",)
    assert task.spec.interaction.decision_reply == "the first"


@pytest.mark.parametrize(
    ("declared", "required", "expect_under_test"),
    [
        pytest.param({}, None, True, id="not set: the skill under test is required"),
        pytest.param({"requiredSkills": []}, (), False, id="[]: no skill is, the key is written"),
        pytest.param({"requiredSkills": ["other"]}, ("other",), True, id="named"),
    ],
)
def test_required_skills_absent_or_empty(
    tmp_path: Path, declared: dict[str, Any], required: tuple[str, ...] | None, expect_under_test: bool
) -> None:
    path = skill_package(tmp_path, tasks=[{"name": "t", "prompt": "p", "expect": {"files": ["a"]}}], **declared)
    manifest = load_manifest(path, builtin_tasks=())
    assert manifest.required_skills == required
    folder = write_tasks(manifest, None, tmp_path / "tasks", environment=ENVIRONMENT) / "t"
    evaluation = load_task(folder).spec.evaluation
    assert evaluation.required_skills == (required or ())
    assert evaluation.expect_skills_under_test is expect_under_test
    # Written only to opt out: the task.toml of every other manifest (and its content hash) is as it was.
    assert ("expect_skills_under_test" in (folder / "task.toml").read_text()) is not expect_under_test


def test_source_tasks_are_copied_as_they_are_and_selection_filters(tmp_path: Path) -> None:
    path = skill_package(tmp_path)
    root = path.parent.parent
    TaskFactory(root / "evals").task("own")
    data = yaml.safe_load(path.read_text())
    data["evaluation"] = {
        "tasks": [{"source": "evals/tasks/own"}, {"name": "inline", "prompt": "p", "expect": {"files": ["a"]}}]
    }
    path.write_text(yaml.safe_dump(data))
    manifest = load_manifest(path, builtin_tasks=())
    dest = write_tasks(manifest, ["own"], tmp_path / "tasks", environment=ENVIRONMENT)
    assert sorted(p.name for p in dest.iterdir() if p.is_dir()) == ["own"]
    assert (dest / "own" / "task.toml").read_text() == (root / "evals" / "tasks" / "own" / "task.toml").read_text()
    assert load_catalog([dest]).problems() == []
    with pytest.raises(SelectionError, match="nope: not a task of"):
        write_tasks(manifest, ["nope"], tmp_path / "tasks", environment=ENVIRONMENT)


def test_a_rewrite_replaces_the_folder_and_a_foreign_folder_is_refused(tmp_path: Path) -> None:
    manifest = every_kind(tmp_path)
    dest = write_tasks(manifest, None, tmp_path / "tasks", environment=ENVIRONMENT)
    (dest / "inline-all" / "stray.txt").write_text("x")
    assert write_tasks(manifest, None, dest, environment=ENVIRONMENT) == dest
    assert (dest / "inline-all" / "stray.txt").exists()  # same inputs: the folder is reused as written
    (manifest.skill.root / "ws" / "new.txt").write_text("new")
    write_tasks(manifest, None, dest, environment=ENVIRONMENT)
    assert not (dest / "inline-all" / "stray.txt").exists()
    assert (dest / "inline-all" / "environment" / "new.txt").read_text() == "new"
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("mine")
    with pytest.raises(SelectionError, match="not empty and not written by comet eval"):
        write_tasks(manifest, None, foreign, environment=ENVIRONMENT)
    assert (foreign / "keep.txt").read_text() == "mine"


def test_builtin_environment_is_found_or_named(tmp_path: Path) -> None:
    assert builtin_environment([tmp_path, BUILTIN_DIR]) == BUILTIN_DIR / "generic-skill-smoke" / "environment"
    with pytest.raises(SelectionError, match="generic-skill-smoke"):
        builtin_environment([tmp_path])


# --- running, local backend ------------------------------------------------------------------------------------


@pytest.mark.parametrize("outcome", ["good", "bad"])
def test_every_expect_kind_passes_and_fails_on_the_local_backend(tmp_path: Path, outcome: str) -> None:
    dest = write_tasks(every_kind(tmp_path), None, tmp_path / "tasks", environment=ENVIRONMENT)
    with_solution(dest, "inline-all", GOOD if outcome == "good" else BAD)
    backend = create_backend("local", workspace_root=tmp_path / "ws")
    try:
        record = run_trial(dest, tmp_path, backend, f"exp-{outcome}")
    finally:
        backend.close()
    statuses = {c.name: c.status for c in record.checks if c.source == f"script:{CHECK_SCRIPT}"}
    assert list(statuses) == EXPECTED_CHECKS
    if outcome == "good":
        assert set(statuses.values()) == {"passed"}, record.checks
        assert record.verdict == "passed"
    else:
        failed = [name for name, status in statuses.items() if status == "failed"]
        assert failed == [
            "report.md contains 'done'",
            'out.json $.status equals "ok"',
            "out.json $.items[1]['the count'] equals 2",  # true is not 2 (nor 1): JSON types are compared
            "command 1: test -s report.md && grep -q done report.md",
        ]
        reasons = {c.name: c.reason for c in record.checks}
        assert reasons['out.json $.status equals "ok"'] == 'out.json $.status is "failed", expected "ok"'
        assert record.verdict == "failed"


def test_a_command_that_runs_too_long_fails_with_its_timeout(tmp_path: Path) -> None:
    path = skill_package(
        tmp_path,
        tasks=[{"name": "inline-all", "prompt": "p", "expect": {"commands": [{"run": "sleep 30", "timeout": 1}]}}],
    )
    dest = write_tasks(load_manifest(path, builtin_tasks=()), None, tmp_path / "tasks", environment=ENVIRONMENT)
    backend = create_backend("local", workspace_root=tmp_path / "ws")
    try:
        record = run_trial(dest, tmp_path, backend, "exp-timeout")
    finally:
        backend.close()
    (check,) = [c for c in record.checks if c.source == f"script:{CHECK_SCRIPT}"]
    assert (check.name, check.status, check.reason) == ("command 1: sleep 30", "failed", "timed out after 1s")


# --- running, Docker ----------------------------------------------------------------------------------------------


@pytest.fixture
def docker_backend(docker_base_image: str, tmp_path: Path) -> Iterator[Any]:
    from scaffold.workspaces.docker import DockerBackend

    made = DockerBackend(tmp_path / "ws")
    yield made
    made.close()


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("outcome", ["good", "bad"])
def test_every_expect_kind_passes_and_fails_in_docker(tmp_path: Path, docker_backend: Any, outcome: str) -> None:
    dest = write_tasks(every_kind(tmp_path), None, tmp_path / "tasks", environment=ENVIRONMENT)
    with_solution(dest, "inline-all", GOOD if outcome == "good" else BAD)
    runner = Runner(
        load_catalog([dest]),
        load_treatments([]),
        Experiment.under(tmp_path / "logs", f"exp-docker-{outcome}"),
        Settings(backend="docker", agent="oracle"),
        docker_backend,
        create_agent("oracle"),
    )
    record = runner.run(Case("inline-all", "CONTROL", 1)).record
    assert record.workspace.backend == "docker"
    statuses = {c.name: c.status for c in record.checks if c.source == f"script:{CHECK_SCRIPT}"}
    assert list(statuses) == EXPECTED_CHECKS
    passed = [name for name, status in statuses.items() if status == "passed"]
    if outcome == "good":
        assert passed == EXPECTED_CHECKS and record.verdict == "passed", record.checks
    else:
        assert len(passed) == len(EXPECTED_CHECKS) - 4 and record.verdict == "failed"

"""Harbor-format task folders (Terminal-Bench 2, SkillsBench) load natively: recognised by their layout,
named by their folder, their keys mapped onto ours (HARBOR_FORMAT.md), the rest kept, never an error."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scaffold.catalog.harbor import harbor_marker, parse_memory
from scaffold.catalog.tasks import TASK_FILE, load_catalog, load_task
from scaffold.catalog.treatments import CONTROL, TASK_SKILLS, Treatment, TreatmentCatalog
from scaffold.errors import Problem, SelectionError, TaskError
from scaffold.experiment.cases import Broken, select_cases
from scaffold.rubrics.profiles import resolve_profile
from tests.scaffold.catalog.test_loader_properties import toml_string, toml_value
from tests.support.factories import TaskFactory

TB2_TOML = """\
version = "1.0"

[metadata]
author_name = "Jane Doe"
author_email = "jane@example.com"
difficulty = "medium"
category = "software-engineering"
tags = ["python", "server"]
expert_time_estimate_min = 20.0
junior_time_estimate_min = 60.0

[verifier]
timeout_sec = 450.0

[agent]
timeout_sec = 1800.0

[environment]
build_timeout_sec = 900.0
cpus = 2
memory = "4G"
storage = "10G"
docker_image = "alexgshaw/kv-store:20251031"
"""


def harbor_task(
    root: Path,
    name: str,
    toml: str = TB2_TOML,
    *,
    instruction: str = "# Start the server\n\nIt must listen on port 5328.\n",
    skills: tuple[str, ...] = (),
    solution: bool = True,
    dockerfile: bool = True,
) -> Path:
    """A Harbor task folder as Terminal-Bench 2 and SkillsBench publish them (no index.yaml)."""
    folder = root / name
    (folder / "environment").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / TASK_FILE).write_text(toml)
    (folder / "instruction.md").write_text(instruction)
    if dockerfile:
        (folder / "environment" / "Dockerfile").write_text("FROM ubuntu:24.04\nWORKDIR /app\n")
    (folder / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    if solution:
        (folder / "solution").mkdir()
        (folder / "solution" / "solve.sh").write_text("#!/bin/bash\ntouch /app/done\n")
    for skill in skills:
        (folder / "environment" / "skills" / skill).mkdir(parents=True)
        (folder / "environment" / "skills" / skill / "SKILL.md").write_text(f"---\nname: {skill}\n---\n")
    return folder


def problems_of(folder: Path) -> list[Problem]:
    with pytest.raises(TaskError) as info:
        load_task(folder)
    return list(info.value.problems)


# --- recognising the format ----------------------------------------------------------------------


def test_terminal_bench_task_maps_onto_our_spec(tmp_path: Path) -> None:
    folder = harbor_task(tmp_path, "kv-store-grpc")

    task = load_task(folder)

    assert (task.name, task.format) == ("kv-store-grpc", "harbor")
    meta, env, validation = task.spec.metadata, task.spec.environment, task.spec.validation
    assert meta.name == "kv-store-grpc"  # Harbor 1.0 has no name: the folder is the name
    assert (meta.difficulty, meta.category, meta.tags) == ("medium", "software-engineering", ("python", "server"))
    assert meta.description == "Start the server"  # instruction.md's first line, without the heading mark
    assert meta.default_treatments == (CONTROL,)
    assert (env.timeout_sec, env.cpus, env.memory_mb) == (1800.0, 2.0, 4096)
    assert validation.timeout == 450.0
    assert validation.test_scripts == ()
    assert task.harbor is not None
    assert task.harbor.docker_image == "alexgshaw/kv-store:20251031"
    assert task.harbor.build_timeout_sec == 900.0
    assert task.harbor.allow_internet is True
    assert task.harbor.uv_shim == "auto"
    assert dict(task.harbor.unused) == {
        "version": "1.0",
        "metadata.author_name": "Jane Doe",
        "metadata.author_email": "jane@example.com",
        "metadata.expert_time_estimate_min": 20.0,
        "metadata.junior_time_estimate_min": 60.0,
        "environment.storage": "10G",
    }
    assert task.has_solution
    assert task.tests_dir == folder / "tests"


def test_skillsbench_task_gets_its_skills_as_a_treatment(tmp_path: Path) -> None:
    toml = """\
version = "1.0"
[metadata]
difficulty = "hard"
category = "data-processing"
tags = []
required_skills = ["xlsx"]
distractor_skills = ["pptx", "docx"]
[verifier]
timeout_sec = 600
[verifier.env]
OPENAI_API_KEY = "${OPENAI_API_KEY}"
[solution.env]
MODE = "oracle"
[agent]
timeout_sec = 900
[environment]
allow_internet = false
memory_mb = 8192
[environment.env]
TZ = "UTC"
[comet]
uv_shim = "always"
"""
    folder = harbor_task(tmp_path, "sales-pivot", toml, skills=("xlsx", "pptx"))

    task = load_task(folder)

    assert task.spec.metadata.default_treatments == (CONTROL, TASK_SKILLS)
    assert task.spec.evaluation.required_skills == ("xlsx",)
    assert task.spec.environment.memory_mb == 8192
    assert task.harbor is not None
    assert task.harbor.distractor_skills == ("pptx", "docx")
    assert task.harbor.verifier_env == (("OPENAI_API_KEY", "${OPENAI_API_KEY}"),)
    assert task.harbor.solution_env == (("MODE", "oracle"),)
    assert task.harbor.environment_env == (("TZ", "UTC"),)
    assert task.harbor.allow_internet is False
    assert task.harbor.uv_shim == "always"
    assert task.skills_dir == folder / "environment" / "skills"


def test_a_skills_folder_without_a_skill_gives_no_skills_treatment(tmp_path: Path) -> None:
    folder = harbor_task(tmp_path, "no-skills")
    (folder / "environment" / "skills" / "empty").mkdir(parents=True)

    assert load_task(folder).spec.metadata.default_treatments == (CONTROL,)


def test_schema_1_1_task_description_wins_over_the_instruction(tmp_path: Path) -> None:
    toml = 'version = "1.1"\n[task]\nname = "x/y"\ndescription = "From the task table"\nkeywords = ["a"]\n'
    task = load_task(harbor_task(tmp_path, "schema-11", toml))

    assert task.spec.metadata.description == "From the task table"
    assert task.harbor is not None
    assert dict(task.harbor.unused) == {"version": "1.1", "task.name": "x/y", "task.keywords": ["a"]}


def test_long_instruction_line_is_cut_for_the_description(tmp_path: Path) -> None:
    task = load_task(harbor_task(tmp_path, "long", 'version = "1.0"\n', instruction="\n\n" + "word " * 100))

    assert len(task.spec.metadata.description) == 200
    assert task.spec.metadata.description.endswith("...")


@pytest.mark.parametrize(
    "marker", ["[verifier]\ntimeout_sec = 10\n", "[agent]\ntimeout_sec = 10\n", 'version = "1.0"\n']
)
def test_each_marker_makes_a_harbor_task(tmp_path: Path, marker: str) -> None:
    assert load_task(harbor_task(tmp_path, "marked", marker)).format == "harbor"


def test_a_harbor_toml_without_tests_sh_is_read_as_ours_and_says_why(tmp_path: Path) -> None:
    folder = harbor_task(tmp_path, "no-verifier")
    (folder / "tests" / "test.sh").unlink()

    problems = problems_of(folder)

    hint = next(p for p in problems if p.file == folder / "tests" / "test.sh")
    assert "looks like Harbor's format (it has [verifier])" in hint.message
    assert any(p.key == "[verifier]" and p.message.startswith("unknown section") for p in problems)


def test_difficulty_unknown_becomes_our_default_and_is_kept(tmp_path: Path) -> None:
    toml = 'version = "1.0"\n[metadata]\ndifficulty = "unknown"\n'
    task = load_task(harbor_task(tmp_path, "unknown-level", toml))

    assert task.spec.metadata.difficulty == "medium"
    assert task.harbor is not None
    assert task.harbor.unused["metadata.difficulty"] == "unknown"


def test_a_comet_category_does_not_make_a_workflow_task(tmp_path: Path) -> None:
    # Our inference would give a category "comet" (or a name "comet-*") the comet-workflow profile; a Harbor
    # task has no workflow to score, so it keeps its category and gets the generic profile.
    toml = 'version = "1.0"\n[metadata]\ncategory = "comet"\n'
    task = load_task(harbor_task(tmp_path, "comet-lookalike", toml))

    assert task.spec.metadata.category == "comet"
    assert resolve_profile(task).name == "generic"


def test_memory_mb_wins_over_the_deprecated_memory(tmp_path: Path) -> None:
    toml = 'version = "1.0"\n[environment]\nmemory = "2G"\nmemory_mb = 512\n'
    task = load_task(harbor_task(tmp_path, "both-memories", toml))

    assert task.spec.environment.memory_mb == 512
    assert task.harbor is not None
    assert task.harbor.unused["environment.memory"] == "2G"


@pytest.mark.parametrize(
    ("toml", "key", "value", "message"),
    [
        ('[agent]\ntimeout_sec = "900"\n', "[agent] timeout_sec", "900", "expected a number of seconds"),
        ("[verifier]\ntimeout_sec = -1\n", "[verifier] timeout_sec", -1, "expected a number of seconds"),
        ('[environment]\nmemory = "lots"\n', "[environment] memory", "lots", 'expected a size such as "2G"'),
        ("[environment]\nmemory_mb = 1.5\n", "[environment] memory_mb", 1.5, "whole number of megabytes"),
        ("[environment]\ncpus = true\n", "[environment] cpus", True, "expected a number greater than 0"),
        ('[environment]\nallow_internet = "yes"\n', "[environment] allow_internet", "yes", "expected true or false"),
        ('[metadata]\ndifficulty = "extreme"\n', "[metadata] difficulty", "extreme", "easy, medium, hard or unknown"),
        ('[metadata]\ntags = "a"\n', "[metadata] tags", "a", "expected a list of strings"),
        ("[metadata]\nrequired_skills = [1]\n", "[metadata] required_skills", [1], "expected a list of strings"),
        ('[comet]\nuv_shim = "sometimes"\n', "[comet] uv_shim", "sometimes", "expected one of auto, always, never"),
        ("[comet]\ncolour = 1\n", "[comet] colour", 1, "unknown key; allowed: uv_shim"),
        ("metadata = 3\n", "[metadata]", 3, "expected a table"),
    ],
)
def test_wrong_values_in_keys_we_map_name_file_key_and_value(
    tmp_path: Path, toml: str, key: str, value: Any, message: str
) -> None:
    folder = harbor_task(tmp_path, "wrong", 'version = "1.0"\n' + toml)

    (problem,) = problems_of(folder)

    assert (problem.file, problem.key, problem.value) == (folder / TASK_FILE, key, value)
    assert message in problem.message


def test_a_wrong_env_table_names_the_keys_never_the_values(tmp_path: Path) -> None:
    folder = harbor_task(tmp_path, "env", 'version = "1.0"\n[solution.env]\nAPI_KEY = 12345\nOK = "x"\n')

    (problem,) = problems_of(folder)

    assert problem.key == "[solution.env]"
    assert problem.message.endswith("not strings: API_KEY")
    assert "12345" not in str(problem)


def test_harbor_files_needed_and_optional(tmp_path: Path) -> None:
    folder = harbor_task(tmp_path, "bare", 'version = "1.0"\n', solution=False, dockerfile=False)
    (folder / "instruction.md").unlink()

    problems = problems_of(folder)

    assert [(p.file.relative_to(folder).as_posix(), p.message) for p in problems] == [
        ("instruction.md", "missing: the agent's instruction goes here"),
        ("environment/Dockerfile", "missing: a Harbor task's image is built from it (or from its docker-compose.yaml)"),
    ]  # no solution/solve.sh, validation/ or test_scripts needed
    strict = load_catalog([tmp_path], require_solution=[tmp_path])
    assert any(p.file == folder / "solution" / "solve.sh" for p in strict.broken["bare"])


def test_a_compose_only_environment_loads_when_its_main_service_is_built(tmp_path: Path) -> None:
    folder = harbor_task(tmp_path, "compose", 'version = "1.0"\n', dockerfile=False)
    (folder / "environment" / "main").mkdir()
    (folder / "environment" / "main" / "Dockerfile").write_text("FROM ubuntu:24.04\n")
    (folder / "environment" / "docker-compose.yaml").write_text("services:\n  main:\n    build: ./main\n")

    task = load_task(folder)

    assert task.harbor is not None and task.harbor.compose is not None
    assert task.harbor.compose.main.build is not None and task.harbor.compose.main.build.context == "main"


def test_a_compose_only_environment_without_anything_to_run_is_a_problem(tmp_path: Path) -> None:
    folder = harbor_task(tmp_path, "compose", 'version = "1.0"\n', dockerfile=False)
    (folder / "environment" / "docker-compose.yaml").write_text("services:\n  api:\n    image: redis\n")

    (problem,) = problems_of(folder)

    assert problem.file == folder / "environment" / "docker-compose.yaml"
    assert problem.key == "services.main" and "nothing to run" in problem.message


def test_a_compose_file_beside_a_dockerfile_is_the_environment(tmp_path: Path) -> None:
    folder = harbor_task(tmp_path, "both", 'version = "1.0"\n')
    (folder / "environment" / "docker-compose.yaml").write_text("services:\n  cache:\n    image: redis\n")

    task = load_task(folder)

    assert task.warnings == ()
    assert task.harbor is not None and task.harbor.compose is not None
    assert [s.name for s in task.harbor.compose.services] == ["cache"]


def test_a_folder_name_that_cannot_be_a_task_name(tmp_path: Path) -> None:
    folder = harbor_task(tmp_path, "bad name", 'version = "1.0"\n')

    (problem,) = problems_of(folder)

    assert problem.file == folder
    assert "the folder name is the task's name" in problem.message


# --- folders of them -----------------------------------------------------------------------------


def test_a_folder_of_harbor_tasks_needs_no_index(tmp_path: Path) -> None:
    harbor_task(tmp_path, "one")
    harbor_task(tmp_path, "two")

    catalog = load_catalog([tmp_path])

    assert catalog.problems() == []
    assert list(catalog.tasks) == ["one", "two"]
    assert {t.format for t in catalog.tasks.values()} == {"harbor"}


def test_a_mixed_folder_indexes_only_its_own_tasks(factory: TaskFactory) -> None:
    factory.task("ours")
    harbor_task(factory.tasks_dir, "theirs")

    catalog = load_catalog([factory.tasks_dir])

    assert catalog.problems() == []
    assert {n: t.format for n, t in catalog.tasks.items()} == {"ours": "comet", "theirs": "harbor"}
    (factory.tasks_dir / "index.yaml").unlink()
    without_index = load_catalog([factory.tasks_dir])
    (problem,) = without_index.general
    assert problem.message.startswith("missing: each tasks folder registers its tasks in index.yaml")


def test_a_harbor_task_listed_in_an_index_is_cross_checked_with_warnings(factory: TaskFactory) -> None:
    factory.task("ours")
    harbor_task(factory.tasks_dir, "theirs")
    factory.index.append({"name": "theirs", "description": "not the instruction's first line"})
    factory.write_index()

    catalog = load_catalog([factory.tasks_dir])

    assert catalog.problems() == []
    (warning,) = catalog.tasks["theirs"].warnings
    assert warning.key == "tasks[theirs].description"


def test_harbor_cases_run_control_and_task_skills(tmp_path: Path) -> None:
    harbor_task(tmp_path, "with-skills", skills=("helper",))
    harbor_task(tmp_path, "plain")
    catalog = load_catalog([tmp_path])
    treatments = TreatmentCatalog(treatments={n: Treatment(n) for n in (CONTROL, TASK_SKILLS)}, broken={})

    items = select_cases(catalog, treatments)

    assert [i.id for i in items] == ["plain-CONTROL-r1", "with-skills-CONTROL-r1", "with-skills-TASK_SKILLS-r1"]


def test_task_skills_on_a_task_without_skills_is_refused_before_any_trial(tmp_path: Path) -> None:
    harbor_task(tmp_path, "with-skills", skills=("helper",))
    harbor_task(tmp_path, "plain")
    harbor_task(tmp_path, "also-plain")
    catalog = load_catalog([tmp_path])
    treatments = TreatmentCatalog(treatments={n: Treatment(n) for n in (CONTROL, TASK_SKILLS)}, broken={})

    # Some with skills, some without: refused naming those without, and the selection that would run.
    with pytest.raises(SelectionError) as mixed:
        select_cases(catalog, treatments, treatment_patterns=[CONTROL, TASK_SKILLS])
    message = str(mixed.value)
    assert message.startswith("--treatment selects TASK_SKILLS, but also-plain, plain have no skills of their own")
    assert "the same trial as CONTROL there under another name" in message
    assert "--task with-skills" in message
    # A pattern selects it too.
    with pytest.raises(SelectionError, match="also-plain, plain have no skills"):
        select_cases(catalog, treatments, treatment_patterns=["*"])
    # None with skills.
    with pytest.raises(SelectionError, match=r"but plain has no skills of its own .* run it under CONTROL"):
        select_cases(catalog, treatments, task_patterns=["plain"], treatment_patterns=[TASK_SKILLS])
    # The tasks that have skills run it; without --treatment every task runs its own defaults.
    items = select_cases(catalog, treatments, task_patterns=["with-skills"], treatment_patterns=[TASK_SKILLS])
    assert [i.id for i in items] == ["with-skills-TASK_SKILLS-r1"]
    assert len(select_cases(catalog, treatments)) == 4


def test_a_task_whose_defaults_name_task_skills_without_skills_is_broken(factory: TaskFactory) -> None:
    factory.task("ours", metadata={"default_treatments": [CONTROL, TASK_SKILLS]})
    catalog = load_catalog([factory.tasks_dir])
    treatments = TreatmentCatalog(treatments={n: Treatment(n) for n in (CONTROL, TASK_SKILLS)}, broken={})

    (item,) = select_cases(catalog, treatments)

    assert isinstance(item, Broken)
    (problem,) = item.problems
    assert problem.key == "[metadata] default_treatments" and problem.value == TASK_SKILLS
    assert "has no skills of its own" in problem.message


def test_marker_detection() -> None:
    assert harbor_marker({"verifier": {}}) == "[verifier]"
    assert harbor_marker({"agent": {"timeout_sec": 1}}) == "[agent]"
    assert harbor_marker({"version": "1.0"}) == "version"
    assert harbor_marker({"metadata": {"name": "x"}, "agent": "not a table"}) is None


# --- properties ----------------------------------------------------------------------------------

UNITS = st.sampled_from(["", "k", "K", "m", "M", "g", "G", "t", "T", "Mi", "Gi", "MB", "GB", "GiB", "mb"])
FACTOR = {"": 1, "k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}


@given(amount=st.integers(min_value=1, max_value=10**6), unit=UNITS, spaces=st.sampled_from(["", " "]))
def test_memory_strings_convert_to_megabytes(amount: int, unit: str, spaces: str) -> None:
    mb = parse_memory(f"{amount}{spaces}{unit}")

    assert mb == math.ceil(amount * FACTOR[unit[:1].lower()])
    assert mb is not None and mb >= 1


@given(st.one_of(st.text(), st.booleans(), st.floats(), st.none(), st.lists(st.integers())))
def test_junk_memory_is_none_or_a_positive_size(value: object) -> None:
    mb = parse_memory(value)

    if mb is not None:
        assert isinstance(value, str)
        assert mb >= 1
        assert re.match(r"^\s*[0-9]", value)


KEY = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12)
LEAF = st.one_of(
    st.text(max_size=20),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.booleans(),
    st.lists(st.integers(min_value=0, max_value=9), max_size=3),
)
# The keys we map, per section: a generated key must not be one of them, or it would not be "unused".
MAPPED = {
    "metadata": {"difficulty", "category", "tags", "required_skills", "distractor_skills"},
    "task": {"description"},
    "agent": {"timeout_sec"},
    "verifier": {"timeout_sec", "env"},
    "solution": {"env"},
    "environment": {"cpus", "memory_mb", "memory", "allow_internet", "docker_image", "build_timeout_sec", "env"},
}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    extra=st.dictionaries(
        st.sampled_from([*MAPPED, "steps_table", "mcp"]), st.dictionaries(KEY, LEAF, min_size=1, max_size=4), max_size=4
    )
)
def test_unknown_keys_are_kept_as_written_never_errors(
    tmp_path_factory: pytest.TempPathFactory, extra: dict[str, Any]
) -> None:
    kept = {s: {k: v for k, v in body.items() if k not in MAPPED.get(s, set())} for s, body in extra.items()}
    toml = 'version = "1.0"\n' + "".join(
        f"[{section}]\n" + "".join(f"{toml_string(k)} = {toml_value(v)}\n" for k, v in body.items())
        for section, body in kept.items()
    )
    folder = harbor_task(tmp_path_factory.mktemp("h"), "prop", toml)

    task = load_task(folder)

    assert task.harbor is not None
    expected = {"version": "1.0", **{f"{s}.{k}": v for s, body in kept.items() for k, v in body.items()}}
    assert dict(task.harbor.unused) == expected

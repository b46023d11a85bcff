"""The ``comet`` command line: --version, tasks list, tasks check; in-process and as the installed script."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scaffold import __version__
from scaffold.catalog.tasks import INDEX_FILE, TASK_FILE
from scaffold.cli.main import main
from tests.support.factories import TaskFactory


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def good(factory: TaskFactory) -> TaskFactory:
    factory.task("alpha", metadata={"description": "first task", "difficulty": "easy"})
    factory.task(
        "beta", metadata={"category": "comet", "description": "second task"}, evaluation={"profile": "generic"}
    )
    return factory


@pytest.fixture
def broken(factory: TaskFactory) -> TaskFactory:
    """A tasks folder with one good task and every kind of broken one."""
    factory.task("good")
    factory.task("bad-enum", metadata={"difficulty": "extreme"})
    no_instruction = factory.task("no-instruction")
    (no_instruction / "instruction.md").unlink()
    factory.task("unknown-treatment", metadata={"default_treatments": ["CONTROL", "SKILL_NOPE"]})
    factory.task("unknown-profile", evaluation={"profile": "nope"})
    factory.task("unregistered", register=False)
    factory.index.append({"name": "ghost"})
    factory.write_index()
    return factory


def comet_script() -> str:
    found = shutil.which("comet", path=str(Path(sys.executable).parent)) or shutil.which("comet")
    if found is None:
        pytest.fail("the comet console script is not installed next to the interpreter")
    return found


# --- version and usage --------------------------------------------------------------------------


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])

    assert info.value.code == 0
    assert capsys.readouterr().out == f"comet-eval {__version__}\n"


@pytest.mark.parametrize("argv", [[], ["tasks"]])
def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, out, _ = run(capsys, *argv)

    assert code == 2
    assert out.startswith("usage: comet")


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["frobnicate"])

    assert info.value.code == 2
    assert "invalid choice: 'frobnicate'" in capsys.readouterr().err


# --- tasks list ---------------------------------------------------------------------------------


def test_tasks_list_text(capsys: pytest.CaptureFixture[str], good: TaskFactory) -> None:
    broken_folder = good.task("gamma", metadata={"difficulty": "extreme"})
    (broken_folder / "instruction.md").unlink()

    code, out, err = run(capsys, "tasks", "list", good.tasks_dir)

    assert code == 0
    assert err == ""
    lines = out.splitlines()
    assert len(lines) == 3
    # Each task's format (comet: ours or the original Comet eval's; harbor) follows its name.
    assert lines[0].split() == ["alpha", "comet", "generic", "easy", "CONTROL", "first", "task"]
    assert lines[1].split() == ["beta", "comet", "comet", "medium", "CONTROL", "second", "task"]
    assert lines[2].split() == ["gamma", "INVALID", "(2", "problems;", "run:", "comet", "tasks", "check)"]
    # Names are padded to one width so the columns line up.
    assert lines[0].index("comet") == lines[1].index("comet") == len("alpha") + 2


def test_tasks_list_json(capsys: pytest.CaptureFixture[str], good: TaskFactory) -> None:
    good.task("gamma", metadata={"difficulty": "extreme"})

    code, out, _ = run(capsys, "tasks", "list", "--json", good.tasks_dir)

    assert code == 0
    rows = json.loads(out)
    assert rows == [
        {
            "name": "alpha",
            "status": "ok",
            "format": "comet",
            "category": "generic",
            "difficulty": "easy",
            "default_treatments": ["CONTROL"],
            "description": "first task",
            "path": str(good.tasks_dir / "alpha"),
        },
        {
            "name": "beta",
            "status": "ok",
            "format": "comet",
            "category": "comet",
            "difficulty": "medium",
            "default_treatments": ["CONTROL"],
            "description": "second task",
            "path": str(good.tasks_dir / "beta"),
        },
        {"name": "gamma", "status": "invalid", "problems": 1},
    ]


def test_tasks_list_of_an_empty_folder(capsys: pytest.CaptureFixture[str], factory: TaskFactory) -> None:
    code, out, _ = run(capsys, "tasks", "list", factory.tasks_dir)

    assert code == 0
    assert out == f"no tasks found in {factory.tasks_dir}\n"


def test_tasks_list_of_several_folders(capsys: pytest.CaptureFixture[str], good: TaskFactory, tmp_path: Path) -> None:
    other = TaskFactory(tmp_path / "other")
    other.task("delta")

    code, out, _ = run(capsys, "tasks", "list", "--json", good.tasks_dir, other.tasks_dir)

    assert code == 0
    assert [row["name"] for row in json.loads(out)] == ["alpha", "beta", "delta"]


def test_tasks_list_defaults_to_local_tasks(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    TaskFactory(tmp_path / "local").task("here")
    monkeypatch.chdir(tmp_path)

    code, out, _ = run(capsys, "tasks", "list", "--json")

    assert code == 0
    assert [row["name"] for row in json.loads(out)] == ["here"]


# --- tasks check --------------------------------------------------------------------------------


def test_tasks_check_good_folder(capsys: pytest.CaptureFixture[str], good: TaskFactory) -> None:
    code, out, err = run(capsys, "tasks", "check", good.tasks_dir)

    assert code == 0
    assert err == ""
    assert out.splitlines() == ["  alpha  comet   ok", "  beta   comet   ok", "2 task(s) OK; 1 treatment(s) OK"]


def test_tasks_check_uses_the_treatments_beside_the_tasks_folder(
    capsys: pytest.CaptureFixture[str], factory: TaskFactory
) -> None:
    factory.skill("a")
    factory.treatments("t.yaml", {"SKILL_A": {"skills": ["../skills/a"]}})
    factory.task("alpha", metadata={"default_treatments": ["CONTROL", "SKILL_A"]})

    code, out, _ = run(capsys, "tasks", "check", factory.tasks_dir)

    assert code == 0
    assert out.splitlines()[-1] == "1 task(s) OK; 2 treatment(s) OK"


def test_tasks_check_with_treatments_dir_and_skill_base(
    capsys: pytest.CaptureFixture[str], factory: TaskFactory, tmp_path: Path
) -> None:
    snapshot = tmp_path / "snapshots" / "v1" / "comet"
    snapshot.mkdir(parents=True)
    (snapshot / "SKILL.md").write_text("x\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "t.yaml").write_text("SKILL_V1:\n  skills:\n    - {skill: v1/comet, base: bench}\n")
    factory.task("alpha", metadata={"default_treatments": ["SKILL_V1"]})

    with_base = run(
        capsys, "tasks", "check", factory.tasks_dir, "--treatments-dir", elsewhere, "--skill-base",
        f"bench={tmp_path / 'snapshots'}",
    )  # fmt: skip
    without_base = run(capsys, "tasks", "check", factory.tasks_dir, "--treatments-dir", elsewhere)

    assert with_base == (0, "  alpha  comet   ok\n1 task(s) OK; 2 treatment(s) OK\n", "")
    assert without_base[0] == 1
    assert f"skill folder {elsewhere.parent / 'bench' / 'v1' / 'comet'} does not exist" in without_base[1]


def test_tasks_check_bad_skill_base_is_a_usage_error(capsys: pytest.CaptureFixture[str], good: TaskFactory) -> None:
    code, out, err = run(capsys, "tasks", "check", good.tasks_dir, "--skill-base", "oops")

    assert code == 2
    assert out == ""
    assert err == "comet: --skill-base='oops': expected NAME=DIR\n"


def test_tasks_check_lists_every_problem(capsys: pytest.CaptureFixture[str], broken: TaskFactory) -> None:
    tasks = broken.tasks_dir
    index = tasks / INDEX_FILE

    code, out, err = run(capsys, "tasks", "check", tasks)

    assert code == 1
    lines = out.splitlines()
    expected = [
        f"{tasks / 'bad-enum' / TASK_FILE}: [metadata] difficulty: expected 'easy', 'medium' or 'hard' (got 'extreme')",
        f"{index}: tasks: registers task 'ghost' but there is no folder {tasks / 'ghost'} (got 'ghost')",
        f"{tasks / 'no-instruction' / 'instruction.md'}: missing: the agent's instruction goes here",
        f"{index}: tasks: does not register the task folder {tasks / 'unregistered'}; "
        "add '- name: unregistered' under tasks",
    ]
    assert lines[:4] == expected
    profile_line, treatment_line = lines[4:6]
    assert profile_line.startswith(f"{tasks / 'unknown-profile' / TASK_FILE}: [evaluation] profile: ")
    assert profile_line.endswith("(got 'nope')")
    assert "unknown evaluation profile; known: " in profile_line
    assert "generic" in profile_line
    assert profile_line.count(TASK_FILE) == 1
    assert treatment_line == (
        f"{tasks / 'unknown-treatment' / TASK_FILE}: [metadata] default_treatments: "
        "names unknown treatment 'SKILL_NOPE'; known: CONTROL (got 'SKILL_NOPE')"
    )
    # Then each task, its format and whether it can run ("?": no task.toml to tell the format from).
    assert lines[6:] == [
        "  bad-enum           ?       INVALID",
        "  ghost              ?       INVALID",
        "  good               comet   ok",
        "  no-instruction     comet   INVALID",
        "  unknown-profile    comet   INVALID",
        "  unknown-treatment  comet   INVALID",
        "  unregistered       comet   INVALID",
    ]
    assert err == "\n6 problem(s); 7 task(s) checked\n"


def test_tasks_check_reports_treatment_file_problems(capsys: pytest.CaptureFixture[str], good: TaskFactory) -> None:
    bad = good.treatments("bad.yaml", {"bad-name": {}})

    code, out, err = run(capsys, "tasks", "check", good.tasks_dir)

    assert code == 1
    assert out.splitlines()[0] == (
        f"{bad}: treatment names start with a letter and use only letters, digits and '_' (got 'bad-name')"
    )
    assert err == "\n1 problem(s); 2 task(s) checked\n"


def test_tasks_check_missing_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "tasks", "check", tmp_path / "nowhere")

    assert code == 1
    assert out.splitlines() == [f"{tmp_path / 'nowhere'}: tasks folder does not exist"]


# --- the installed console script -----------------------------------------------------------------


def test_installed_comet_script(broken: TaskFactory) -> None:
    script = comet_script()

    version = subprocess.run([script, "--version"], capture_output=True, text=True, check=False, timeout=60)
    check = subprocess.run(
        [script, "tasks", "check", str(broken.tasks_dir)], capture_output=True, text=True, check=False, timeout=60
    )

    assert version.returncode == 0
    assert version.stdout == f"comet-eval {__version__}\n"
    assert check.returncode == 1
    assert "names unknown treatment 'SKILL_NOPE'" in check.stdout
    assert "unknown evaluation profile; known: authoring-skill, comet-workflow, generic (got 'nope')" in check.stdout
    assert check.stderr.strip() == "6 problem(s); 7 task(s) checked"


def test_tasks_check_shows_every_problem_of_a_task_at_once(
    capsys: pytest.CaptureFixture[str], factory: TaskFactory
) -> None:
    # Before, each fix revealed the next: a task.toml that does not parse hid the missing files, and a
    # task with a missing file was never checked against its index entry, treatments and profile.
    unparsable = factory.task("unparsable")
    (unparsable / TASK_FILE).write_text("[metadata\nname = 'unparsable'\n")
    (unparsable / "instruction.md").unlink()
    several = factory.task("several", metadata={"default_treatments": ["SKILL_NOPE"]}, evaluation={"profile": "nope"})
    (several / "solution" / "solve.sh").unlink()
    index = factory.tasks_dir / INDEX_FILE
    index.write_text(index.read_text().replace("description: task several", "description: other"))

    code, out, _ = run(capsys, "tasks", "check", factory.tasks_dir)

    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith(f"{unparsable / TASK_FILE}: not valid TOML: ")
    assert lines[1] == f"{unparsable / 'instruction.md'}: missing: the agent's instruction goes here"
    assert lines[2].startswith(f"{several / TASK_FILE}: [metadata] default_treatments: names unknown treatment")
    assert lines[3].startswith(f"{several / TASK_FILE}: [evaluation] profile: unknown evaluation profile")
    # Accepted, so a warning: task.toml wins over the index; and a user's task needs no solve.sh.
    assert lines[4].startswith(f"warning: {index}: tasks[several].description: differs from [metadata] description")
    assert lines[5:] == ["  several     comet   INVALID (1 warning(s))", "  unparsable  ?       INVALID"]
    assert "solve.sh" not in out


# --- Harbor-format tasks beside ours: each task's format -------------------------------------------


def harbor_folder(root: Path) -> Path:
    """A folder holding one Harbor task (no index.yaml, as Harbor corpora have none)."""
    from tests.scaffold.catalog.test_harbor_loader import harbor_task

    root.mkdir(parents=True, exist_ok=True)
    harbor_task(
        root, "kv-store", '[metadata]\ncategory = "systems"\n[agent]\ntimeout_sec = 60\n[solution.env]\nK = "s3cret"\n'
    )
    return root


def test_tasks_list_shows_each_tasks_format(
    capsys: pytest.CaptureFixture[str], good: TaskFactory, tmp_path: Path
) -> None:
    harbor = harbor_folder(tmp_path / "harbor")

    code, out, _ = run(capsys, "tasks", "list", good.tasks_dir, harbor)
    as_json = json.loads(run(capsys, "tasks", "list", "--json", good.tasks_dir, harbor)[1])

    assert code == 0
    assert [line.split()[:3] for line in out.splitlines()] == [
        ["alpha", "comet", "generic"],
        ["beta", "comet", "comet"],
        ["kv-store", "harbor", "systems"],
    ]
    assert {row["name"]: row["format"] for row in as_json} == {"alpha": "comet", "beta": "comet", "kv-store": "harbor"}
    assert as_json[2]["description"] == "Start the server"


def test_tasks_check_json_gives_each_tasks_format_problems_and_warnings(
    capsys: pytest.CaptureFixture[str], good: TaskFactory, tmp_path: Path
) -> None:
    harbor = harbor_folder(tmp_path / "harbor")
    good.index[0]["description"] = "not what task.toml says"
    good.write_index()

    code, out, _ = run(capsys, "tasks", "check", "--json", good.tasks_dir, harbor)

    assert code == 0
    shown = json.loads(out)
    assert shown["problems"] == []
    assert [(t["name"], t["format"], t["status"], len(t["warnings"])) for t in shown["tasks"]] == [
        ("alpha", "comet", "ok", 1),
        ("beta", "comet", "ok", 0),
        ("kv-store", "harbor", "ok", 0),
    ]
    assert "task.toml wins" in shown["tasks"][0]["warnings"][0]


def test_tasks_show_a_harbor_task_without_its_secrets(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    harbor = harbor_folder(tmp_path / "harbor")

    code, out, _ = run(capsys, "tasks", "show", "kv-store", harbor, "--json")
    text = run(capsys, "tasks", "show", "kv-store", harbor)[1]
    unknown = run(capsys, "tasks", "show", "nope", harbor)

    assert code == 0
    shown = json.loads(out)
    assert (shown["format"], shown["spec"]["environment"]["timeout_sec"]) == ("harbor", 60.0)
    assert shown["harbor"]["solution_env"] == ["K"]  # names only: [solution.env] holds API keys
    assert shown["harbor"]["unused"] == {}
    assert "s3cret" not in out + text
    assert "format: harbor" in text
    assert unknown[0] == 2
    assert unknown[2] == "comet: no task 'nope'; known: kv-store\n"

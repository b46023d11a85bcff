"""What ``comet eval`` refuses, it refuses before its first trial and before writing anything, with exit
status 2 and the message alone, and its dry run (``--collect``) refuses exactly the same: a bad skill
name, an eval.yaml that is a folder, an unknown profile or backend, a gate on a treatment it does not
run, malformed run options, an agent that cannot start. And what a run leaves in the skill, git ignores."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scaffold.cli.main import main
from scaffold.errors import ExitStatus
from tests.scaffold.cli.eval.test_plan import INLINE, manifest_data, skill
from tests.support.factories import TaskFactory

RULE = "must start with a letter or digit and use only letters, digits, '.', '_' and '-' (at most 100)"


@pytest.fixture
def eval_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's settings folder, empty, and none of the machine's settings in the environment."""
    monkeypatch.setenv("COMET_EVAL_HOME", str(tmp_path / "eval-home"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in (
        "BENCH_EVAL_AGENT",
        "COMET_DOCKER_HOSTS",
        "COMET_DOCKER_POOL",
        "COMET_IMAGE_ALIASES",
        "COMET_IMAGE_ALIAS_FILE",
        "COMET_EVAL_REPORT_CONFIG",
    ):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "eval-home"


def refused(capsys: pytest.CaptureFixture[str], eval_home: Path, *argv: str | Path) -> str:
    """``comet eval ARGV`` as a dry run and as a run: both exit 2 with the same message (returned), and
    neither writes anything (no settings template, nothing in the skill)."""
    messages = []
    for mode in (["--collect"], []):
        code = main(["eval", *map(str, argv), *mode])
        err = capsys.readouterr().err
        assert code == ExitStatus.USAGE, (mode, err)
        messages.append(err)
    assert messages[0] == messages[1]
    assert not eval_home.exists()  # the run's first write, the settings template, never happened
    return messages[0]


def _no_run_files(folder: Path) -> None:
    assert not (folder / ".comet").exists()


@pytest.mark.parametrize(
    ("skill_name", "message"),
    [
        ("../../x", f"skill.name: {RULE}: it names the skill's folder in the workspace (got '../../x')"),
        ("has space", f"skill.name: {RULE}: it names the skill's folder in the workspace (got 'has space')"),
    ],
)
def test_a_skill_name_from_the_manifest_is_refused_up_front(
    tmp_path: Path, eval_home: Path, capsys: pytest.CaptureFixture[str], skill_name: str, message: str
) -> None:
    folder = skill(tmp_path, manifest_data(skill={"name": skill_name}))
    err = refused(capsys, eval_home, folder, "--agent", "oracle")
    assert err == f"comet eval: {folder / 'comet' / 'eval.yaml'}: {message}\n"
    _no_run_files(folder)


def test_a_skill_name_from_the_command_line_or_the_folder_is_refused_up_front(
    tmp_path: Path, eval_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = skill(tmp_path / "a")
    err = refused(capsys, eval_home, folder, "--quick", "--agent", "oracle", "--skill-name", "../x")
    assert err == f"comet eval: --skill-name '../x': {RULE} (it names the skill's folder)\n"
    spaced = skill(tmp_path / "b", name="my skill")
    err = refused(capsys, eval_home, spaced, "--quick", "--agent", "oracle")
    assert err == (
        f"comet eval: {spaced}: the skill is installed under its folder's name 'my skill', and a skill name "
        f"{RULE}: pass --skill-name NAME\n"
    )
    assert main(["eval", str(spaced), "--quick", "--agent", "oracle", "--skill-name", "my-skill", "--collect"]) == 0
    _no_run_files(folder)


def test_an_eval_yaml_that_is_a_folder_is_refused_naming_it(
    tmp_path: Path, eval_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = skill(tmp_path)
    manifest = folder / "comet" / "eval.yaml"
    manifest.mkdir(parents=True)
    expected = f"comet eval: {manifest}: is a folder; the manifest must be a YAML file (rename or remove it)\n"
    for target in (folder, manifest):  # found beside the skill, or named
        assert refused(capsys, eval_home, target, "--agent", "oracle") == expected
    _no_run_files(folder)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--profile", "nope"], "--profile 'nope': unknown evaluation profile; known: "),
        (["--backend", "dockr"], "--backend dockr: unknown backend; known: docker, local"),
        (["--docker-host", "tcp://10.0.0.5:2376"], "--docker-host needs --backend docker (the backend is local)"),
        (["--image-alias", "bad"], "--image-alias: 'bad' is not REF=LOCAL"),
        (["--max-trials", "-1"], "--max-trials -1: must be 0 or more"),
        (["--retry-excluded", "-1"], "--retry-excluded -1: must be 0 or more (0 turns retries off)"),
        (["--max-cost", "-1"], "--max-cost -1: must be a number of US dollars, 0 or more"),
        (["--start-window", "-1"], "--start-window -1: use 0 (off) or a number of seconds"),
        (["--judge-samples", "0"], "--judge-samples 0: must be 1 or more"),
        (["--judge-agent", "oracle", "--judge-model", "m"], "the judge: judge agent 'oracle': only claude-code can"),
        (["--max-count", "0"], "--max-count 0: must be 1 or more"),
        (["--count", "2", "--max-count", "3"], "--max-count 3: goes with running until decided"),
        (["--until-decided", "--count", "2"], "--count with --until-decided"),
        (["--report-config", "missing.json"], "--report-config missing.json: cannot be read"),
        (
            ["--gate", "SKILL not worse than CONTROL"],
            "--gate 'SKILL not worse than CONTROL': names treatment 'SKILL', which comet eval does not run; "
            "its treatments are CONTROL and DYNAMIC_SKILL (the skill my-skill)",
        ),
    ],
)
def test_run_options_the_session_would_refuse_are_refused_up_front(
    tmp_path: Path, eval_home: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    # Each of these used to pass --collect; the run then failed or invalidated every trial (exit 3, "no
    # answer"), or refused only inside pytest, after the settings template was written.
    folder = skill(tmp_path)
    err = refused(capsys, eval_home, folder, "--quick", "--agent", "oracle", *argv)
    assert err.startswith(f"comet eval: {message}"), err
    _no_run_files(folder)


def test_the_manifest_s_profile_and_gates_are_checked_too(
    tmp_path: Path, eval_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = skill(tmp_path / "a", manifest_data(skill={"name": "my-skill", "profile": "nope"}))
    err = refused(capsys, eval_home, folder, "--agent", "oracle")
    assert err.startswith(f"comet eval: skill.profile of {folder / 'comet' / 'eval.yaml'} 'nope': unknown"), err
    gated = manifest_data(evaluation={"tasks": [INLINE], "qualityGates": {"gates": ["SKILL_X better than CONTROL"]}})
    folder = skill(tmp_path / "b", gated)
    err = refused(capsys, eval_home, folder, "--agent", "oracle")
    where = f"evaluation.qualityGates.gates[0] 'SKILL_X better than CONTROL' of {folder / 'comet' / 'eval.yaml'}"
    assert err.startswith(f"comet eval: {where}: names treatment 'SKILL_X', which comet eval does not run"), err


def test_collect_fails_when_the_agent_cannot_start(
    tmp_path: Path, eval_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "BENCH_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    folder = skill(tmp_path)
    code = main(["eval", str(folder), "--quick", "--agent", "claude-code", "--collect"])
    captured = capsys.readouterr()
    assert code == ExitStatus.USAGE
    assert re.search(r"Agent check: +fails: agent 'claude-code' needs credentials", captured.out)
    assert captured.err.startswith("comet eval: agent 'claude-code' needs credentials")
    assert not eval_home.exists()


def test_the_gate_example_of_the_help_is_one_comet_eval_runs(
    tmp_path: Path, eval_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    found = re.search(r"--gate EXPR a gate, e\.g\. '([^']+)'", shown)
    assert found, shown
    folder = skill(tmp_path)
    assert main(["eval", str(folder), "--quick", "--agent", "oracle", "--gate", found[1], "--collect"]) == 0
    assert f"Gates:      {found[1]}" in capsys.readouterr().out


def comet_eval(tmp_path: Path, *argv: str | Path) -> subprocess.CompletedProcess[str]:
    """The ``comet`` console script, ``comet eval ARGV``, in an environment of its own."""
    comet = shutil.which("comet", path=str(Path(sys.executable).parent))
    assert comet, "the comet console script is not installed next to the interpreter"
    (tmp_path / "tmp").mkdir(exist_ok=True)
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "TMPDIR": str(tmp_path / "tmp"),
        "COMET_EVAL_HOME": str(tmp_path / "eval-home"),
        "LANG": "C.UTF-8",
    }
    command = [comet, "eval", *map(str, argv)]
    return subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, check=False, timeout=300)


def test_an_item_that_cannot_run_says_why_and_is_not_called_noise(tmp_path: Path) -> None:
    # A task of the skill's own whose profile is unknown is an invalid item (the other tasks would run):
    # its reason is shown under its progress line, and a run of nothing but such items is a failure of
    # its inputs (exit 1), not "every trial was excluded as environment noise" (exit 3).
    data = manifest_data(evaluation={"tasks": [{"source": "evals/tasks/own-task"}]})
    folder = skill(tmp_path, data)
    TaskFactory(folder / "evals").task("own-task", evaluation={"profile": "nope"})
    run = comet_eval(tmp_path, folder, "--agent", "oracle")
    assert run.returncode == ExitStatus.FAILED, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("[1/1] own-task-INVALID: invalid "))
    assert lines[at + 1] == "    own-task cannot run:"
    reason = r"    \S+/own-task/task\.toml: \[evaluation\] profile: unknown evaluation profile; .*"
    assert re.fullmatch(reason, lines[at + 2]), lines
    assert "comet eval: no trial could run: 1 item(s) are invalid (see above)" in run.stderr
    assert "environment noise" not in run.stderr


def test_a_run_makes_its_folder_in_the_skill_ignored_by_git(tmp_path: Path) -> None:
    git = shutil.which("git")
    assert git, "git is needed to show what it ignores"
    folder = skill(tmp_path / "repo")
    subprocess.run([git, "-C", str(tmp_path / "repo"), "init", "-q"], check=True, timeout=60)
    run = comet_eval(tmp_path, folder, "--quick", "--agent", "oracle")
    assert run.returncode == 0, run.stdout + run.stderr
    assert any((folder / ".comet" / "eval" / "runs" / "experiments").glob("*/summary.md"))
    assert (folder / ".comet" / ".gitignore").read_text() == "*\n"
    status = subprocess.run(
        [git, "-C", str(tmp_path / "repo"), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    # The skill's own file only: the runs, and the .gitignore that hides them, are not git's business.
    assert status.stdout.splitlines() == ["?? my-skill/SKILL.md"]

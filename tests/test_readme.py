"""What a newcomer reads first: the README's commands work in the order it gives them, and the output it
shows is what they print."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scaffold.catalog.builtin import BUILTIN_SKILLS_DIR
from scaffold.modelserver import ScriptedModelServer, load_script
from tests.support.agents import SCRIPTS, require_cli, scripted_cli_env
from tests.support.factories import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
COMET = str(Path(sys.executable).with_name("comet"))
# What puts `comet` on PATH: the venv's activation, or a tool installer that links it into PATH itself.
ON_PATH = ("source .venv/bin/activate", "pipx install", "uv tool install")


def _blocks(kind: str) -> list[tuple[int, list[str]]]:
    """(first line number, lines) of every fenced block of *kind* (``bash``, or ``""`` for plain)."""
    found: list[tuple[int, list[str]]] = []
    state = "out"  # out of a block, in one of *kind*, or in another ("skip")
    for number, line in enumerate(README.splitlines(), start=1):
        if line.startswith("```"):
            if state != "out":
                state = "out"
            elif line.strip() == "```" + kind:
                state = "in"
                found.append((number + 1, []))
            else:
                state = "skip"
        elif state == "in":
            found[-1][1].append(line)
    return found


def _command_lines() -> list[tuple[int, str]]:
    """(line number, line) of every line inside the README's bash blocks."""
    return [(start + i, line) for start, lines in _blocks("bash") for i, line in enumerate(lines)]


def test_comet_is_put_on_path_before_the_first_bare_comet_command() -> None:
    lines = _command_lines()
    first_comet = next(n for n, line in lines if re.match(r"comet\s", line))
    on_path = [n for n, line in lines if any(way in line for way in ON_PATH)]
    assert on_path and on_path[0] < first_comet, "say how `comet` gets on PATH before using it bare"
    assert "source .venv/bin/activate" in README, "a checkout's comet is .venv/bin/comet: say how to activate"


def test_the_set_up_scripts_say_how_comet_gets_on_path() -> None:
    for script in ("scripts/eval", "scripts/test"):
        assert "source .venv/bin/activate" in (REPO / script).read_text(encoding="utf-8"), script


def _example_output() -> list[str]:
    """The output block that follows the README's `comet eval ./my-skill` example."""
    blocks = _blocks("")
    for _, lines in blocks:
        if any(line.startswith("Target:") for line in lines):
            return lines
    raise AssertionError(f"no output block of comet eval in the README (blocks at {[s for s, _ in blocks]})")


def _normalized(line: str, home: str) -> str:
    """*line* without what differs from run to run: the home folder, the experiment id, times, the trial
    count (the test runs fewer rounds than the README's run)."""
    line = line.replace(home, "/home/me")
    line = re.sub(r"\d{8}-\d{6}-[0-9a-f]{6}", "EXPERIMENT", line)
    line = re.sub(r"^\[\d+/\d+\]", "[K/N]", line)
    line = re.sub(r"\d+ s in trial", "T s in trial", line)
    line = re.sub(r"at most \d+ per task", "at most N per task", line)
    return re.sub(r"after \d+ round\(s\)", "after N round(s)", line).rstrip()


@pytest.mark.agent_cli
@pytest.mark.slow
def test_the_readme_comet_eval_example_prints_what_the_readme_shows(tmp_path: Path) -> None:
    """The README's example, as it says to run it (the example skill copied to ~/my-skill, Claude Code
    against the scripted model server), in a home of the test's; two rounds instead of ten to save time."""
    commands = "\n".join(line for _, line in _command_lines())
    assert "cp -r scaffold/builtin/skills/markdown-report ~/my-skill" in commands
    assert "comet model-server --script tests/data/e2e/claude-eval-generated.yaml" in commands
    assert "BENCH_CC_MODEL=claude-sonnet-4-5 comet eval ./my-skill" in commands
    cli = require_cli("claude")
    home = tmp_path / "me"
    shutil.copytree(BUILTIN_SKILLS_DIR / "markdown-report", home / "my-skill")
    with ScriptedModelServer(load_script(SCRIPTS / "claude-eval-generated.yaml")) as server:
        env = {
            **scripted_cli_env(home, server.url),
            "PATH": cli + os.pathsep + os.environ["PATH"],
            "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
        }
        proc = subprocess.run(
            [COMET, "eval", "./my-skill", "--max-count", "2"],
            cwd=home, env=env, capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    printed = {_normalized(line, str(home)) for line in out.splitlines()}
    shown = [line for line in _example_output() if line.strip() and not line.startswith("...")]
    missing = [line for line in shown if _normalized(line, "/home/me") not in printed]
    assert not missing, "the README shows lines comet eval does not print:\n" + "\n".join(missing) + "\n\n" + out


def _suite_lines() -> list[str]:
    """The README's commands that run the built-in suite: `.venv/bin/pytest local/tests ...` in a checkout
    and `comet run ...` from any folder, each without its comment."""
    found = []
    for _, line in _command_lines():
        command = line.split("  #", 1)[0].strip()
        if command.startswith((".venv/bin/pytest local/tests", "comet run ")):
            found.append(command)
    return found


@pytest.mark.slow
def test_the_readme_suite_commands_run_as_it_says(tmp_path: Path) -> None:
    """Each suite command of the README, as written (the venv's programs for `.venv/bin/` and `comet`),
    its experiment in a folder of the test's: the oracle passes every trial, and the nop agent fails
    every built-in task, as the README says it must."""
    lines = _suite_lines()
    assert len(lines) >= 4, lines  # three in a checkout, one installed
    bin_dir = Path(sys.executable).parent
    for i, command in enumerate(lines):
        words = command.split()
        program = bin_dir / Path(words[0]).name
        logs = tmp_path / f"logs-{i}"
        # The installed form runs "from any folder": an empty one; the checkout's from the checkout.
        where = REPO if words[0].startswith(".venv/") else tmp_path
        argv = [str(program), *words[1:], f"--logs-dir={logs}", "-p", "no:cacheprovider"]
        env = {**os.environ, "HOME": str(tmp_path / "home")}
        done = subprocess.run(argv, cwd=where, env=env, capture_output=True, text=True, timeout=600, check=False)
        out = done.stdout + done.stderr
        summary = next(line for line in out.splitlines() if line.startswith("trials: "))
        if "--agent=nop" in words:
            assert done.returncode == 1 and "passed" not in summary, (command, out[-3000:])
        else:
            assert done.returncode == 0 and "failed" not in summary, (command, out[-3000:])

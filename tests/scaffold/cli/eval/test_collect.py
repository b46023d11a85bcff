"""``comet eval --collect`` resolves and validates everything and writes nothing: no file under the skill
(the owner), HOME or TMPDIR, no socket, no process. Proved in a child process with an audit hook
(sys.addaudithook) that records every write-mode open, file-system change, socket and process start."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scaffold.cli.eval.test_plan import INLINE, manifest_data, skill
from tests.support.factories import REPO

_HOOK = r"""
import atexit, json, os, sys

_events = []
_WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_WATCHED = {
    "socket.__new__", "socket.connect", "socket.bind", "socket.getaddrinfo", "subprocess.Popen", "os.system",
    "os.posix_spawn", "os.exec", "os.fork", "os.forkpty", "os.mkdir", "os.rename", "os.remove", "os.rmdir",
    "os.link", "os.symlink", "os.truncate", "os.chmod", "os.utime", "shutil.rmtree", "shutil.copyfile",
    "tempfile.mkstemp", "tempfile.mkdtemp", "urllib.Request", "http.client.connect",
}


def _hook(event, args):
    if event == "open":
        path, mode, flags = (list(args) + [None, None])[:3]
        writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & _WRITE
        )
        if writes:
            _events.append(["open", str(path), str(mode)])
    elif event in _WATCHED:
        _events.append([event, repr(args)[:300]])


sys.addaudithook(_hook)
atexit.register(lambda: sys.__stderr__.write("AUDIT " + json.dumps(_events) + "\n"))
"""


def _tree(*roots: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for root in roots:
        for path in [root, *root.rglob("*")]:
            stat = path.lstat()
            out[str(path)] = (stat.st_mtime_ns, stat.st_size)
    return out


def _collect(tmp_path: Path, *argv: str | Path, env: dict[str, str] | None = None) -> tuple[int, str, list[list[str]]]:
    hook_dir = tmp_path / "hook"
    hook_dir.mkdir(exist_ok=True)
    (hook_dir / "comet_audit_hook.py").write_text(_HOOK)
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir(exist_ok=True)
    tmp.mkdir(exist_ok=True)
    # The agent's program, where a run looks for it: --collect fails when it is missing, as the run does.
    programs = tmp_path / "agent-bin"
    programs.mkdir(exist_ok=True)
    (programs / "claude").write_text("#!/bin/sh\nexit 0\n")
    (programs / "claude").chmod(0o755)
    child_env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "PYTHONPATH": os.pathsep.join([str(hook_dir), str(REPO)]),
        "LANG": "C.UTF-8",
        "COMET_AGENT_BIN_DIR": str(programs),
        **(env or {}),
    }
    code = (
        "import comet_audit_hook\n"
        "from scaffold.cli.main import main\n"
        f"raise SystemExit(main({[str(a) for a in ['eval', *argv, '--collect']]!r}))\n"
    )
    # -B: no bytecode caches, so that every write the command makes is one of its own.
    result = subprocess.run(
        [sys.executable, "-B", "-c", code],
        env=child_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    audit = [line for line in result.stderr.splitlines() if line.startswith("AUDIT ")]
    assert audit, result.stderr
    return result.returncode, result.stdout + result.stderr, json.loads(audit[-1].removeprefix("AUDIT "))


@pytest.mark.parametrize(
    "case",
    ["authored", "synthesized", "quick", "missing-credentials"],
)
def test_collect_writes_nothing_and_opens_no_socket(tmp_path: Path, case: str) -> None:
    skills = tmp_path / "skills"
    evaluation = {"tasks": [INLINE], "qualityGates": {"minPassAt1": 0.5}}
    folder = skill(skills, None if case == "synthesized" else manifest_data(evaluation=evaluation))
    argv: list[str | Path] = [folder, *(["--quick"] if case == "quick" else [])]
    env = {} if case == "missing-credentials" else {"ANTHROPIC_API_KEY": "sk-test-collect-000000"}
    (tmp_path / "home").mkdir()
    (tmp_path / "tmp").mkdir()
    before = _tree(folder, tmp_path / "home", tmp_path / "tmp")
    code, output, events = _collect(tmp_path, *argv, env=env)
    # An agent that cannot start fails the dry run as it fails the run: exit 2, still nothing done.
    assert code == (2 if case == "missing-credentials" else 0), output
    assert events == [], f"--collect did something: {events}"
    assert _tree(folder, tmp_path / "home", tmp_path / "tmp") == before
    assert "Static collection only" in output
    assert "sk-test-collect" not in output
    if case == "synthesized":
        assert re.search(r"Tasks:\s+pending generation", output)
        assert "a normal comet eval run generates them" in output
        # What the generator will read of the skill, listed (reading it writes nothing either).
        assert re.search(r"generator snapshot: \d+ file\(s\), [\d,]+ bytes \(sha256:", output), output
        assert "    - SKILL.md\n" in output
    if case == "missing-credentials":
        assert re.search(r"Agent check: +fails: agent 'claude-code' needs credentials", output)


def test_the_audit_hook_sees_what_a_run_would_do(tmp_path: Path) -> None:
    """The proof above is only as good as its hook: the same child, asked to write the user's .env (as a
    run does first), reports it."""
    hook_dir = tmp_path / "hook"
    hook_dir.mkdir()
    (hook_dir / "comet_audit_hook.py").write_text(_HOOK)
    code = (
        "import comet_audit_hook, socket\n"
        "from scaffold.cli.user_env import ensure_user_env\n"
        "ensure_user_env()\n"
        "socket.socket().close()\n"
    )
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": f"{hook_dir}{os.pathsep}{REPO}"}
    result = subprocess.run(
        [sys.executable, "-B", "-c", code], env=env, capture_output=True, text=True, check=False, timeout=60
    )
    events = json.loads(result.stderr.splitlines()[-1].removeprefix("AUDIT "))
    kinds = {event[0] for event in events}
    assert {"open", "os.mkdir", "os.link", "socket.__new__"} <= kinds, events


def test_collect_lists_cached_generated_tasks_and_still_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scaffold.skill_eval import generated
    from scaffold.skill_eval.generator import GeneratorSettings
    from scaffold.skill_eval.manifest import synthesize_manifest
    from tests.scaffold.skill_eval.fake_generator import BUILTIN, fake

    folder = skill(tmp_path / "skills")
    monkeypatch.setattr(generated, "run_generator", fake(tmp_path / "calls"))
    generated.ensure_generated(
        synthesize_manifest(folder),
        owner=folder,
        settings=GeneratorSettings("claude-code"),
        builtin_tasks=BUILTIN,
        env={},
    )
    (tmp_path / "home").mkdir()
    (tmp_path / "tmp").mkdir()
    before = _tree(folder, tmp_path / "home", tmp_path / "tmp")
    code, output, events = _collect(tmp_path, folder, env={"ANTHROPIC_API_KEY": "sk-test-collect-000000"})
    assert code == 0, output
    assert events == [], f"--collect did something: {events}"
    assert _tree(folder, tmp_path / "home", tmp_path / "tmp") == before
    assert re.search(r"Tasks:\s+generated cache \(2\)", output)
    assert "  - gen-one  (generated)" in output and "  - gen-two  (generated)" in output
    assert (tmp_path / "calls").read_text().count("\n") == 1  # the generator ran once, for the setup alone

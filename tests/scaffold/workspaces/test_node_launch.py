"""An npm agent CLI on this machine starts on the harness's Node.js, from a compile cache filled once
(scaffold.workspaces.node_launch, scaffold.workspaces.docker.agent_layer.compile_cache)."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path

import pytest

from scaffold.errors import WorkspaceError
from scaffold.workspaces.docker.agent_layer import (
    AgentMount,
    compile_cache,
    install_agent,
    native_addons,
    node_runtime,
)
from scaffold.workspaces.node_launch import local_command

DEBUG = {**os.environ, "NODE_DEBUG_NATIVE": "COMPILE_CACHE"}  # Node.js says whether it took the cache
CHILD = (  # the CLI starts a node of its own, as an agent running the task's programs does
    "const { execFileSync } = require('node:child_process');\n"
    "const probe = \"String(require('node:module').getCompileCacheDir())\";\n"
    "execFileSync(process.execPath, ['-p', probe], { stdio: 'inherit' });\n"
)


@pytest.fixture(scope="module")
def harness_node() -> AgentMount:
    """The Node.js the harness runs npm CLIs on, installed once per machine (as a run would)."""
    spec = node_runtime(platform.machine())
    if spec is None:
        pytest.skip(f"no Node.js build for {platform.machine()}")
    try:
        node = install_agent(spec)
    except WorkspaceError as exc:
        if os.environ.get("COMET_REQUIRE_AGENT_CLIS") == "1":
            pytest.fail(f"cannot install the harness's Node.js: {exc}")
        pytest.skip(f"cannot install the harness's Node.js: {exc}")
    assert node is not None
    return node


def fake_cli(root: Path, body: str = "") -> Path:
    """An npm-style package with a Node.js CLI; its .bin link is what a run finds on PATH."""
    package = root / "node_modules" / "@scope" / "fake-cli"
    package.mkdir(parents=True)
    (package / "package.json").write_text('{"name": "@scope/fake-cli", "version": "1.0.0"}\n')
    script = package / "cli.js"
    script.write_text(
        "#!/usr/bin/env node\n"
        + body
        + "const m = require('node:module');\n"
        + "const dir = m.getCompileCacheDir ? m.getCompileCacheDir() : 'none';\n"
        + "console.log(process.version, dir, process.argv.slice(2));\n"
    )
    script.chmod(0o755)
    (root / "node_modules" / ".bin").mkdir()
    link = root / "node_modules" / ".bin" / "fake-cli"
    link.symlink_to("../@scope/fake-cli/cli.js")
    return link


def test_the_cache_is_filled_once_and_a_later_start_reads_it(harness_node: AgentMount, tmp_path: Path) -> None:
    script = fake_cli(tmp_path / "agent").resolve()
    cache = compile_cache(harness_node, script, "k1", cache_root=tmp_path / "agents")
    entries = list((cache.host / "cache").rglob("*"))
    assert any(e.is_file() for e in entries) and (cache.host / ".complete").read_text() == "k1\n"
    assert not (cache.host / "home").exists()  # the CLI's own start-up files are not kept
    marker = (cache.host / ".complete").stat().st_mtime_ns
    assert compile_cache(harness_node, script, "k1", cache_root=tmp_path / "agents") == cache
    assert (cache.host / ".complete").stat().st_mtime_ns == marker  # not filled again
    node = str(harness_node.host / "node_modules" / ".bin" / "node")
    argv = [node, "--require", str(cache.host / "enable-cache.cjs"), str(script), "--flag"]
    proc = subprocess.run(argv, check=False, capture_output=True, text=True, env=DEBUG)
    assert proc.returncode == 0 and "[ '--flag' ]" in proc.stdout
    assert "cli.js was accepted" in proc.stderr


def test_a_moved_layer_still_reads_its_cache(harness_node: AgentMount, tmp_path: Path) -> None:
    """Portable: the container sees the layer at /opt/comet-agents, the host at ~/.cache (same siblings)."""
    script = fake_cli(tmp_path / "a" / "agents" / "npm-fake").resolve()
    cache = compile_cache(harness_node, script, "k", cache_root=tmp_path / "a" / "agents")
    shutil.copytree(tmp_path / "a", tmp_path / "b", symlinks=True)
    moved_script = tmp_path / "b" / script.relative_to(tmp_path / "a")
    moved_cache = tmp_path / "b" / cache.host.relative_to(tmp_path / "a")
    node = str(harness_node.host / "node_modules" / ".bin" / "node")
    argv = [node, "--require", str(moved_cache / "enable-cache.cjs"), str(moved_script)]
    proc = subprocess.run(argv, check=False, capture_output=True, text=True, env=DEBUG)
    assert proc.returncode == 0 and "cli.js was accepted" in proc.stderr


def test_a_cli_whose_version_fails_gets_no_cache(harness_node: AgentMount, tmp_path: Path) -> None:
    script = fake_cli(tmp_path / "agent", body="process.exit(3);\n").resolve()
    with pytest.raises(WorkspaceError, match="exit code 3"):
        compile_cache(harness_node, script, "k", cache_root=tmp_path / "agents")
    assert list((tmp_path / "agents").glob("node-cache-*")) == []  # no half-made folder stays


def test_a_local_npm_cli_starts_on_the_harness_node_and_its_children_do_not_inherit_the_cache(
    harness_node: AgentMount, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(harness_node.host.parent.parent.parent))  # the agent layer installed
    program = fake_cli(tmp_path / "agent", body=CHILD)
    argv = local_command(str(program))
    node = str(harness_node.host / "node_modules" / ".bin" / "node")
    assert argv[:2] == [node, "--require"] and argv[3] == str(program.resolve())
    # The cache sits beside the machine's real agent layer, keyed by this throwaway script: not kept.
    request.addfinalizer(lambda: shutil.rmtree(Path(argv[2]).parent, ignore_errors=True))
    proc = subprocess.run([*argv, "x"], check=False, capture_output=True, text=True)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and lines[0] == "undefined", proc.stderr  # a node the agent starts: no cache
    version, cache_dir, rest = lines[1].split(" ", 2)
    runtime = node_runtime(platform.machine())
    assert runtime is not None and version == f"v{runtime.version}"
    assert Path(argv[2]).parent in Path(cache_dir).parents
    assert rest == "[ 'x' ]"


def test_what_is_not_an_npm_node_script_starts_as_it_is(tmp_path: Path) -> None:
    shell = tmp_path / "shell-cli"
    shell.write_text("#!/bin/sh\necho hi\n")
    shell.chmod(0o755)
    assert local_command(str(shell)) == [str(shell)]
    loose = tmp_path / "loose.js"  # a Node.js script of no npm package
    loose.write_text("#!/usr/bin/env node\n")
    assert local_command(str(loose)) == [str(loose)]
    program = fake_cli(tmp_path / "agent")
    built = tmp_path / "agent" / "node_modules" / "@scope" / "fake-cli" / "build" / "Release"
    built.mkdir(parents=True)
    (built / "addon.node").write_bytes(b"\x7fELF")
    assert native_addons(program.resolve().parent)
    assert local_command(str(program)) == [str(program)]  # built for the Node.js that installed it


def test_prebuilt_node_api_addons_do_not_keep_a_cli_on_its_own_node(tmp_path: Path) -> None:
    vendor = tmp_path / "pkg" / "vendor" / "audio" / "x64-linux"
    vendor.mkdir(parents=True)
    (vendor / "audio.node").write_bytes(b"\x7fELF")
    assert not native_addons(tmp_path / "pkg")

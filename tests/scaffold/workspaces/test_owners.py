"""Owner marks and the sweep: a folder is removed only when the process that made it is gone (exited,
reaped, a zombie, its pid reused), never while its owner lives, never once kept on purpose."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from scaffold.workspaces.owners import MARK_SUFFIX, OwnedFolders, Owner, mark_of
from tests.support.factories import REPO

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")

_CLAIMER = """
import sys, time
from pathlib import Path
from scaffold.workspaces.owners import OwnedFolders
root, name = Path(sys.argv[1]), sys.argv[2]
OwnedFolders(root).claim(root / name)
(root / name).mkdir(parents=True)
(root / name / "file.txt").write_text("work")
print("ready", flush=True)
time.sleep(600)
"""


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the lock of the marks lives under it
    monkeypatch.setattr("tempfile.tempdir", None)
    return tmp_path / "ws"


@pytest.fixture
def other_session(root: Path) -> Iterator[subprocess.Popen[str]]:
    """Another live session (a process of its own) that claimed and made ``<root>/exp/case``."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _CLAIMER, str(root), "exp/case"], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    yield proc
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    proc.stdout.close()


def test_a_live_sessions_folder_survives_the_sweep(root: Path, other_session: subprocess.Popen[str]) -> None:
    assert OwnedFolders(root).sweep() == []
    assert (root / "exp" / "case" / "file.txt").read_text() == "work"


def test_a_zombie_owner_is_gone(root: Path, other_session: subprocess.Popen[str]) -> None:
    # Killed and not reaped (a SIGKILLed xdist worker until the controller waits for it): it will never clean up.
    other_session.send_signal(signal.SIGKILL)
    while Path(f"/proc/{other_session.pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z":
        time.sleep(0.01)
    assert OwnedFolders(root).sweep() == [root / "exp" / "case"]
    assert not root.joinpath("exp").exists() and list(root.iterdir()) == []


def test_a_reaped_owner_is_gone(root: Path, other_session: subprocess.Popen[str]) -> None:
    other_session.kill()
    other_session.wait()
    assert OwnedFolders(root).sweep() == [root / "exp" / "case"]
    assert list(root.rglob("*")) == []


def test_a_reused_pid_is_another_owner(root: Path) -> None:
    me = Owner.current()
    stale = Owner(me.pid, str(int(me.started) - 1), me.host)  # this pid, but an earlier process
    OwnedFolders(root).claim(root / "exp" / "case", stale)
    (root / "exp" / "case").mkdir(parents=True)
    assert OwnedFolders(root).sweep() == [root / "exp" / "case"]


def test_only_the_named_owner_is_swept(root: Path) -> None:
    me = Owner.current()
    dead_a, dead_b = Owner(me.pid, "1", me.host), Owner(me.pid, "2", me.host)
    owned = OwnedFolders(root)
    for name, owner in (("a", dead_a), ("b", dead_b)):
        owned.claim(root / name, owner)
        (root / name).mkdir()
    assert owned.sweep(owner=dead_a) == [root / "a"]
    assert (root / "b").is_dir()


def test_another_hosts_mark_is_never_judged(root: Path) -> None:
    OwnedFolders(root).claim(root / "case", Owner(1, "1", "some-other-host"))
    (root / "case").mkdir()
    assert OwnedFolders(root).sweep() == []


def test_a_kept_folder_is_never_swept(root: Path) -> None:
    owned = OwnedFolders(root)
    owned.claim(root / "exp" / "kept", Owner(Owner.current().pid, "1", Owner.current().host))
    (root / "exp" / "kept").mkdir(parents=True)
    owned.release(root / "exp" / "kept")  # kept for inspection: no mark any more
    assert owned.sweep() == []
    assert (root / "exp" / "kept").is_dir()


def test_a_mark_cut_short_by_its_writers_death_is_swept(root: Path) -> None:
    (root / "exp" / "case").mkdir(parents=True)
    mark_of(root / "exp" / "case").write_text('{"pid": 12')
    assert OwnedFolders(root).sweep() == [root / "exp" / "case"]


def test_made_temp_folders_are_private_and_marked(root: Path) -> None:
    owned = OwnedFolders(root)
    folder = owned.make_temp("comet-agent-home-")
    assert folder.stat().st_mode & 0o777 == 0o700
    mark = mark_of(folder)
    assert mark.name.endswith(MARK_SUFFIX) and mark.stat().st_mode & 0o777 == 0o600
    assert Owner.parse(mark.read_text()) == Owner.current()
    owned.remove(folder)
    assert not folder.exists() and not mark.exists()

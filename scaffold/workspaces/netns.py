"""A network namespace for the local backend's validation commands: loopback only, nothing else.

Two ways, the first that works on this machine (decided once per backend by :meth:`IsolatedNetwork.make`):

* **enter**: with CAP_SYS_ADMIN (root), a namespace is made once, in a short-lived thread (network
  namespaces belong to threads, so the harness's own threads never leave theirs), its loopback brought
  up and a descriptor kept. To start a command, the calling thread enters it with ``setns``, starts the
  process (which is born inside), and goes back: microseconds per command;
* **command**: otherwise each command starts through ``unshare --user --map-current-user --net``, a new
  user and network namespace per command (about a millisecond; the loopback stays down, which only a
  root-owned namespace may change);
* neither (no user namespaces for unprivileged users, as some distributions ship, or not Linux): not
  available, and :attr:`IsolatedNetwork.problem` says why.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import functools
import os
import shutil
import socket
import struct
import threading
from collections.abc import Iterator, Sequence
from typing import Final

from scaffold.errors import WorkspaceError
from scaffold.util.run_process import run_captured

__all__ = ["IsolatedNetwork", "IsolationWarning"]

_CLONE_NEWNET: Final = 0x40000000
_SIOCGIFFLAGS: Final = 0x8913
_SIOCSIFFLAGS: Final = 0x8914
_IFF_UP: Final = 0x1
_IFREQ: Final = "16sh22x"  # struct ifreq: the interface name, then the flags in its 24-byte union


class IsolationWarning(UserWarning):
    """The local backend cannot keep validation off the network on this machine."""


class IsolatedNetwork:
    """Where strict validation commands of the local backend run (see the module docstring)."""

    def __init__(self, *, fd: int | None = None, prefix: Sequence[str] = (), problem: str = "") -> None:
        self._fd = fd
        self._prefix = tuple(prefix)
        self.problem = problem
        """Why no namespace is available ("" when one is)."""

    @property
    def available(self) -> bool:
        return self._fd is not None or bool(self._prefix)

    @classmethod
    def make(cls) -> IsolatedNetwork:
        """The first way that works here; one that is not available, with the reasons, otherwise."""
        fd, why_not_enter = _namespace_in_a_thread()
        if fd is not None:
            return cls(fd=fd)
        prefix, why_not_command = _unshare_command()
        if prefix:
            return cls(prefix=prefix)
        return cls(
            problem=(
                "the local backend runs validation with this machine's network: it can neither make a network "
                f"namespace ({why_not_enter}) nor start one with unshare ({why_not_command}). Run as root, "
                "allow unprivileged user namespaces, or use --backend docker for validation without network"
            )
        )

    @contextlib.contextmanager
    def entered(self, argv: Sequence[str]) -> Iterator[Sequence[str]]:
        """The command to start for *argv*, and the calling thread inside the namespace while it starts.

        The process must be started inside the ``with`` block: it is born in the calling thread's namespace.
        """
        if self._fd is None:
            yield [*self._prefix, *argv]
            return
        home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        try:
            _setns(self._fd)
            try:
                yield argv
            finally:
                _setns(home)
        finally:
            os.close(home)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


@functools.cache
def _libc() -> ctypes.CDLL:
    """The C library, loaded once (a CDLL is a class built anew each time: ~50 µs)."""
    return ctypes.CDLL(None, use_errno=True)


def _setns(fd: int) -> None:
    if _libc().setns(fd, _CLONE_NEWNET) != 0:
        raise WorkspaceError(f"cannot switch network namespace: {os.strerror(ctypes.get_errno())}")


def _namespace_in_a_thread() -> tuple[int | None, str]:
    """A descriptor of a new network namespace with its loopback up, made by a thread that then ends."""
    made: dict[str, int | str] = {}

    def work() -> None:
        try:
            if _libc().unshare(_CLONE_NEWNET) != 0:
                made["error"] = f"unshare: {os.strerror(ctypes.get_errno())}"
                return
            _loopback_up()
            made["fd"] = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        except (OSError, AttributeError) as exc:  # AttributeError: a libc without unshare (not Linux)
            made["error"] = str(exc)

    thread = threading.Thread(target=work, name="comet-netns", daemon=True)
    thread.start()
    thread.join()
    fd = made.get("fd")
    return (fd, "") if isinstance(fd, int) else (None, str(made.get("error", "unknown")))


def _loopback_up() -> None:
    """Bring up ``lo`` in the calling thread's network namespace (validation may serve on 127.0.0.1)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        flags = struct.unpack(_IFREQ, fcntl.ioctl(sock, _SIOCGIFFLAGS, struct.pack(_IFREQ, b"lo", 0)))[1]
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack(_IFREQ, b"lo", flags | _IFF_UP))


def _unshare_command() -> tuple[tuple[str, ...], str]:
    """``unshare`` options that start a command in new user and network namespaces here, or the reason."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return (), "the unshare command (util-linux) is not installed"
    problem = ""
    for mapping in ("--map-current-user", "--map-root-user"):  # the first needs util-linux 2.38
        argv = (unshare, "--user", mapping, "--net", "--")
        try:
            probe = run_captured([*argv, "true"], timeout=10)
        except OSError as exc:
            return (), str(exc)
        if probe.timed_out:
            return (), f"{unshare} did not answer within 10 s"
        if probe.exit_code == 0:
            return argv, ""
        problem = probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else f"exit code {probe.exit_code}"
    return (), problem

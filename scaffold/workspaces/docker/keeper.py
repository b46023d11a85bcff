"""The keeper: the container's main process, and the harness's channel to it.

The keeper is a small shell under Docker's init. The container is created with an open stdin, and the
harness talks to the keeper over one attached stream (~1 ms a round trip, where an ``exec`` costs
~55 ms: runc starting a process in the container's namespaces):

* ``reset ID`` kills every process but the init and the keeper (shell builtins only: it works even
  when a fork bomb holds every pid of the container's limit, where no exec can start). Used when the
  agent's phase ends and as the last resort against a process tree that cannot be killed otherwise.
* ``run ID ENV`` runs ``<control>/ID.sh``, a script the harness wrote into the control folder (a host
  folder bind-mounted at :data:`CONTROL`; bind mode only), with its output in ``ID.out``/``ID.err``
  there, and answers ``ID STATUS`` when it ends. The script runs the same wrapper as an exec (marker,
  own sweep), so the semantics are an exec's; ~50 ms less per command. Anything unusual (copy mode, a
  keeper that does not answer, an image without ``setsid -f``) falls back to ``exec``.
* ``start ARGV`` (an argument, as it starts): the image's ENTRYPOINT with Harbor's command, in the
  background (:data:`START`, :func:`service_command`), so what a Harbor image starts from its entrypoint runs.

The command's environment never goes into a file: it holds the agent's credentials, and a file in the
control folder outlives a SIGKILLed harness (and sits in the engine's view of the host). ``ENV`` on the
``run`` line carries it, as shell assignments the keeper exports in the subshell that starts the command:
it travels over the attached stream (a pipe into the container, never stored by the engine, unlike a
container's create-time environment, which the engine keeps in its data root and shows in ``inspect``)
and lives only in the memory of the command's processes, as with an exec's ``environment``, at no extra
cost (no exec, no extra process). The control folder itself is 0700 and its files 0600, and each
command's files are removed when it ends (the folder with the trial).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import socket
import struct
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from scaffold.errors import WorkspaceError
from scaffold.util.process_result import ProcessResult
from scaffold.util.run_process import TERM_GRACE_S
from scaffold.workspaces.docker.exec import READER_GRACE_S, split_env, wrap_command

__all__ = [
    "CONTROL",
    "CONTROL_PARENT",
    "HARBOR_COMMAND",
    "KEEPER_SCRIPT",
    "NO_DNS",
    "START",
    "Keeper",
    "keeper_entrypoint",
    "make_control",
    "service_command",
]

CONTROL = "/run/comet-ctl"
CONTROL_PARENT = ".comet-ctl"
"""The folder under the workspace root that holds the trials' control folders."""
NO_DNS = "no-dns"
"""The keeper's argument for a container on the internal host-only network. Docker's embedded resolver
(127.0.0.11) never answers there for a name outside (there is no way out to ask), so every lookup an
agent CLI makes waits out the resolver's timeout: Claude Code looks up api.anthropic.com as it exits,
even with its base URL an address, and each trial's agent phase took 1.1 s longer than the same CLI's
(measured: 6.2 s against 5.1 s, the CLI's own duration 4.2 s in both). Every way out of that network
goes through the egress proxy or relay, which is reached by address and resolves names itself, so
names are of no use in the container: the keeper rewrites /etc/resolv.conf (the engine's per-container
copy) to the container's loopback, where a lookup is refused at once (glibc connects its UDP socket, so
the refusal is reported; musl waits out the timeout, 1 s). A keeper that is not root cannot write it and
the lookups wait, as before; /etc/hosts (localhost, the container's own name) still answers."""
START: Final = "start"
"""The keeper's argument before the command it starts in the background (the image's ENTRYPOINT with its
command, :func:`service_command`): Harbor runs a task's image as Docker does, so a service the ENTRYPOINT
starts (a gateway, a database) runs during the agent's and the verifier's phases. The keeper stays the
main process, as it must (commands, resets); the entrypoint runs beside it, reparented to the init."""
HARBOR_COMMAND: Final = ("sh", "-c", "sleep infinity")
"""The command Harbor gives a task's main container (its ``docker-compose-build.yaml``), after the image's
ENTRYPOINT: an entrypoint that ends with ``exec "$@"`` then keeps a ``sleep infinity`` running, as there."""
REPLY_S = 30.0
CLAIM_S = 5.0

# Answers "reset ID" and "run ID ENV" with "ID STATUS" on stdout. `run` starts the script through
# `setsid -f` rather than as a background job (`&`): a shell without job control starts background jobs
# with SIGINT and SIGQUIT ignored, and a program cannot undo that (Python would not even install its
# Ctrl-C handler), whereas setsid's child keeps the keeper's default dispositions, gets reparented to the
# init (which reaps it) and leaves the keeper free for the next line. The script is claimed by renaming it
# first: the harness, when it gets no answer in time, cancels by renaming it too, and only one rename
# can win, so a command never runs twice. ENV (shell assignments, one line: see _assignments) is
# exported in a subshell that then becomes setsid, so the keeper's own environment never changes; what
# the subshell needs after the export (setsid and mv, found once at start; the folder; the id) is in
# its positional parameters, which no assignment can touch, so a command's PATH or a variable named
# like one of the keeper's cannot redirect it (both are looked up on PATH with builtins: no fork at start).
# Should stdin close, the keeper goes on as `sleep infinity`.
# With the argument `no-dns` (a container on the internal host-only network), the keeper first points
# the container's resolver at its own loopback, where nothing listens (see NO_DNS below), and `dns ID`
# puts the engine's resolver back (the container joined a network with a way out: a verifier's internet).
# With `start ARGV...` (after `no-dns`, if any), it then starts ARGV in its own session, as the image's
# ENTRYPOINT would run as a container's main process (see START): its output goes to the container's
# stderr (fd 3, saved before the keeper's own stderr went to /dev/null), which `docker logs` shows and
# the keeper's attached stream (stdout only) never carries.
KEEPER_SCRIPT = r"""
exec 3>&2 2>/dev/null
ctl=/run/comet-ctl
fast=
nl='
'
resolver=
if [ "$1" = no-dns ]; then
  shift
  saved=
  while IFS= read -r l || [ -n "$l" ]; do saved="$saved$l$nl"; done < /etc/resolv.conf
  # Only a rewrite that took is undone by `dns` (a keeper that is not root changes nothing).
  printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1 ndots:0\n' > /etc/resolv.conf && resolver=$saved
fi
sid= mv= IFS=:
for dir in $PATH; do
  [ -z "$sid" ] && [ -x "$dir/setsid" ] && sid=$dir/setsid
  [ -z "$mv" ] && [ -x "$dir/mv" ] && mv=$dir/mv
done
unset IFS
if [ "$1" = start ]; then
  shift
  if [ -n "$sid" ]; then "$sid" -f "$@" < /dev/null >&3 2>&3; else "$@" < /dev/null >&3 2>&3 & fi
fi
exec 3>&-
[ -d "$ctl" ] && [ -w "$ctl" ] && [ -n "$sid" ] && [ -n "$mv" ] &&
  "$sid" -f true < /dev/null > /dev/null && fast=1
# `signal_all SIG STATES`: send SIG to every process but the init and the keeper whose state (one letter
# of /proc/PID/stat) does not match STATES (a bracket pattern); true when there was none to send it to.
signal_all() {
  sig=$1 skip=$2 hit=
  for dir in /proc/[0-9]*; do
    pid=${dir#/proc/}
    case $pid in 1|$$) continue ;; esac
    read -r stat < "$dir/stat" || continue
    set -- ${stat##*) }
    case $1 in $skip) continue ;; esac
    kill "-$sig" "$pid" && hit=1
  done
  [ -z "$hit" ]
}
reset() {
  # First stop every process (a stopped process cannot fork), round after round until a round finds none
  # running: a fork bomb outruns rounds of killing, whose gaps its survivors fill again. Then kill them all.
  round=0
  while [ "$round" -lt 100 ]; do
    round=$((round + 1))
    signal_all STOP '[ZXTt]' && break
  done
  round=0
  while [ "$round" -lt 100 ]; do
    round=$((round + 1))
    signal_all KILL '[ZX]' && return 0
  done
  return 1
}
while IFS= read -r line; do
  case $line in
    "reset "*) reset; echo "${line#reset } $?" ;;
    "dns "*) [ -z "$resolver" ] || printf %s "$resolver" > /etc/resolv.conf; echo "${line#dns } $?" ;;
    "run "*)
      id=${line#run } env=
      case $id in *" "*) env=${id#* } id=${id%% *} ;; esac
      if [ -z "$fast" ]; then echo "$id unsupported"; continue; fi
      (
        set -- "$sid" "$mv" "$ctl" "$id"
        [ -z "$env" ] || eval "export $env" || exit 0
        exec "$1" -f /bin/sh -c '"$1" "$2/$3.sh" "$2/$3.run" || exit 0
          /bin/sh "$2/$3.run" < /dev/null > "$2/$3.out" 2> "$2/$3.err"
          echo "$3 $?"' comet-run "$2" "$3" "$4" < /dev/null
      ) ;;
  esac
done
exec sleep infinity
"""


def service_command(entrypoint: Sequence[str], command: Sequence[str] | None = None) -> tuple[str, ...]:
    """What a Harbor task's main container runs beside the keeper: the ENTRYPOINT (the image's, or the
    compose file's) with the compose file's command, else Harbor's :data:`HARBOR_COMMAND`; nothing when
    there is no entrypoint and the command is Harbor's (a ``sleep`` that would only idle)."""
    argv = (*entrypoint, *(HARBOR_COMMAND if command is None else command))
    return () if not entrypoint and command is None else argv


def keeper_entrypoint(*, no_dns: bool, start: Sequence[str] = ()) -> list[str]:
    """The ``entrypoint`` a container is created with: the keeper, its resolver rewrite, what it starts."""
    return [
        "/bin/sh",
        "-c",
        KEEPER_SCRIPT,
        "comet-keeper",
        *([NO_DNS] if no_dns else []),
        *([START, *start] if start else []),
    ]


Kill = Callable[[str, float, bool], bool]
"""kill(mark, grace, may_escalate) -> escalated: end a command's process tree (see kill_marked)."""


class Keeper:
    """The harness's side of :data:`KEEPER_SCRIPT`. *control* is the host folder mounted at
    :data:`CONTROL` (None in copy mode: no fast path). Attached on first use; a reader thread hands the
    answers to whoever waits for them, so several commands may run at once."""

    def __init__(self, stream_api: Any, container_id: str, control: Path | None) -> None:
        self._api = stream_api
        self._container_id = container_id
        self._control = control
        self._socket: Any = None
        self._reader: threading.Thread | None = None
        self._answers: dict[str, str] = {}
        self._changed = threading.Condition()
        self._send_lock = threading.Lock()
        self.broken = False  # the stream ended: the keeper (hence the container) is gone
        self.fast = control is not None

    # -- the channel

    def _attach(self) -> bool:
        with self._send_lock:
            if self._socket is None and not self.broken:
                try:
                    params = {"stdin": 1, "stdout": 1, "stream": 1}
                    self._socket = self._api.attach_socket(self._container_id, params=params)
                except Exception:
                    self.broken = True
                    return False
                self._reader = threading.Thread(target=self._read, name="comet-keeper", daemon=True)
                self._reader.start()
        return not self.broken

    def _send(self, line: str) -> bool:
        if not self._attach():
            return False
        try:
            with self._send_lock:
                getattr(self._socket, "_sock", self._socket).sendall(f"{line}\n".encode())
        except Exception:
            return False
        return True

    def _read(self) -> None:
        """Parse the keeper's multiplexed stdout (8-byte frame headers) into answers, until it ends."""
        raw = getattr(self._socket, "_sock", self._socket)
        buffer, text = b"", ""
        try:
            while chunk := raw.recv(65536):
                buffer += chunk
                while len(buffer) >= 8 and len(buffer) >= 8 + (size := struct.unpack(">I", buffer[4:8])[0]):
                    text += buffer[8 : 8 + size].decode("utf-8", errors="replace")
                    buffer = buffer[8 + size :]
                lines = text.split("\n")
                text = lines.pop()
                with self._changed:
                    for line in lines:
                        ident, _, status = line.partition(" ")
                        self._answers[ident] = status
                    self._changed.notify_all()
        except Exception:
            pass
        finally:
            with self._changed:
                self.broken = True
                self._changed.notify_all()

    def _wait(self, ident: str, deadline: float) -> str | None:
        """The answer to *ident*, or None when the deadline passes or the stream ends first."""
        with self._changed:
            while ident not in self._answers:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.broken:
                    return None
                self._changed.wait(remaining)
            return self._answers.pop(ident)

    def close(self) -> None:
        """Close the attached stream (socket, its file wrapper, the HTTP response); the reader ends."""
        sock, self._socket = self._socket, None
        if sock is not None:
            raw = getattr(sock, "_sock", sock)
            with contextlib.suppress(Exception):
                raw.shutdown(socket.SHUT_RDWR)
            for closable in (raw, sock, getattr(sock, "_response", None)):
                with contextlib.suppress(Exception):
                    closable.close()  # type: ignore[union-attr]
        if self._reader is not None:
            self._reader.join(1.0)
            self._reader = None

    # -- requests

    def reset(self, timeout: float = REPLY_S) -> bool:
        """End every process of the container but the init and the keeper; False when that failed."""
        ident = uuid.uuid4().hex
        return self._send(f"reset {ident}") and self._wait(ident, time.monotonic() + timeout) == "0"

    def restore_dns(self, timeout: float = REPLY_S) -> bool:
        """Give the container back the engine's resolver (see :data:`NO_DNS`); False when that failed."""
        ident = uuid.uuid4().hex
        return self._send(f"dns {ident}") and self._wait(ident, time.monotonic() + timeout) == "0"

    def run(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        workdir: str,
        timeout: float,
        stdout_path: Path,
        stderr_path: Path,
        removals: Sequence[str],
        kill: Kill,
        where: str,
    ) -> ProcessResult | None:
        """Run *argv* as the keeper's child, with an exec's semantics (see :func:`run_command`). None when
        the keeper did not take the command, which then has not run: the caller uses ``exec``."""
        if not self.fast or self.broken:
            return None
        assert self._control is not None
        plain, odd = split_env(env)
        if odd:  # names a shell cannot export would have to be written into the script: exec keeps them in memory
            return None
        ident, mark = uuid.uuid4().hex, uuid.uuid4().hex
        files = _Files(self._control, ident, stdout_path, stderr_path)
        command = "exec " + shlex.join(wrap_command(argv, mark, removals))
        files.script([f"cd {shlex.quote(workdir)} || exit 126", "unset OLDPWD", command])
        start = time.monotonic()
        deadline, timed_out, code = start + timeout, False, None
        try:
            if not self._send(f"run {ident} {_assignments(plain)}".rstrip()):
                files.cancel()
                return None
            status = self._wait(ident, min(deadline, start + CLAIM_S))
            if status is None and not self.broken and time.monotonic() < deadline and files.cancelled():
                self.fast = False  # not claimed in time: it never ran; this keeper gets no more commands
                return None
            if status == "unsupported":
                self.fast = False
                files.cancel()
                return None
            if status is None:
                status = self._wait(ident, deadline)
            if status is None and self.broken:
                raise WorkspaceError(
                    f"running {argv[0]!r} in the container of {where}: the container's main process is gone "
                    "(the container stopped or was removed)"
                )
            if status is None:
                timed_out = True
                if not kill(mark, TERM_GRACE_S, True):  # else every process, with the runner, is gone
                    self._wait(ident, time.monotonic() + READER_GRACE_S)
            else:
                code = int(status) if status.lstrip("-").isdigit() else None
                if code != 0:  # only exit 0 proves that the command's own sweep ran
                    kill(mark, 0, True)
        except BaseException as exc:  # Ctrl-C: end the tree now; the Runner then destroys the container
            with contextlib.suppress(Exception):
                kill(mark, 0, False)
            if isinstance(exc, Exception) and not isinstance(exc, WorkspaceError):
                raise WorkspaceError(f"running {argv[0]!r} in the container of {where}: {exc}") from None
            raise
        finally:
            files.finish()
        return ProcessResult(code, timed_out, time.monotonic() - start, stdout_path, stderr_path)


def _assignments(env: Mapping[str, str]) -> str:
    """*env* as one line of shell assignments (``A='x' B='y'``) for the keeper's ``export``: values are
    single-quoted, and a newline in one becomes ``"$nl"`` (the keeper's newline) so the line stays one."""
    return " ".join(f"{name}={_quote(value)}" for name, value in env.items())


def _quote(value: str) -> str:
    return '"$nl"'.join(shlex.quote(part) for part in value.split("\n"))


def make_control(workspace_root: Path) -> Path:
    """A new control folder, ``<workspace_root>/.comet-ctl/<id>``: both folders 0700 (its files are 0600,
    see :class:`_Files`), so nobody but this user (and the container's root) reads what passes through."""
    parent = workspace_root / CONTROL_PARENT
    control = parent / uuid.uuid4().hex
    try:
        parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        parent.chmod(0o700)  # made by an older version, or under an odd umask
        control.mkdir(mode=0o700)
        control.chmod(0o700)
    except OSError as exc:
        raise WorkspaceError(f"cannot make a private control folder in {parent}: {exc.strerror}") from None
    return control


def _private_file(path: Path, data: bytes = b"") -> None:
    """Create *path* (new) with mode 0600 and write *data*."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


class _Files:
    """A command's files in the control folder, each 0600. Its output files are created here (by this
    user: the container's root writes into them, the owner stays) and hard-linked to the caller's paths,
    so the output is visible there while the command runs; on another file system it is copied at the
    end. The script holds the working directory and the command line, never the environment."""

    def __init__(self, control: Path, ident: str, stdout_path: Path, stderr_path: Path) -> None:
        self._paths = {suffix: control / f"{ident}.{suffix}" for suffix in ("sh", "run", "cancelled", "part")}
        self._outputs: list[tuple[Path, Path, bool]] = []
        for suffix, final in (("out", stdout_path), ("err", stderr_path)):
            temp = control / f"{ident}.{suffix}"
            _private_file(temp)
            final.parent.mkdir(parents=True, exist_ok=True)
            final.unlink(missing_ok=True)
            try:
                os.link(temp, final)
                linked = True
            except OSError:
                final.write_bytes(b"")
                linked = False
            self._outputs.append((temp, final, linked))

    def script(self, lines: list[str]) -> None:
        _private_file(self._paths["part"], ("\n".join(lines) + "\n").encode())
        os.replace(self._paths["part"], self._paths["sh"])  # the keeper never sees half a script

    def cancelled(self) -> bool:
        """Take the script back unless the keeper claimed it already (one of the two renames wins)."""
        try:
            self._paths["sh"].rename(self._paths["cancelled"])
        except FileNotFoundError:
            return False
        return True

    def cancel(self) -> None:
        self.cancelled()
        self.finish()

    def finish(self) -> None:
        for temp, final, linked in self._outputs:
            if not linked:
                with contextlib.suppress(OSError):
                    shutil.copyfile(temp, final)
            temp.unlink(missing_ok=True)
        self._outputs = []
        for path in self._paths.values():
            path.unlink(missing_ok=True)

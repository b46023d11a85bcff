"""Commands in a trial's container: ``exec`` with a time limit and output streamed to host files, the
kill of a command's process tree, and the container's main process (the keeper) that can end every
other process in one round trip.

Costs measured on the 2-core machine (engine 20.10): an ``exec`` round trip ~55 ms however small the
command, an API call without a process ~2 ms. So each command is one exec that also cleans up after
itself, and the per-phase cleanup goes through the keeper instead of a fresh container or another exec.
"""

from __future__ import annotations

import contextlib
import select
import socket
import struct
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from scaffold.errors import WorkspaceError
from scaffold.procs import TERM_GRACE_S, ProcessResult

__all__ = ["EXEC_MARK", "KEEPER_SCRIPT", "Keeper", "exit_code", "quick_exec", "run_command"]

EXEC_MARK = "COMET_EXEC_ID"
READER_GRACE_S = 5.0
KEEPER_REPLY_S = 30.0

# `sweep SIGNAL`: send SIGNAL to every process whose environment holds the line $mark, among those
# started at or after $born (/proc/PID/stat field 22; older processes cannot descend from the command,
# so they are skipped with shell builtins and, usually, nothing at all is forked). Returns 0 when it
# signalled something. A process caught in the middle of an execve shows an empty environment for a
# moment: such a process is looked at again in another round (at most five).
_SWEEP = r"""
nl='
'
sweep() {
  sig=$1 hit=1 round=0
  while [ "$round" -lt 5 ]; do
    round=$((round + 1)) unsure=
    for dir in /proc/[0-9]*; do
      [ "${dir#/proc/}" = $$ ] && continue
      read -r stat 2>/dev/null < "$dir/stat" || continue
      set -- ${stat##*) }
      case $1 in Z|X) continue ;; esac
      [ "${20}" -ge "$born" ] || continue
      env=$(tr '\0' '\n' 2>/dev/null < "$dir/environ")
      case "$nl$env$nl" in
        "$nl$nl") unsure=1 ;;
        *"$nl$mark$nl"*) kill "-$sig" "${dir#/proc/}" 2>/dev/null && hit=0 ;;
      esac
    done
    [ -z "$unsure" ] && break
  done
  return $hit
}
"""

# Runs "$@" with EXEC_MARK=$1 in its environment (set in a subshell right before exec, so this shell
# itself is unmarked), after removing the $2 paths that follow (queued removals of copy mode). When the
# command exits, every process still carrying the mark (its background children, also those that
# called setsid) is killed, as the local backend ends a command's process group; only then does this
# shell exit, which ends the output stream. One exec instead of a command exec plus a killer exec.
# When the sweep cannot fork (a fork bomb at the pids limit), the shell fails with a non-zero status,
# and the caller runs the killer for every non-zero status: exit 0 proves the sweep ran.
_RUN_SCRIPT = (
    _SWEEP
    + r"""
mark="COMET_EXEC_ID=$1" n=$2
shift 2
while [ "$n" -gt 0 ]; do rm -rf -- "$1"; shift; n=$((n - 1)); done
( export "$mark"; exec "$@" )
code=$?
read -r stat < /proc/$$/stat
set -- ${stat##*) }
born=${20}
sweep KILL
exit "$code"
"""
)

# Kills every process whose environment holds EXEC_MARK=$1: SIGTERM, $2 seconds, then SIGKILL. For
# timeouts, Ctrl-C and commands that failed. A process group would miss children that called setsid
# (daemons, `nohup setsid ...`); the inherited environment marker follows them. The killer's own
# processes never carry the marker.
_KILL_SCRIPT = (
    _SWEEP
    + r"""
mark="$0=$1" born=0
if [ "$2" != 0 ] && sweep TERM; then sleep "$2"; fi
sweep KILL
exit 0
"""
)

# The container's main process, under Docker's init (PID 1). It waits on its stdin (the engine keeps it
# open: the container is created with OpenStdin) for "reset ID" and then kills every process but PID 1
# and itself (repeating until a round finds none, so processes forked meanwhile go too; zombies are
# the init's to reap), and answers "ID STATUS". Shell builtins only: it needs no fork, so it works even
# when a fork bomb holds every pid of the container's limit, where a killer exec cannot even start.
# Should stdin ever close, it goes on as the `sleep infinity` it replaces.
KEEPER_SCRIPT = r"""
exec 2>/dev/null
reset() {
  round=0
  while [ "$round" -lt 100 ]; do
    round=$((round + 1))
    hit=
    for dir in /proc/[0-9]*; do
      pid=${dir#/proc/}
      case $pid in 1|$$) continue ;; esac
      read -r stat < "$dir/stat" || continue
      set -- ${stat##*) }
      case $1 in Z|X) continue ;; esac
      kill -KILL "$pid" && hit=1
    done
    [ -z "$hit" ] && return 0
  done
  return 1
}
while IFS= read -r line; do
  case $line in
    "reset "*) reset; echo "${line#reset } $?" ;;
  esac
done
exec sleep infinity
"""


class Keeper:
    """The harness's side of :data:`KEEPER_SCRIPT`: an attached stdin/stdout stream to the main process.

    ``reset()`` ends every process of the container but the init and the keeper in ~1-2 ms (an exec
    costs ~55 ms, a fresh container ~250 ms plus a removal), and works at the pids limit. Attached on
    first use; any failure returns False and the caller falls back to replacing the container.
    """

    def __init__(self, stream_api: Any, container_id: str) -> None:
        self._api = stream_api
        self._container_id = container_id
        self._socket: Any = None
        self._lock = threading.Lock()

    def reset(self, timeout: float = KEEPER_REPLY_S) -> bool:
        with self._lock:
            try:
                if self._socket is None:
                    params = {"stdin": 1, "stdout": 1, "stream": 1}
                    self._socket = self._api.attach_socket(self._container_id, params=params)
                raw = getattr(self._socket, "_sock", self._socket)
                nonce = uuid.uuid4().hex[:12]
                raw.sendall(f"reset {nonce}\n".encode())
                return _read_reply(raw, nonce, time.monotonic() + timeout) == "0"
            except Exception:
                self.close()
                return False

    def close(self) -> None:
        """Close the attached stream: the socket, its file wrapper and the HTTP response holding it."""
        sock, self._socket = self._socket, None
        if sock is None:
            return
        raw = getattr(sock, "_sock", sock)
        with contextlib.suppress(Exception):
            raw.shutdown(socket.SHUT_RDWR)
        for closable in (raw, sock, getattr(sock, "_response", None)):
            with contextlib.suppress(Exception):
                closable.close()  # type: ignore[union-attr]


def _read_reply(raw: Any, nonce: str, deadline: float) -> str | None:
    """Read the keeper's multiplexed stdout (8-byte frame headers) until the line answering *nonce*."""
    buffer, text = b"", ""
    while True:
        while len(buffer) >= 8:
            size = struct.unpack(">I", buffer[4:8])[0]
            if len(buffer) < 8 + size:
                break
            text += buffer[8 : 8 + size].decode("utf-8", errors="replace")
            buffer = buffer[8 + size :]
        while "\n" in text:
            line, text = text.split("\n", 1)
            answer, _, status = line.partition(" ")
            if answer == nonce:
                return status
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([raw], [], [], remaining)[0]:
            return None
        chunk = raw.recv(4096)
        if not chunk:
            return None
        buffer += chunk


def run_command(
    api: Any,
    stream_api: Any,
    container_id: str,
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    workdir: str,
    timeout: float,
    stdout_path: Path,
    stderr_path: Path,
    removals: Sequence[str] = (),
    escalate: Callable[[], None],
    where: str,
) -> ProcessResult:
    """Run *argv* in the container; on timeout, or when it exits, end every process it started.

    Timeout: kill the command's process tree inside the container (by its environment marker), not
    the container: the trial still needs it. When even the killer cannot start, *escalate* ends every
    process of the container (the keeper's reset, else a replacement). *where* names the workspace in
    errors.
    """
    stdout_path.parent.mkdir(parents=True, exist_ok=True)
    stderr_path.parent.mkdir(parents=True, exist_ok=True)
    mark = uuid.uuid4().hex
    wrapped = ["/bin/sh", "-c", _RUN_SCRIPT, "comet-exec", mark, str(len(removals)), *removals, *argv]
    start = time.monotonic()
    with stdout_path.open("wb", buffering=0) as out, stderr_path.open("wb", buffering=0) as err:
        try:
            exec_id = api.exec_create(container_id, wrapped, environment=dict(env), workdir=workdir)["Id"]
            chunks = stream_api.exec_start(exec_id, stream=True, demux=True)
        except Exception as exc:
            raise WorkspaceError(f"cannot run {argv[0]!r} in the container of {where}: {exc}") from None
        reader = threading.Thread(target=_pump, args=(chunks, out, err), daemon=True)
        reader.start()
        timed_out = False
        try:
            deadline = start + timeout
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = True
                    break
                reader.join(min(remaining, 0.5))
                # Ended, or exited while a process that shed the marker still holds its output open.
                if not reader.is_alive() or not api.exec_inspect(exec_id)["Running"]:
                    break
            if timed_out:
                _kill(api, container_id, mark, TERM_GRACE_S, escalate)
            reader.join(READER_GRACE_S)
            code = None if timed_out else exit_code(api, exec_id)
            if code != 0 and not timed_out:  # only exit 0 proves that the command's own sweep ran
                _kill(api, container_id, mark, 0, escalate)
        except BaseException as exc:  # Ctrl-C: end the tree now; the Runner then destroys the container
            with contextlib.suppress(Exception):
                _kill(api, container_id, mark, 0, None)
            if isinstance(exc, Exception) and not isinstance(exc, WorkspaceError):  # e.g. container gone
                raise WorkspaceError(f"running {argv[0]!r} in the container of {where}: {exc}") from None
            raise
        finally:
            _close_stream(chunks)
            reader.join(1.0)
    return ProcessResult(code, timed_out, time.monotonic() - start, stdout_path, stderr_path)


def _kill(api: Any, container_id: str, mark: str, grace: float, escalate: Callable[[], None] | None) -> None:
    """End every process of the exec marked *mark*; when the killer cannot run, *escalate*."""
    try:
        kill = api.exec_create(container_id, ["/bin/sh", "-c", _KILL_SCRIPT, EXEC_MARK, mark, f"{grace:g}"])
        api.exec_start(kill["Id"])
        ok = exit_code(api, kill["Id"]) == 0
    except Exception:
        ok = False
    if not ok and escalate is not None:
        escalate()


def exit_code(api: Any, exec_id: str) -> int | None:
    """The exit code of an exec whose output has ended (it may take a moment to be reported)."""
    for _ in range(100):
        info = api.exec_inspect(exec_id)
        if not info["Running"]:
            code = info.get("ExitCode")
            return int(code) if code is not None else None
        time.sleep(0.02)
    return None


def quick_exec(api: Any, container_id: str, argv: Sequence[str], workdir: str) -> tuple[int | None, bytes, bytes]:
    """Run a short command of the harness (a listing, a removal, a chown) and collect its output."""
    exec_id = api.exec_create(container_id, list(argv), workdir=workdir)["Id"]
    out, err = api.exec_start(exec_id, demux=True)
    return exit_code(api, exec_id), out or b"", err or b""


def _close_stream(chunks: Any) -> None:
    """Close an exec output stream (a ``docker.types.CancellableStream``) and its HTTP response.

    ``close()`` shuts the socket down, which also wakes a reader still blocked on it; the response
    holds a file object on that socket which must be closed too, or the socket is never released.
    """
    with contextlib.suppress(Exception):
        chunks.close()
    with contextlib.suppress(Exception):
        chunks._response.close()


def _pump(chunks: Any, out: IO[bytes], err: IO[bytes]) -> None:
    """Copy an exec's demultiplexed output into the two files until the stream ends or is closed."""
    with contextlib.suppress(Exception):  # the stream was shut, or the files closed after a timeout
        for stdout, stderr in chunks:
            if stdout:
                out.write(stdout)
            if stderr:
                err.write(stderr)

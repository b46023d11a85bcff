"""Commands in a trial's container through ``exec``: a time limit, output streamed to host files, and
the kill of a command's process tree (the wrapper and killer scripts are shared with the keeper's fast
path, :mod:`.keeper`).

Costs measured on the 2-core machine (engine 20.10): an ``exec`` round trip ~55 ms however small the
command (runc starts a process in the container's namespaces), an API call without a process ~2 ms.
So each command is one exec that also cleans up after itself.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from scaffold.errors import WorkspaceError
from scaffold.util.process_result import ProcessResult
from scaffold.util.run_process import TERM_GRACE_S

__all__ = ["EXEC_MARK", "exit_code", "kill_marked", "quick_exec", "run_command", "split_env", "wrap_command"]

EXEC_MARK = "COMET_EXEC_ID"
READER_GRACE_S = 5.0

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
        *"$nl$mark$nl"*) kill "-$sig" "${dir#/proc/}" 2>/dev/null && hit=0 killed="$killed ${dir#/proc/}" ;;
      esac
    done
    [ -z "$unsure" ] && break
  done
  return $hit
}
# `settle`: wait (at most about a second) until every process the sweeps killed is dead. A signal is
# delivered when its target next runs, so on a busy machine a killed job could still be listed by the
# next command; the contract is that it is gone when the command's exit is reported.
settle() {
  tries=0
  while [ -n "$killed" ] && [ "$tries" -lt 100 ]; do
    alive=
    for pid in $killed; do
      read -r stat 2>/dev/null < "/proc/$pid/stat" || continue
      set -- ${stat##*) }
      case $1 in Z|X) ;; *) alive="$alive $pid" ;; esac
    done
    killed=$alive tries=$((tries + 1))
    [ -n "$killed" ] && { sleep 0.01 2>/dev/null || :; }
  done
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
mark="COMET_EXEC_ID=$1" n=$2 killed=
shift 2
while [ "$n" -gt 0 ]; do rm -rf -- "$1"; shift; n=$((n - 1)); done
( export "$mark"; exec "$@" )
code=$?
read -r stat < /proc/$$/stat
set -- ${stat##*) }
born=${20}
sweep KILL
settle
exit "$code"
"""
)

# The same without the sweep at exit: what the command left running in the background stays (a Harbor
# task's agent starts a server its verifier checks). A timeout still kills the whole tree.
_RUN_KEEP_SCRIPT = r"""
mark="COMET_EXEC_ID=$1" n=$2 killed=
shift 2
while [ "$n" -gt 0 ]; do rm -rf -- "$1"; shift; n=$((n - 1)); done
( export "$mark"; exec "$@" )
"""

# Kills every process whose environment holds EXEC_MARK=$1: SIGTERM, $2 seconds, then SIGKILL. For
# timeouts, Ctrl-C and commands that failed. A process group would miss children that called setsid
# (daemons, `nohup setsid ...`); the inherited environment marker follows them. The killer's own
# processes never carry the marker.
_KILL_SCRIPT = (
    _SWEEP
    + r"""
mark="$0=$1" born=0
if [ "$2" != 0 ] && sweep TERM; then sleep "$2"; fi
killed=
sweep KILL
settle
exit 0
"""
)


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
    keep_background: bool = False,
) -> ProcessResult:
    """Run *argv* in the container; on timeout, or when it exits, end every process it started (on
    timeout only with *keep_background*: its background processes outlive it).

    Timeout: kill the command's process tree inside the container (by its environment marker), not
    the container: the trial still needs it. When even the killer cannot start, *escalate* ends every
    process of the container (the keeper's reset, else a replacement). *where* names the workspace in
    errors.
    """
    stdout_path.parent.mkdir(parents=True, exist_ok=True)
    stderr_path.parent.mkdir(parents=True, exist_ok=True)
    mark = uuid.uuid4().hex
    plain, odd = split_env(env)
    wrapped = wrap_command(argv, mark, removals, odd, sweep=not keep_background)
    start = time.monotonic()
    with stdout_path.open("wb", buffering=0) as out, stderr_path.open("wb", buffering=0) as err:
        try:
            exec_id = api.exec_create(container_id, wrapped, environment=plain, workdir=workdir)["Id"]
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
                kill_marked(api, container_id, mark, TERM_GRACE_S, escalate)
            reader.join(READER_GRACE_S)
            code = None if timed_out else exit_code(api, exec_id)
            if code != 0 and not timed_out and not keep_background:  # only exit 0 proves the sweep ran
                kill_marked(api, container_id, mark, 0, escalate)
        except BaseException as exc:  # Ctrl-C: end the tree now; the Runner then destroys the container
            with contextlib.suppress(Exception):
                kill_marked(api, container_id, mark, 0, None)
            if isinstance(exc, Exception) and not isinstance(exc, WorkspaceError):  # e.g. container gone
                raise WorkspaceError(f"running {argv[0]!r} in the container of {where}: {exc}") from None
            raise
        finally:
            _close_stream(chunks)
            reader.join(1.0)
    return ProcessResult(code, timed_out, time.monotonic() - start, stdout_path, stderr_path)


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def split_env(env: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(names a shell keeps, the others). A POSIX shell drops variables whose names are not identifiers
    (``A-B=1``) from the environment it passes on, so those go through ``env NAME=VALUE`` instead."""
    plain = {name: value for name, value in env.items() if _ENV_NAME.fullmatch(name)}
    return plain, {name: value for name, value in env.items() if name not in plain}


def wrap_command(
    argv: Sequence[str],
    mark: str,
    removals: Sequence[str] = (),
    odd_env: Mapping[str, str] | None = None,
    *,
    sweep: bool = True,
) -> list[str]:
    """*argv* under the wrapper that marks it, removes *removals* first and (*sweep*) ends what it left
    running after it; *odd_env* (see :func:`split_env`) is set by ``env`` right before the command."""
    if odd_env:
        argv = ["env", *(f"{name}={value}" for name, value in odd_env.items()), *argv]
    script = _RUN_SCRIPT if sweep else _RUN_KEEP_SCRIPT
    return ["/bin/sh", "-c", script, "comet-exec", mark, str(len(removals)), *removals, *argv]


def kill_marked(api: Any, container_id: str, mark: str, grace: float, escalate: Callable[[], None] | None) -> bool:
    """End every process of the command marked *mark* (SIGTERM, *grace* seconds, SIGKILL) with a killer
    exec; when that cannot run, *escalate*. Returns True when it escalated (every process was ended)."""
    try:
        kill = api.exec_create(container_id, ["/bin/sh", "-c", _KILL_SCRIPT, EXEC_MARK, mark, f"{grace:g}"])
        api.exec_start(kill["Id"])
        ok = exit_code(api, kill["Id"]) == 0
    except Exception:
        ok = False
    if not ok and escalate is not None:
        escalate()
        return True
    return False


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

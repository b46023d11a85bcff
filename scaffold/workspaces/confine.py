"""The local backend's agents, confined with bubblewrap where it is installed.

The local backend isolates by folder and environment; without more, an agent can read what the
harness keeps beside it: other trials' workspaces and records (and rewrite them: the reports then show
another trial's outcome), and, through ``/proc/<pid>/environ`` of the harness's own processes, the
credentials the harness holds. So each command of the agent's phase starts through ``bwrap`` (the
sandbox Flatpak uses; Debian's ``bubblewrap`` package), which needs no privilege where user namespaces
are allowed, and as root none at all:

* the machine's file system as it is (programs, the agent's CLI, the task's solution for the oracle),
  except the folders of the harness's state: the workspaces' root (every trial's workspace, the agents'
  HOMEs) and the experiment's folder (records, transcripts) are empty there;
* the workspace itself and the folders handed to the command in its environment (its HOME) are bound
  back, writable;
* a process namespace of its own: the harness's processes, their environments included, are not there;
  when the command's first process ends, whatever it left ends with it (as when the harness dies).

The network stays the machine's: the agent reaches its model endpoint as before. Agents that run no
program of their own (the oracle runs the task's reference solution, nop nothing) start unconfined: the
sandbox costs about 7 ms a command (benchmarks/overhead.py: 12.1 ms added per oracle trial confined,
5.1 ms not), which matters to a trial of milliseconds and to nothing that waits on a model. Where ``bwrap`` is
missing or cannot run (a kernel that refuses user namespaces), the commands run as before, and one
warning per session says exactly what is not isolated.
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from scaffold.util.run_process import run_captured

__all__ = ["Confinement", "probe", "unconfined_warning"]

_PROBE_TIMEOUT_S = 10.0


class Confinement:
    """How the agent's commands of one backend start: through bwrap, hiding *hidden*, or as they are."""

    def __init__(self, hidden: Sequence[Path]) -> None:
        self.hidden = tuple(sorted({Path(os.path.realpath(p)) for p in hidden if str(p) != "/"}))
        self.program, self.problem = probe()
        """bwrap's path (found once: a command's PATH may lack it); why agents run unconfined ("" when not)."""

    @property
    def available(self) -> bool:
        return not self.problem

    def wrap(self, argv: Sequence[str], workspace: Path, env: Mapping[str, str]) -> list[str]:
        """*argv* as it starts confined in *workspace*; unchanged when confinement is not available."""
        if not self.available:
            return list(argv)
        command = [self.program, "--dev-bind", "/", "/"]
        hidden = [folder for folder in self.hidden if folder.is_dir()]
        for folder in hidden:
            command += ["--tmpfs", str(folder)]
        for bound in self._bound(workspace, env, hidden):
            command += ["--bind", bound, bound]
        command += ["--unshare-pid", "--proc", "/proc", "--die-with-parent", "--chdir", str(workspace), "--"]
        return [*command, *argv]

    @staticmethod
    def _bound(workspace: Path, env: Mapping[str, str], hidden: Sequence[Path]) -> list[str]:
        """The workspace, and each existing folder named by an environment value that a hidden folder
        would hide (the agent's HOME under the workspaces' root), outermost first."""
        candidates = {os.path.realpath(workspace)}
        for value in env.values():
            if value.startswith("/") and Path(value).is_dir():
                candidates.add(os.path.realpath(value))
        inside = [c for c in candidates if any(Path(c).is_relative_to(h) for h in hidden)]
        return sorted(inside, key=lambda c: (c.count("/"), c))


def probe() -> tuple[str, str]:
    """bwrap's path and "" when it can start a command here as the agents' are started; else why not.
    Asked once a process for each PATH and COMET_LOCAL_CONFINE: an answer found under another PATH (a
    caller that narrowed it for a while) must not outlive it."""
    return _probe(os.environ.get("PATH"), os.environ.get("COMET_LOCAL_CONFINE"))


@functools.cache
def _probe(path: str | None, switch: str | None) -> tuple[str, str]:
    if switch == "0":
        return "", "COMET_LOCAL_CONFINE=0 turns it off"
    program = shutil.which("bwrap", path=path)
    if program is None:
        return "", "bubblewrap (bwrap) is not installed"
    argv = [program, "--dev-bind", "/", "/", "--unshare-pid", "--proc", "/proc", "--die-with-parent", "--", "true"]
    try:
        done = run_captured(argv, timeout=_PROBE_TIMEOUT_S)
    except OSError as exc:
        return "", f"bwrap cannot start: {exc}"
    if done.exit_code != 0:
        reason = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit status {done.exit_code}"
        return "", f"bwrap cannot make a sandbox here ({reason})"
    return program, ""


def unconfined_warning(problem: str) -> str:
    """The one warning of a session whose local agents run unconfined: exactly what is not isolated."""
    return (
        f"the local backend runs agents unconfined ({problem}): an agent can read and change other trials' "
        "workspaces and this experiment's records, and read the environment (credentials included) of the "
        "harness's processes. Install bubblewrap (apt-get install bubblewrap) to confine them, or use "
        "--backend docker for agents you do not trust"
    )

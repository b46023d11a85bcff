"""The oracle agent runs ``solution/solve.sh``; the nop agent does nothing. Neither invokes skills."""

from __future__ import annotations

from scaffold.agents.base import AgentRequest
from scaffold.agents.builtin import NO_SKILLS
from scaffold.trajectory import Trajectory
from scaffold.util.process_result import ProcessResult
from scaffold.workspaces.base import NO_NETWORK, InstallSpec, Workspace
from scaffold.workspaces.layout import SOLUTION_DIR

__all__ = ["NopAgent", "OracleAgent"]


class OracleAgent:
    name = "oracle"
    traits = NO_SKILLS
    model: str | None = None
    install: InstallSpec | None = None
    network = NO_NETWORK

    def redact(self, text: str) -> str:
        return text  # the oracle holds no credentials

    def run(self, workspace: Workspace, request: AgentRequest) -> Trajectory:
        """Run ``bash solve.sh`` from the workspace root with ``$COMET_SOLUTION_DIR`` set to its folder.

        Where the workspace can read the task folder in place (local backend) the script runs from
        there: copying it in and out again was a measurable part of the harness's per-trial overhead.
        Elsewhere the solution is copied in and removed afterwards, so validation sees only what the
        solution produced. Either way solve.sh reaches its files through ``$COMET_SOLUTION_DIR``.
        """
        if request.task.format == "harbor":
            return self._harbor(workspace, request)
        in_place = workspace.host_visible(request.task.solution_dir)
        solution_dir = in_place or f"{workspace.root}/{SOLUTION_DIR}"
        script = f"{in_place}/solve.sh" if in_place else f"{SOLUTION_DIR}/solve.sh"
        command = "bash $COMET_SOLUTION_DIR/solve.sh"  # the same in every backend and on every machine
        if not in_place:
            workspace.put(request.task.solution_dir, SOLUTION_DIR)
        try:
            result = workspace.exec(
                ["bash", script],
                timeout=request.timeout_s,
                env={"COMET_SOLUTION_DIR": solution_dir},
                stdout_path=request.log_dir / "agent.stdout.log",
                stderr_path=request.log_dir / "agent.stderr.log",
            )
        finally:
            if not in_place:
                workspace.remove(SOLUTION_DIR)
        return _trajectory(self.name, command, result, request.timeout_s)

    def _harbor(self, workspace: Workspace, request: AgentRequest) -> Trajectory:
        """Harbor's oracle: ``solution/`` at ``/solution``, ``solve.sh`` run from the working directory
        with ``[solution.env]`` (as root: the image's user, which is root in every published task)."""
        task = request.task
        workspace.put_at(task.solution_dir, "/solution")
        settings = task.harbor
        env = {"DEBIAN_FRONTEND": "noninteractive", **dict(settings.solution_env if settings else ())}
        command = "bash /solution/solve.sh"
        result = workspace.exec(
            ["sh", "-c", f"chmod +x /solution/solve.sh && exec {command}"],
            timeout=request.timeout_s,
            env=env,
            stdout_path=request.log_dir / "agent.stdout.log",
            stderr_path=request.log_dir / "agent.stderr.log",
        )
        return _trajectory(self.name, command, result, request.timeout_s)


def _trajectory(agent: str, command: str, result: ProcessResult, timeout_s: float) -> Trajectory:
    errors: tuple[str, ...] = ()
    if result.timed_out:
        errors = (f"solve.sh timed out after {timeout_s:g}s",)
    elif result.exit_code != 0:
        errors = (f"solve.sh exited with code {result.exit_code}: {result.stderr(600).strip()}",)
    return Trajectory(
        agent=agent,
        commands=(command,),
        final_text=result.stdout(2000).strip(),
        errors=errors,
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        duration_s=result.duration_s,
        completed=not result.timed_out,
    )


class NopAgent:
    name = "nop"
    traits = NO_SKILLS
    model: str | None = None
    install: InstallSpec | None = None
    network = NO_NETWORK

    def run(self, workspace: Workspace, request: AgentRequest) -> Trajectory:
        return Trajectory(agent=self.name, turns=0, exit_code=0)

    def redact(self, text: str) -> str:
        return text

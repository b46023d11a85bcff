"""The oracle agent runs ``solution/solve.sh``; the nop agent does nothing. Neither invokes skills."""

from __future__ import annotations

from scaffold.agents import AgentRequest
from scaffold.agents.install import InstallSpec
from scaffold.trajectory import Trajectory
from scaffold.workspaces import Workspace

__all__ = ["SOLUTION_DIR", "NopAgent", "OracleAgent"]

SOLUTION_DIR = ".eval-solution"


class OracleAgent:
    name = "oracle"
    skills_dir = ".claude/skills"
    instructions_file = "CLAUDE.md"
    invokes_skills = False
    needs_network = False
    install: InstallSpec | None = None

    def run(self, workspace: Workspace, request: AgentRequest) -> Trajectory:
        """Copy the solution in, run ``bash solve.sh`` from the workspace root, take the solution out.

        The solution folder is removed afterwards so validation sees only what the solution produced.
        """
        workspace.put(request.task.solution_dir, SOLUTION_DIR)
        command = f"bash {SOLUTION_DIR}/solve.sh"
        try:
            result = workspace.exec(
                ["bash", f"{SOLUTION_DIR}/solve.sh"],
                timeout=request.timeout_s,
                env={"COMET_SOLUTION_DIR": f"{workspace.root}/{SOLUTION_DIR}"},
                stdout_path=request.log_dir / "agent.stdout.log",
                stderr_path=request.log_dir / "agent.stderr.log",
            )
        finally:
            workspace.remove(SOLUTION_DIR)
        errors: tuple[str, ...] = ()
        if result.timed_out:
            errors = (f"solve.sh timed out after {request.timeout_s:g}s",)
        elif result.exit_code != 0:
            errors = (f"solve.sh exited with code {result.exit_code}: {result.stderr(600).strip()}",)
        return Trajectory(
            agent=self.name,
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
    skills_dir = ".claude/skills"
    instructions_file = "CLAUDE.md"
    invokes_skills = False
    needs_network = False
    install: InstallSpec | None = None

    def run(self, workspace: Workspace, request: AgentRequest) -> Trajectory:
        return Trajectory(agent=self.name, turns=0, exit_code=0)

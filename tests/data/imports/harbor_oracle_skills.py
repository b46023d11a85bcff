"""A Harbor job plugin that lets Harbor's own oracle agent take skills (``--skill``), for the fixtures.

Harbor 0.26 refuses ``--skill`` for its built-in oracle: the agent's capabilities say it takes no
skills. Loading this plugin (``--plugin harbor_oracle_skills:OracleSkills``; regenerate.py puts this
folder on PYTHONPATH) changes only that declaration, when Harbor imports the module: Harbor then uploads
the skills to /runtime/skills/<name> before the oracle runs the task's ``solution/solve.sh``, as it does
for any agent that takes skills, and records them in the job's configuration. Imported by Harbor's CLI,
never by comet-eval.
"""

from harbor.agents.capabilities import AgentCapabilities
from harbor.agents.oracle import OracleAgent
from harbor.models.job.plugin import BaseJobPlugin

OracleAgent.capabilities = AgentCapabilities(windows=True, skills=True)


class OracleSkills(BaseJobPlugin):
    async def on_job_start(self, job: object) -> None:
        return None

    async def on_job_end(self, job_result: object) -> None:
        return None

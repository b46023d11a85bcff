"""Treatment kinds in the trial runner: the nudge line in the instructions file, distractors installed but
not expected (and recorded by name and hash), the self-written pre-phase in a scratch workspace that holds
neither the task's validation nor its solution, its skill kept in the trial folder and installed."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from scaffold.agents.base import AgentRequest, AgentTraits
from scaffold.catalog.builtin import BUILTIN_DISTRACTORS_DIR
from scaffold.catalog.tasks import load_catalog
from scaffold.catalog.treatment_kinds import nudge_line
from scaffold.catalog.treatments import load_treatments
from scaffold.experiment import Experiment
from scaffold.experiment.cases import Case
from scaffold.trajectory import Trajectory
from scaffold.trial.runner import Runner, Settings
from scaffold.trial.self_written import SKILL_FOLDER
from scaffold.workspaces.backends import create_backend
from scaffold.workspaces.base import NO_NETWORK, AgentNetwork, InstallSpec, Workspace
from tests.support.factories import TaskFactory, make_runner


def test_the_nudge_is_the_last_line_of_the_instructions_file(factory: TaskFactory, tmp_path: Path) -> None:
    skill = factory.skill("report")
    factory.treatments(
        "t.yaml",
        {"REPORT_NUDGE": {"skills": [str(skill)], "claude_md": "Be brief.\n", "nudge": True}},
    )
    factory.task("t", solve="cp CLAUDE.md seen.md; echo done > out.txt\n")
    runner = make_runner([factory.tasks_dir], [factory.treatments_dir], tmp_path, keep_workspaces="all")
    record = runner.run(Case("t", "REPORT_NUDGE", 1)).record
    seen = (Path(record.workspace.path) / "seen.md").read_text()
    assert seen == f"Be brief.\n\n{nudge_line('.claude/skills')}\n"
    assert record.config["treatment"]["kind"] == {"nudge": nudge_line(".claude/skills")}


def test_distractors_are_installed_recorded_and_not_expected(factory: TaskFactory, tmp_path: Path) -> None:
    skill = factory.skill("report")
    pool = tmp_path / "pool"
    for name in ("alpha", "beta", "gamma", "report"):  # the pool's own "report" is never drawn
        (pool / name).mkdir(parents=True)
        (pool / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {name}\n---\n")
    factory.treatments(
        "t.yaml",
        {"REPORT_PLUS_2_DISTRACTORS": {"skills": [str(skill)], "distractors": {"count": 2, "pool": str(pool)}}},
    )
    factory.task("t", solve="ls .claude/skills > installed.txt; echo done > out.txt\n")
    runner = make_runner([factory.tasks_dir], [factory.treatments_dir], tmp_path, keep_workspaces="all")
    record = runner.run(Case("t", "REPORT_PLUS_2_DISTRACTORS", 1)).record
    kind = record.config["treatment"]["kind"]
    drawn = [d["name"] for d in kind["distractors"]["drawn"]]
    assert len(drawn) == 2 and "report" not in drawn
    assert all(d["content_hash"].startswith("sha256:") for d in kind["distractors"]["drawn"])
    assert kind["distractors"] | {"drawn": []} == {"count": 2, "seed": 0, "pool": "folder", "drawn": []}
    installed = (Path(record.workspace.path) / "installed.txt").read_text().split()
    assert installed == sorted(["report", *drawn])
    assert [s["name"] for s in record.config["treatment"]["skills"]] == ["report"]  # the skill under test
    again = make_runner([factory.tasks_dir], [factory.treatments_dir], tmp_path / "again").run(
        Case("t", "REPORT_PLUS_2_DISTRACTORS", 1)
    )
    assert again.record.config_hash == record.config_hash  # the same draw: (seed, task, treatment)


def test_without_a_pool_a_lone_task_draws_from_the_builtin_pool(factory: TaskFactory, tmp_path: Path) -> None:
    """One task, no other task's skills: the distractors come from the built-in pool, installed beside the
    skill under test, and recorded as the default pool's."""
    skill = factory.skill("report")
    factory.treatments("t.yaml", {"REPORT_PLUS_3_DISTRACTORS": {"skills": [str(skill)], "distractors": {"count": 3}}})
    factory.task("t", solve="ls .claude/skills > installed.txt; echo done > out.txt\n")
    runner = make_runner([factory.tasks_dir], [factory.treatments_dir], tmp_path, keep_workspaces="all")
    record = runner.run(Case("t", "REPORT_PLUS_3_DISTRACTORS", 1)).record
    kind = record.config["treatment"]["kind"]["distractors"]
    drawn = [d["name"] for d in kind["drawn"]]
    builtin = sorted(p.name for p in BUILTIN_DISTRACTORS_DIR.iterdir() if (p / "SKILL.md").is_file())
    assert len(builtin) == 8 and len(drawn) == 3 and set(drawn) <= set(builtin)
    assert kind["pool"] == "corpus"
    installed = (Path(record.workspace.path) / "installed.txt").read_text().split()
    assert installed == sorted(["report", *drawn])


@dataclass
class SkillWriter:
    """An agent that, asked to write a skill, lists what its workspace holds and writes one; in the task
    run, lists its skills folder and does the task."""

    seen: list[tuple[str, list[str]]] = field(default_factory=list)
    name: str = "writer"
    traits: AgentTraits = field(default_factory=AgentTraits)
    model: str | None = None
    install: InstallSpec | None = None
    network: AgentNetwork = NO_NETWORK

    def run(self, workspace: Workspace, request: AgentRequest) -> Trajectory:
        self.seen.append((request.prompt, workspace.glob("**/*")))
        if "write a skill" in request.prompt:
            text = "---\nname: tidy-output\ndescription: how to write out.txt\n---\nWrite done.\n"
            workspace.write_text(f"{SKILL_FOLDER}/tidy-output/SKILL.md", text)
            return Trajectory(agent=self.name, cost_usd=0.25)
        workspace.write_text("out.txt", "done\n")
        return Trajectory(agent=self.name, skills_invoked=("tidy-output",), cost_usd=1.0)

    def redact(self, text: str) -> str:
        return text


def test_self_written_runs_apart_from_the_tasks_files_and_installs_its_skill(
    factory: TaskFactory, tmp_path: Path
) -> None:
    factory.treatments("t.yaml", {"SELF_WRITTEN": {"self_written": True}})
    folder = factory.task("t", files={"data.csv": "a,b\n"}, solve="echo secret-solution > out.txt\n")
    agent = SkillWriter()
    runner = Runner(
        load_catalog([factory.tasks_dir]),
        load_treatments([factory.treatments_dir]),
        Experiment.under(tmp_path / "logs", "exp-1"),
        Settings(agent="writer"),
        create_backend("local", workspace_root=tmp_path / "ws"),
        agent,
    )
    result = runner.run(Case("t", "SELF_WRITTEN", 1))
    record = result.record
    (prompt, files), (task_prompt, task_files) = agent.seen
    # The pre-phase: the environment's files only, the instruction, no path of the task's folder.
    assert "write a skill" in prompt and "Write done into out.txt" in prompt
    assert str(folder) not in prompt and "solve.sh" not in prompt
    assert "data.csv" in files and not [f for f in files if "validation" in f or "solution" in f or "check" in f]
    # The task run: a fresh workspace with the written skill installed, nothing else of the pre-phase.
    assert ".claude/skills/tidy-output/SKILL.md" in task_files and SKILL_FOLDER not in task_files
    assert "write a skill" not in task_prompt
    trial_dir = result.record_path.parent
    assert (trial_dir / SKILL_FOLDER / "tidy-output" / "SKILL.md").is_file()
    assert (trial_dir / "self-written" / "instruction.md").read_text().startswith("Before you work on a task")
    written = record.self_written
    assert written is not None and list(written.skills) == ["tidy-output"] and written.folder == SKILL_FOLDER
    assert written.trajectory is not None and written.trajectory.cost_usd == 0.25
    assert record.trajectory is not None and record.trajectory.cost_usd == 1.0  # the task's, comparable
    assert record.cost_of_attempts_usd == 1.25  # what was spent
    assert record.expected_skills == ("tidy-output",)
    assert record.config["treatment"]["skills"] == [
        {"name": "(self-written)", "content_hash": None, "variant": "self-written"}
    ]
    assert record.verdict == "passed"
    assert not list((tmp_path / "ws").rglob("*-self-written"))  # the scratch workspace is gone

"""The Harbor verifier's contract on a real engine, with small Harbor-format tasks made here.

What the example corpus (tests/scaffold/catalog/test_harbor_tasks.py) cannot show on its own: a reward the agent
planted is not a verdict, no reward is a harness error (excluded), a verifier that runs out of time is a
failure, the network is what the task allows, a CONTROL image holding a skill is excluded, our own YAML
treatments apply to Harbor tasks, and copy mode runs them the same.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from scaffold.agents.oracle import NopAgent, OracleAgent
from scaffold.catalog.tasks import load_catalog
from scaffold.catalog.treatments import CONTROL, TASK_SKILLS_PLACEHOLDER, load_treatments
from scaffold.experiment import Experiment
from scaffold.experiment.cases import Case
from scaffold.records import TrialRecord
from scaffold.trial.runner import Runner, Settings
from scaffold.workspaces.docker import DockerBackend
from scaffold.workspaces.uv_tool import uv_binaries

pytestmark = [pytest.mark.docker]

FROM = "comet-eval/base:bookworm"


def harbor_task(
    root: Path,
    name: str,
    *,
    test_sh: str,
    solve_sh: str = "true\n",
    dockerfile: str = "",
    toml: str = "",
    skills: dict[str, str] | None = None,
) -> Path:
    """A Harbor-format task folder: WORKDIR /app, the verifier and solution given."""
    folder = root / name
    for sub in ("environment", "solution", "tests"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    (folder / "task.toml").write_text(
        'version = "1.0"\n[metadata]\ndifficulty = "easy"\ncategory = "testing"\ntags = ["contract"]\n'
        "[verifier]\ntimeout_sec = 20\n[agent]\ntimeout_sec = 60\n" + toml,
        encoding="utf-8",
    )
    (folder / "instruction.md").write_text(f"Do the {name} task.\n", encoding="utf-8")
    (folder / "environment" / "Dockerfile").write_text(
        f"FROM {FROM}\nWORKDIR /app\n" + textwrap.dedent(dockerfile), encoding="utf-8"
    )
    for skill, text in (skills or {}).items():
        (folder / "environment" / "skills" / skill).mkdir(parents=True)
        (folder / "environment" / "skills" / skill / "SKILL.md").write_text(text, encoding="utf-8")
    (folder / "solution" / "solve.sh").write_text("#!/bin/bash\n" + textwrap.dedent(solve_sh), encoding="utf-8")
    (folder / "tests" / "test.sh").write_text("#!/bin/bash\n" + textwrap.dedent(test_sh), encoding="utf-8")
    return folder


@pytest.fixture
def run(tmp_path: Path, docker_base_image: str) -> Any:
    """run(tasks_dir, task, agent="oracle", treatment="CONTROL", treatments_dir=None, copy=None) -> record."""

    def go(
        tasks_dir: Path,
        task: str,
        agent: str = "oracle",
        treatment: str = CONTROL,
        treatments_dir: Path | None = None,
        copy: bool | None = None,
    ) -> TrialRecord:
        catalog = load_catalog([tasks_dir])
        assert not catalog.broken, catalog.problems()
        treatments = load_treatments([treatments_dir] if treatments_dir else []).with_treatment(TASK_SKILLS_PLACEHOLDER)
        backend = DockerBackend(tmp_path / "ws", copy=copy)
        runner = Runner(
            catalog,
            treatments,
            Experiment.under(tmp_path / "logs", f"e-{task}-{agent}-{treatment}-{copy}"),
            Settings(backend="docker", agent=agent),
            backend,
            OracleAgent() if agent == "oracle" else NopAgent(),
            uv_binaries=uv_binaries,
        )
        try:
            return runner.run(Case(task, treatment, 1)).record
        finally:
            backend.close()

    return go


def test_a_reward_the_agent_planted_is_not_a_verdict(tmp_path: Path, run: Any) -> None:
    harbor_task(
        tmp_path / "tasks",
        "planted",
        solve_sh="mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt\n",
        test_sh="echo 'this verifier writes nothing'\n",
    )
    record = run(tmp_path / "tasks", "planted")
    assert record.verdict == "error"
    assert record.noise.category == "excluded" and record.noise.reason == "missing_reward"
    assert "wrote no reward" in record.errors[0].message


def test_an_empty_reward_file_is_a_harness_error(tmp_path: Path, run: Any) -> None:
    harbor_task(tmp_path / "tasks", "empty", test_sh=": > /logs/verifier/reward.txt\n")
    record = run(tmp_path / "tasks", "empty")
    assert record.noise.reason == "missing_reward"
    assert "reward.txt is empty" in record.errors[0].message


def test_a_verifier_out_of_time_fails_the_trial(tmp_path: Path, run: Any) -> None:
    harbor_task(tmp_path / "tasks", "slow", test_sh="sleep 60\n", toml="")
    folder = tmp_path / "tasks" / "slow"
    toml = (folder / "task.toml").read_text().replace("timeout_sec = 20", "timeout_sec = 2", 1)
    (folder / "task.toml").write_text(toml)
    record = run(tmp_path / "tasks", "slow")
    assert record.verdict == "failed" and record.noise.category == "included"
    assert any(c.name == "test.sh" and "timed out" in c.reason for c in record.checks)


def test_uvx_served_by_another_python_is_kept_in_the_record_and_its_transcript(tmp_path: Path, run: Any) -> None:
    # As Terminal-Bench 2's verifiers on the bookworm stand-in: `uvx -p 3.13` gets the image's 3.11.
    harbor_task(
        tmp_path / "tasks",
        "uvx-drift",
        test_sh="""\
            curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh
            source $HOME/.local/bin/env
            uvx -p 3.13 --offline pytest --version || true  # no network needed: the note comes first
            echo 1 > /logs/verifier/reward.txt
        """,
    )
    record = run(tmp_path / "tasks", "uvx-drift")
    assert record.verdict == "passed", (record.checks, record.errors)
    (check,) = [c for c in record.checks if c.name == "uvx python"]
    assert (check.status, check.source) == ("skipped", "uv-shim")
    assert check.reason.startswith("uvx asked for Python 3.13, got 3.11."), check.reason
    (page,) = (tmp_path / "logs").glob("experiments/*/trials/uvx-drift-CONTROL-r1/transcript.html")
    assert "uvx asked for Python 3.13, got 3.11." in page.read_text()


def test_the_verifier_runs_from_the_workdir_beside_what_the_agent_left_running(tmp_path: Path, run: Any) -> None:
    harbor_task(
        tmp_path / "tasks",
        "server",
        solve_sh="""\
            echo hi > /app/index.html
            setsid nohup python3 -m http.server 8765 --directory /app >/dev/null 2>&1 &
            sleep 1
        """,
        test_sh="""\
            [ "$PWD" = /app ] || { echo "cwd is $PWD"; echo 0 > /logs/verifier/reward.txt; exit 0; }
            if [ "$(python3 -c "import urllib.request as u; print(u.urlopen('http://127.0.0.1:8765/').read())")" ]
            then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
        """,
    )
    assert run(tmp_path / "tasks", "server").verdict == "passed"
    assert run(tmp_path / "tasks", "server", agent="nop").verdict == "failed"


@pytest.mark.parametrize("allowed", [True, False])
def test_the_verifier_has_the_network_the_task_allows(tmp_path: Path, run: Any, allowed: bool) -> None:
    # A bridge container has a default route; a container without network has only the loopback.
    harbor_task(
        tmp_path / "tasks",
        "net",
        toml=f"[environment]\nallow_internet = {'true' if allowed else 'false'}\n",
        test_sh="""\
            if grep -qv '^Iface' /proc/net/route && [ "$(wc -l < /proc/net/route)" -gt 1 ]
            then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
        """,
    )
    assert run(tmp_path / "tasks", "net").verdict == ("passed" if allowed else "failed")


def test_a_control_image_that_holds_a_skill_is_excluded(tmp_path: Path, run: Any) -> None:
    harbor_task(
        tmp_path / "tasks",
        "leaky",
        skills={"helper": "---\nname: helper\ndescription: helps\n---\nHelp.\n"},
        # The skill is copied in by its own name too, not only through the `COPY skills` line.
        dockerfile="COPY skills /root/.claude/skills\nRUN mkdir -p /opt/x && echo leak > /opt/x/SKILL.md\n",
        test_sh="echo 1 > /logs/verifier/reward.txt\n",
    )
    record = run(tmp_path / "tasks", "leaky")
    assert record.noise.category == "excluded" and record.noise.reason == "skill_leak", record.errors
    assert "/opt/x/SKILL.md" in record.errors[0].message
    # Under the task's own skills the same image is what the task asks for.
    assert run(tmp_path / "tasks", "leaky", treatment="TASK_SKILLS").verdict == "passed"


def test_the_tasks_skills_are_where_the_agent_looks_and_absent_under_control(tmp_path: Path, run: Any) -> None:
    harbor_task(
        tmp_path / "tasks",
        "skilled",
        # Named apart from its folder, as some SkillsBench skills are: it goes by its name, in its folder.
        skills={"helper": "---\nname: helping-hand\ndescription: helps\n---\nHelp.\n"},
        dockerfile="COPY skills /root/.claude/skills\n",
        test_sh="""\
            found=$(find / -xdev -name SKILL.md 2>/dev/null | sort | tr '\\n' ' ')
            echo "$found" > /logs/verifier/found.txt
            echo 1 > /logs/verifier/reward.txt
        """,
    )
    with_skills = run(tmp_path / "tasks", "skilled", treatment="TASK_SKILLS")
    control = run(tmp_path / "tasks", "skilled")
    assert with_skills.verdict == control.verdict == "passed"
    assert [s["name"] for s in with_skills.config["treatment"]["skills"]] == ["helping-hand"]
    assert list(with_skills.skill_sources) == ["helping-hand"]

    def found(treatment: str) -> str:
        trial = tmp_path / "logs" / "experiments" / f"e-skilled-oracle-{treatment}-None" / "trials"
        return (trial / f"skilled-{treatment}-r1" / "verifier" / "found.txt").read_text()

    skills_text, control_text = found("TASK_SKILLS"), found("CONTROL")
    assert "/root/.claude/skills/helper/SKILL.md" in skills_text  # the Dockerfile's COPY, kept
    assert "/app/.claude/skills/helper/SKILL.md" in skills_text  # where the agent looks (its skills folder)
    assert control_text.strip() == ""  # no SKILL.md anywhere under CONTROL


def test_our_yaml_treatments_apply_to_harbor_tasks(tmp_path: Path, run: Any) -> None:
    harbor_task(
        tmp_path / "tasks",
        "yaml",
        skills={"own": "---\nname: own\ndescription: the task's\n---\nOwn.\n"},
        dockerfile="COPY skills /root/.claude/skills\n",
        test_sh="""\
            if [ -f /app/.claude/skills/ours/SKILL.md ] && [ ! -e /root/.claude/skills/own ]
            then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
        """,
    )
    skill = tmp_path / "skills" / "ours"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: ours\ndescription: ours\n---\nOurs.\n")
    treatments = tmp_path / "treatments"
    treatments.mkdir()
    (treatments / "t.yaml").write_text(json.dumps({"OURS": {"skills": [str(skill)]}}))
    record = run(tmp_path / "tasks", "yaml", treatment="OURS", treatments_dir=treatments)
    assert record.verdict == "passed", record.checks


def test_copy_mode_runs_harbor_tasks_the_same(tmp_path: Path, run: Any) -> None:
    harbor_task(
        tmp_path / "tasks",
        "copied",
        solve_sh="cp /solution/data.txt /app/out.txt\n",
        test_sh="""\
            if [ "$(cat /app/out.txt 2>/dev/null)" = 42 ]
            then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
        """,
    )
    (tmp_path / "tasks" / "copied" / "solution" / "data.txt").write_text("42\n")
    assert run(tmp_path / "tasks", "copied", copy=True).verdict == "passed"
    assert run(tmp_path / "tasks", "copied", agent="nop", copy=True).verdict == "failed"


def test_names_resolve_for_the_verifier_with_the_internet_and_fail_at_once_for_the_agent(tmp_path: Path) -> None:
    # On the internal host-only network the engine's resolver never answers for a name outside (a lookup
    # waits out its timeout: Claude Code makes one as it exits), so the agent's container gets a resolver
    # that refuses at once; a verifier the task lets reach the internet gets the engine's back.
    from scaffold.catalog.tasks import load_task
    from scaffold.workspaces.base import ValidationPolicy

    task = load_task(
        harbor_task(tmp_path / "tasks", "names", toml="[environment]\nallow_internet = true\n", test_sh="true\n")
    )
    backend = DockerBackend(tmp_path / "ws", network=True, network_scope="host")
    probe = (
        "import socket\n"
        "def look(name):\n"
        "    try:\n"
        "        return socket.getaddrinfo(name, 80)[0][4][0]\n"
        "    except OSError as exc:\n"
        "        return type(exc).__name__\n"
        "print(open('/etc/resolv.conf').read().split()[1], look('api.anthropic.com'), look('localhost'))\n"
    )

    def lookups(name: str) -> list[str]:
        result = workspace.exec(
            ["python3", "-c", probe],
            timeout=30,
            env={},
            stdout_path=tmp_path / f"{name}.out",
            stderr_path=tmp_path / f"{name}.err",
        )
        assert result.exit_code == 0, result.stderr()
        return result.stdout().split()

    try:
        workspace = backend.create(task, "exp-names/names-CONTROL-r1")
        server, outside, local = lookups("agent")
        assert server == "127.0.0.1" and outside == "gaierror" and local in ("127.0.0.1", "::1")
        workspace.begin_validation(ValidationPolicy.SHARED)
        server, _, local = lookups("verifier")
        assert server == "127.0.0.11" and local in ("127.0.0.1", "::1")  # the engine's embedded resolver
        backend.destroy(workspace, keep=False)
    finally:
        backend.close()

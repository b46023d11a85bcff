"""``comet study``: the study it plans from a corpus (pure), and the study run end to end on the Harbor example
tasks with the oracle on Docker, writing study.md beside the usual reports."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from scaffold.catalog.treatments import CONTROL, SELF_WRITTEN, TASK_SKILLS, load_treatments
from scaffold.cli.main import _parser
from scaffold.cli.study import STUDY_COUNT, plan_study
from scaffold.errors import SelectionError
from tests.support.factories import REPO

HARBOR_TASKS = REPO / "tests" / "data" / "harbor-tasks"
COMET = str(Path(sys.executable).with_name("comet"))


def _args(*words: str) -> argparse.Namespace:
    args, passed = _parser(skill_commands=False).parse_known_args(["study", *words])
    args.pytest_args = passed
    return args


def _pool(folder: Path, *names: str) -> Path:
    for name in names:
        (folder / name).mkdir(parents=True)
        (folder / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: The {name} skill.\n---\n")
    return folder


def test_a_study_runs_the_tasks_with_skills_under_four_conditions(tmp_path: Path) -> None:
    pool = _pool(tmp_path / "pool", "alpha", "beta", "gamma")
    plan = plan_study(_args(str(HARBOR_TASKS), "--skill-pool", str(pool), "--out", str(tmp_path)))

    assert plan.tasks == ("ledger-check-codes",)  # the only example task with environment/skills
    assert "access-log-summary" in plan.left_out and "ledger-check-codes" not in plan.left_out
    assert [c.name for c in plan.conditions] == [CONTROL, TASK_SKILLS, "TASK_SKILLS_PLUS_3_DISTRACTORS", SELF_WRITTEN]
    assert plan.count == STUDY_COUNT == 5
    # The kinds' definitions are a treatments file the session loads as any other.
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "study.yaml").write_text(yaml.safe_dump(plan.treatments))
    catalog = load_treatments([tmp_path / "t"]).checked()
    assert not catalog.broken
    distractors = catalog.treatments["TASK_SKILLS_PLUS_3_DISTRACTORS"]
    assert distractors.skills_of == TASK_SKILLS and distractors.distractors is not None
    assert distractors.distractors.pool == pool and catalog.treatments[SELF_WRITTEN].self_written


def test_without_a_pool_the_distractors_come_from_the_builtin_pool(tmp_path: Path) -> None:
    """The example corpus's other tasks ship no skills: the bare command draws from the built-in pool."""
    plan = plan_study(_args(str(HARBOR_TASKS), "--out", str(tmp_path)))
    assert [c.name for c in plan.conditions] == [CONTROL, TASK_SKILLS, "TASK_SKILLS_PLUS_3_DISTRACTORS", SELF_WRITTEN]
    entry = plan.treatments["TASK_SKILLS_PLUS_3_DISTRACTORS"]
    assert "pool" not in entry["distractors"]
    assert plan.backend == "docker"  # Harbor-format tasks run in their own image
    assert "the corpus's other tasks and the built-in pool" in entry["description"]


def test_a_pool_too_small_and_a_corpus_without_skills_are_refused_before_any_trial(tmp_path: Path) -> None:
    # The corpus's other tasks have no skills, and the built-in pool holds eight: twenty cannot be drawn.
    with pytest.raises(SelectionError, match=r"--skill-pool DIR, or --distractors 0"):
        plan_study(_args(str(HARBOR_TASKS), "--distractors", "20"))
    with pytest.raises(SelectionError, match=r"--skill-pool DIR, or --distractors 0"):
        plan_study(_args(str(HARBOR_TASKS), "--skill-pool", str(_pool(tmp_path / "pool", "alpha"))))
    plan = plan_study(_args(str(HARBOR_TASKS), "--distractors", "0", "--no-self-written"))
    assert [c.name for c in plan.conditions] == [CONTROL, TASK_SKILLS] and not plan.treatments
    corpus = tmp_path / "corpus"
    shutil.copytree(HARBOR_TASKS / "access-log-summary", corpus / "access-log-summary")
    with pytest.raises(SelectionError, match=r"no task of .* has skills of its own"):
        plan_study(_args(str(corpus)))


@pytest.mark.docker
@pytest.mark.slow
def test_comet_study_on_the_harbor_examples_writes_the_study_report(tmp_path: Path, docker_trixie_image: str) -> None:
    # No backend: Harbor tasks run on docker. No pool: the one task with skills draws its three distractors
    # from the built-in pool.
    proc = subprocess.run(
        [COMET, "study", str(HARBOR_TASKS), "--agent", "oracle", "--count", "2",
         "--out", str(tmp_path / "logs"),
         f"--image-alias=python:3.13-slim-bookworm={docker_trixie_image}",
         f"--image-alias=ubuntu:24.04={docker_trixie_image}",
         f"--workspace-root={tmp_path / 'ws'}", "-p", "no:cacheprovider", "-q"],
        cwd=tmp_path, env=dict(os.environ), capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    # The oracle's solution imports the task's skill: it fails without it (CONTROL, SELF_WRITTEN), so the
    # session's status is "some tests failed", and the study is written all the same.
    assert proc.returncode == 1, out
    (experiment,) = (tmp_path / "logs" / "experiments").iterdir()
    for name in ("summary.md", "comparison_report.md", "report.html", "study.md"):
        assert (experiment / name).is_file(), out
    study = (experiment / "study.md").read_text()
    rows: dict[str, str] = {}
    for line in study.splitlines():  # the first table's rows (the conditions' table repeats the names)
        if line.startswith("| "):
            rows.setdefault(line.split(" | ")[0].lstrip("| "), line)
    assert rows[CONTROL].split(" | ")[5] == "baseline"
    for condition in (TASK_SKILLS, "TASK_SKILLS_PLUS_3_DISTRACTORS", SELF_WRITTEN):
        cells = rows[condition].split(" | ")
        assert cells[1] == "2" and "(on these tasks)" in cells[5], rows[condition]
        assert cells[8] == "not scored"  # the oracle cannot invoke a skill
    assert "+100.0%" in rows[TASK_SKILLS] and rows[SELF_WRITTEN].split(" | ")[3] == "0.0%"
    assert "| agent | oracle" in study and "| backend | docker |" in study
    assert "| trials per task and condition (k) | 2 |" in study and "| left out (7) |" in study
    assert "TASK_SKILLS_PLUS_3_DISTRACTORS | The task's own skills among 3 distractor skill(s) from the skills" in study
    assert f"study: {experiment / 'study.md'}" in proc.stdout

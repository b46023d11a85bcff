"""``<owner>/.comet/``: made ignored by git, and an existing one left as it is."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from scaffold.skill_eval.project import comet_folder


def _git(root: Path, *argv: str) -> str:
    git = shutil.which("git")
    assert git, "git is needed to show what it ignores"
    done = subprocess.run([git, "-C", str(root), *argv], capture_output=True, text=True, check=True, timeout=60)
    return done.stdout


def test_a_new_folder_is_ignored_by_git_whole(tmp_path: Path) -> None:
    skill = tmp_path / "skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: skill\n---\n")
    _git(skill, "init", "-q")
    folder = comet_folder(skill)
    (folder / "eval" / "runs").mkdir(parents=True)
    (folder / "eval" / "runs" / "record.json").write_text("{}")
    assert (folder / ".gitignore").read_text() == "*\n"
    # git sees the skill's own file only: neither the runs nor the .gitignore that hides them.
    assert _git(skill, "status", "--porcelain", "--untracked-files=all").splitlines() == ["?? SKILL.md"]


@pytest.mark.parametrize("gitignore", [None, "!keep-me\n"])
def test_an_existing_folder_is_left_as_it_is(tmp_path: Path, gitignore: str | None) -> None:
    folder = tmp_path / ".comet"
    folder.mkdir()
    if gitignore is not None:
        (folder / ".gitignore").write_text(gitignore)
    assert comet_folder(tmp_path) == folder
    if gitignore is None:
        assert not (folder / ".gitignore").exists()  # the user's folder: theirs to configure
    else:
        assert (folder / ".gitignore").read_text() == gitignore

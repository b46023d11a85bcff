"""comet-eval as a user installs it: the sdist and the wheel built from it, the wheel installed into a fresh
venv, every command run from an empty folder. A file the program reads at run time that is not package data
(a built-in task, a treatment, a suite's entry, a template, a schema, the .env template) fails here.

The fresh venv, made fast and still honest (docs/packaging.md):

* the build is ``python -m build`` on a copy of the sources (no stale ``build/`` or ``*.egg-info`` of the
  checkout can slip a file in): the sdist, then the wheel from the unpacked sdist, as a release makes them;
* ``python -m venv --without-pip``, and the wheel installed into it by this venv's pip (``--python``) with
  ``--no-deps``: the package files, the ``comet`` script and the metadata exactly as pip lays them out;
* the dependencies are this venv's, seen through one ``.pth`` file pointing at a folder of links to every
  entry of this venv's site-packages except comet-eval's own (the editable install), and ``pip check`` in
  the new venv proves the wheel's requirements are met there. Installing them from the registry (about a
  minute) is what .ci/run's wheel step does instead.

The checkout is never importable there: the commands run from an empty folder, with no PYTHONPATH.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from dataclasses import dataclass
from email.parser import Parser
from pathlib import Path

import pytest

from scaffold import __version__
from scaffold.catalog.builtin import BUILTIN_SKILLS_DIR, BUILTIN_TASKS_DIR
from scaffold.catalog.tasks import load_catalog
from tests.support.factories import REPO

# One worker builds the wheel once for the whole module (tests.support.loadgroup).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("packaging")]

PACKAGES = ("scaffold", "pytest_comet", "comet_engine")
SOURCES = ("pyproject.toml", "README.md", "LICENSE", *PACKAGES)
"""What the sdist is made from (setuptools adds nothing else of the checkout)."""
OWN = ("comet_eval", "__editable__", *PACKAGES)
"""Entries of a site-packages that are comet-eval itself, not a dependency."""
BUILTIN_TASKS = sorted(load_catalog([BUILTIN_TASKS_DIR]).names())


@dataclass(frozen=True)
class Installed:
    wheel: Path
    sdist: Path
    venv: Path
    site: Path
    """The fresh venv's site-packages, where the wheel went."""
    home: Path

    def run(self, *argv: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """A command of the fresh venv (``comet``, ``python``) in *cwd*, in a bare environment."""
        env = {
            "PATH": f"{self.venv / 'bin'}{os.pathsep}{os.defpath}",
            "HOME": str(self.home),
            "TMPDIR": str(self.home / "tmp"),
            "LANG": "C.UTF-8",
        }
        command = [str(self.venv / "bin" / argv[0]), *argv[1:]]
        return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def _files(folder: Path) -> set[str]:
    """Every file under *folder* but bytecode caches, relative to it."""
    return {
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


def _build(root: Path) -> tuple[Path, Path]:
    source = root / "source"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=ignore)
        else:
            shutil.copy2(REPO / name, source / name)
    dist = root / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(dist), str(source)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    # setuptools explains a mistake in its configuration (a deprecated license table, data in a folder that
    # is no package) with a SetuptoolsWarning or a WARNING block, and builds all the same.
    assert "Warning" not in build.stderr and "WARNING" not in build.stderr, build.stderr[-3000:]
    (wheel,) = dist.glob("*.whl")
    (sdist,) = dist.glob("*.tar.gz")
    return wheel, sdist


def _fresh_venv(root: Path, wheel: Path) -> tuple[Path, Path]:
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "--disable-pip-version-check"]
    subprocess.run([*pip, "install", "--quiet", "--no-deps", "--no-index", str(wheel)], check=True, timeout=300)
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True, text=True, check=True, timeout=60,
        ).stdout.strip()
    )  # fmt: skip
    deps = root / "deps"
    deps.mkdir()
    ours = Path(sysconfig.get_path("purelib"))
    for entry in sorted(ours.iterdir()):
        if entry.name.startswith(OWN) or entry.suffix == ".pth":
            continue
        (deps / entry.name).symlink_to(entry)
    (site / "_comet_test_dependencies.pth").write_text(f"{deps}\n", encoding="utf-8")
    check = subprocess.run([*pip, "check"], capture_output=True, text=True, timeout=120, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    return venv, site


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("packaging")
    wheel, sdist = _build(root)
    venv, site = _fresh_venv(root, wheel)
    home = root / "home"
    (home / "tmp").mkdir(parents=True)
    return Installed(wheel=wheel, sdist=sdist, venv=venv, site=site, home=home)


@pytest.fixture
def empty(installed: Installed, tmp_path: Path) -> Path:
    folder = tmp_path / "empty"
    folder.mkdir()
    return folder


def test_the_wheel_says_what_it_is(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as wheel:
        info = f"comet_eval-{__version__}.dist-info"
        meta = Parser().parsestr(wheel.read(f"{info}/METADATA").decode())
        entry_points = wheel.read(f"{info}/entry_points.txt").decode()
        names = set(wheel.namelist())
    assert (meta["Name"], meta["Version"]) == ("comet-eval", __version__)
    assert (meta["License-Expression"], meta["License-File"]) == ("Apache-2.0", "LICENSE")
    assert f"{info}/licenses/LICENSE" in names
    assert meta["Requires-Python"] == ">=3.11"
    assert "Programming Language :: Python :: 3.11" in meta.get_all("Classifier")
    assert meta["Description-Content-Type"] == "text/markdown"
    assert meta.get_payload().startswith("# comet-eval\n")  # the README, as the long description
    assert {"dev", "langsmith", "langfuse"} <= set(meta.get_all("Provides-Extra"))
    assert "comet = scaffold.cli.main:entry" in entry_points
    assert "pytest_comet = pytest_comet.plugin" in entry_points
    with tarfile.open(installed.sdist) as sdist:
        members = {m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name}
    assert {"PKG-INFO", "LICENSE", "README.md", "pyproject.toml"} <= members
    assert {f"scaffold/builtin/{f}" for f in _files(BUILTIN_TASKS_DIR.parent)} <= members


def test_every_file_of_the_packages_is_installed(installed: Installed) -> None:
    # Both ways: a file of the checkout missing from the wheel is data the program cannot find installed;
    # a file in the wheel but not in the checkout came from somewhere stale.
    for package in PACKAGES:
        assert _files(installed.site / package) == _files(REPO / package), package


def test_the_version_has_one_source(installed: Installed, empty: Path) -> None:
    shown = installed.run("comet", "--version", cwd=empty)
    assert shown.stdout == f"comet-eval {__version__}\n", shown.stderr
    code = "import importlib.metadata as m, scaffold as s; print(m.version('comet-eval'), s.__version__, s.__file__)"
    metadata, package, where = installed.run("python", "-c", code, cwd=empty).stdout.split()
    assert metadata == package == __version__
    assert Path(where).is_relative_to(installed.site)  # the wheel's, never the checkout's


def test_tasks_list_and_check_find_the_built_in_tasks(installed: Installed, empty: Path) -> None:
    listed = installed.run("comet", "tasks", "list", "--json", cwd=empty)
    assert listed.returncode == 0, listed.stderr
    assert sorted(row["name"] for row in json.loads(listed.stdout)) == BUILTIN_TASKS
    checked = installed.run("comet", "tasks", "check", cwd=empty)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert list(empty.iterdir()) == []  # listing writes nothing


def test_the_built_in_suite_runs_with_the_oracle_and_reports(installed: Installed, empty: Path) -> None:
    run = installed.run("comet", "run", "--agent=oracle", "-n", "2", "-p", "no:cacheprovider", cwd=empty)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (experiment,) = (empty / "local" / "logs" / "experiments").iterdir()  # under the current folder
    records = [json.loads(p.read_text()) for p in experiment.glob("trials/*/record.json")]
    cases = {(r["task"], r["treatment"]) for r in records}
    assert {task for task, _ in cases} == set(BUILTIN_TASKS)
    assert ("generic-skill-smoke", "SKILL_MARKDOWN_REPORT") in cases  # the packaged treatment and its skill
    assert {r["verdict"] for r in records} == {"passed"}
    assert {r["harness_version"] for r in records} == {__version__}
    report = installed.run("comet", "report", str(experiment), "--html", "--out", str(empty / "report"), cwd=empty)
    assert report.returncode == 0, report.stdout + report.stderr
    assert {"summary.md", "comparison_report.md", "report.html"} <= {p.name for p in (empty / "report").iterdir()}
    # pytest's own way to name an installed suite works too, rooted where it was started.
    pyargs = installed.run(
        "python", "-m", "pytest", "--pyargs", "scaffold.builtin.suites.local.test_tasks", "--collect-only", "-q",
        "-p", "no:cacheprovider", cwd=empty,
    )  # fmt: skip
    assert pyargs.returncode == 0, pyargs.stdout + pyargs.stderr
    assert "test_task[fix-median-CONTROL-r1]" in pyargs.stdout
    # Nothing but bytecode was written into the installation.
    assert _files(installed.site / "scaffold") == _files(REPO / "scaffold")
    assert not list(installed.site.rglob(".pytest_cache")) and not (installed.site / "local").exists()


def test_comet_eval_plans_and_runs_a_skill(installed: Installed, empty: Path) -> None:
    skill = empty / "my-skill"
    shutil.copytree(BUILTIN_SKILLS_DIR / "markdown-report", skill)
    collect = installed.run("comet", "eval", "./my-skill", "--quick", "--collect", "--agent", "oracle", cwd=empty)
    assert collect.returncode == 0, collect.stdout + collect.stderr
    assert "generic-skill-smoke  (built-in)" in collect.stdout
    assert not (skill / ".comet").exists()  # --collect writes nothing
    run = installed.run("comet", "eval", "./my-skill", "--quick", "--agent", "oracle", "--html", cwd=empty)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary = next((skill / ".comet" / "eval" / "runs" / "experiments").glob("*/summary.md"))
    assert "DYNAMIC_SKILL" in summary.read_text()
    assert (installed.home / ".comet" / "eval" / ".env").is_file()  # the packaged .env template, written once


def test_the_engine_commands_find_their_built_in_skill(installed: Installed, empty: Path) -> None:
    shown = installed.run("comet", "skill", "show", "comet-classic", "--json", cwd=empty)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    example = empty / "release-notes"
    shutil.copytree(REPO / "examples" / "release-notes", example)
    added = installed.run("comet", "skill", "add", str(example), "--project", str(empty), cwd=empty)
    assert added.returncode == 0, added.stdout + added.stderr
    assert (empty / ".comet" / "skills" / "release-notes" / "SKILL.md").is_file()

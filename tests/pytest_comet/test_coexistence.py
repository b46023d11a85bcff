"""The plugin beside pytest-html, pytest-base-url and pytest-playwright, which register ``--html`` and
``--base-url`` too: every pytest run in such an environment must still work, a plain suite and a comet one.

They run in ``.venv-coexist`` (made by ``.ci/run``, pins in ``.ci/coexist.txt``), a second environment,
because installing those plugins into the project's own would change every other test run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scaffold.catalog.builtin import SUITES
from tests.support.factories import REPO, TaskFactory

COEXIST_PYTHON = REPO / ".venv-coexist" / "bin" / "python"
_MAKE = "python3 -m venv .venv-coexist && .venv-coexist/bin/pip install -e . -r .ci/coexist.txt"


@pytest.fixture
def coexist_python() -> Path:
    if not COEXIST_PYTHON.exists():
        message = f"no {COEXIST_PYTHON.parent.parent} with pytest-html, pytest-base-url and pytest-playwright ({_MAKE})"
        if os.environ.get("COMET_CI") == "1":
            pytest.fail(f"COMET_CI=1 requires it: {message}", pytrace=False)
        pytest.skip(message)
    return COEXIST_PYTHON


def pytest_in(python: Path, folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COMET_", "BENCH_"))}
    env["COMET_EVAL_HOME"] = str(folder / "comet-home")  # no user .env reaches the run
    return subprocess.run(
        [str(python), "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_other_plugins_are_there(coexist_python: Path, tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    result = pytest_in(coexist_python, tmp_path, "--help")
    assert result.returncode == 0, result.stderr
    for plugin_option in ("--html=path", "--base-url=url", "--browser=", "--comet-html", "--comet-base-url=URL"):
        assert plugin_option in result.stdout
    assert "--task=NAMES, --comet-task=NAMES" in result.stdout  # a seed name nobody else claims stays


def test_a_plain_suite_runs_with_pytest_html_and_base_url(coexist_python: Path, tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_app.py").write_text("def test_base_url(base_url):\n    assert base_url == 'http://app.test'\n")
    result = pytest_in(coexist_python, tmp_path, "--html=report.html", "--base-url=http://app.test")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
    assert (tmp_path / "report.html").is_file()


@pytest.mark.slow
def test_the_comet_suite_runs_with_its_prefixed_options(coexist_python: Path, tmp_path: Path) -> None:
    factory = TaskFactory(tmp_path / "local")
    factory.treatments("common.yaml", {"CONTROL": {"description": "baseline", "skills": []}})
    factory.task("one")
    tests = tmp_path / "local" / "tests"
    tests.mkdir()
    (tests / "test_tasks.py").write_text(SUITES["local"].read_text())
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    result = pytest_in(
        coexist_python,
        tmp_path,
        "local/tests",
        "--task=one",
        "--comet-agent=oracle",
        "--comet-html",
        "--comet-experiment-id=e",
        f"--comet-workspace-root={tmp_path / 'ws'}",
        "--html=pytest-report.html",  # pytest-html's, beside ours
        "--base-url=http://app.test",  # pytest-base-url's: never the agent's model endpoint
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
    experiment = tmp_path / "local" / "logs" / "experiments" / "e"
    assert (experiment / "report.html").is_file()  # comet's report
    assert (tmp_path / "pytest-report.html").is_file()  # pytest-html's
    records = list(experiment.glob("trials/*/record.json"))
    assert len(records) == 1
    assert "app.test" not in json.dumps(json.loads(records[0].read_text()))


# --- the same rules in this environment, with stand-ins for the other plugins ------------------------------

STAND_INS = {
    "standin_html": 'def pytest_addoption(parser):\n    parser.addoption("--html", dest="htmlpath", default=None)\n',
    "standin_url": 'def pytest_addoption(parser):\n    parser.addoption("--base-url", default=None)\n\n\n'
    "def pytest_report_header(config):\n"
    "    return f\"stand-in: html={config.getoption('htmlpath')} base_url={config.getoption('base_url')}\"\n",
}
"""Stand-ins for pytest-html and pytest-base-url: the same option strings and destinations."""


def comet_suite(pytester: pytest.Pytester) -> None:
    factory = TaskFactory(pytester.path / "local")
    factory.treatments("common.yaml", {"CONTROL": {"description": "baseline", "skills": []}})
    factory.task("one")
    tests = pytester.path / "local" / "tests"
    tests.mkdir()
    (tests / "test_tasks.py").write_text(SUITES["local"].read_text())
    pytester.makeini("[pytest]\n")


def test_a_plugin_registered_first_keeps_its_names(pytester: pytest.Pytester) -> None:
    """``-p`` plugins register before the entry points: its --html and --base-url stay its own."""
    comet_suite(pytester)
    pytester.makepyfile(**STAND_INS)
    pytester.syspathinsert()
    result = pytester.runpytest(
        "-p",
        "standin_html",
        "-p",
        "standin_url",
        "--html=x.html",
        "--base-url=http://app.test",
        "--comet-html",
        "--comet-experiment-id=e",
        f"--comet-workspace-root={pytester.path / 'ws'}",
    )
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["stand-in: html=x.html base_url=http://app.test", "*1 passed*"])
    assert (pytester.path / "local" / "logs" / "experiments" / "e" / "report.html").is_file()


def test_a_plugin_that_registers_later_keeps_its_names(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An installed plugin whose entry point loads after ours (here named ``html`` and ``base_url``, as
    pytest-html's and pytest-base-url's are): the names are left free for it before it registers."""
    comet_suite(pytester)
    site = pytester.path / "site"
    site.mkdir()
    for name, text in STAND_INS.items():
        (site / f"{name}.py").write_text(text)
    info = site / "standin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: standin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pytest11]\nhtml = standin_html\nbase_url = standin_url\n")
    monkeypatch.setattr(sys, "path", [*sys.path, str(site)])  # after site-packages: it loads after us
    result = pytester.runpytest(
        "--html=y.html", "--comet-experiment-id=e", f"--comet-workspace-root={pytester.path / 'ws'}"
    )
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["stand-in: html=y.html base_url=None", "*1 passed*"])


def test_short_options_can_be_turned_off(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    comet_suite(pytester)
    monkeypatch.setenv("COMET_EVAL_SHORT_OPTIONS", "0")
    result = pytester.runpytest("--task=one", "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unrecognized arguments: --task=one*"])
    pytester.runpytest("--comet-task=one", "--collect-only").assert_outcomes()

"""``comet run [--suite NAME] [pytest options]``: the built-in suite through pytest, wherever comet-eval is.

The suite's test entry is package data (scaffold.catalog.builtin.SUITES), so an installation has no
``local/tests`` to name; this runs pytest on the packaged entry, in this process, with every other option
passed through (``--task``, ``--agent``, ``-n 2``...). The run is rooted at the current folder, as
``pytest local/tests`` is at the checkout: its ``local/tasks`` and ``local/treatments`` when it has them
(else the built-in ones), its experiments under ``./local/logs`` unless ``--logs-dir``. The user's pytest
configuration (a pyproject.toml here) configures the user's tests, not this suite: it is not read, as
``comet eval`` does not read it. The exit status is the pytest session's (0-5, 6, 143).

In a checkout ``pytest local/tests`` runs the same entry, with the checkout's pytest settings.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from scaffold.catalog.builtin import SUITES
from scaffold.cli.eval.planner import SUITE_SDKS
from scaffold.errors import SelectionError

__all__ = ["add_commands", "pytest_arguments"]


def add_commands(commands: Any) -> None:
    """``comet run``: its own options; every other argument is pytest's (scaffold.cli.main passes them)."""
    run = commands.add_parser(
        "run",
        help="the built-in suite through pytest: every task, the oracle agent, the local backend by default",
        description="Run the built-in suite's pytest session here: every option but --suite is pytest's or the "
        "plugin's (pytest --help lists them), e.g. comet run --task=fix-median --count=3 -n 2. Experiments go "
        "to ./local/logs unless --logs-dir; ./local/tasks is used when it exists, else the built-in tasks. "
        "Exit status: the pytest session's.",
        allow_abbrev=False,  # pytest's options must never be taken for an abbreviation of --suite
    )
    run.add_argument(
        "--suite",
        choices=sorted(SUITES),
        default="local",
        help="local (default), or langsmith/langfuse: the same trials, also reported to that service "
        "(pip install 'comet-eval[NAME]')",
    )
    run.set_defaults(func=_run, pytest_args=[])


def pytest_arguments(suite: str, root: Path, passed: list[str]) -> list[str]:
    """pytest's command line for *suite* rooted at *root*, then the options *passed*."""
    return [
        # The suite's folder, not its file: outside the rootdir, pytest names items relative to the argument
        # given, so they read test_tasks.py::test_task[fix-median-CONTROL-r1], not ::test_task[...].
        str(SUITES[suite].parent),
        f"--rootdir={root}",
        # Not the user's pytest configuration (its filterwarnings, addopts, testpaths): see the module.
        "-c",
        os.devnull,
        # The packaged test modules are found by their path, never put on sys.path: the langsmith and
        # langfuse suites' folders must not shadow those SDKs.
        "--import-mode=importlib",
        # pytest would rewrite the asserts of the plugin's whole distribution, scaffold included, which this
        # command has already imported (a warning that it cannot); the suite's test asserts through
        # Trial.assert_passed, never a bare assert, so plain asserts lose nothing.
        "--assert=plain",
        *passed,
    ]


def _run(args: argparse.Namespace) -> int:
    import pytest

    sdk = SUITE_SDKS.get(args.suite)
    if sdk is not None:  # its conftest imports the SDK: say how to install it rather than show an ImportError
        from importlib import metadata

        try:
            metadata.version(sdk)
        except metadata.PackageNotFoundError:
            raise SelectionError(
                f"--suite {args.suite} needs the {sdk} SDK: pip install 'comet-eval[{args.suite}]'"
            ) from None
    return int(pytest.main(pytest_arguments(args.suite, Path.cwd(), list(args.pytest_args))))

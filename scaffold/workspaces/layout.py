"""The harness's own names inside a workspace, and the validation helpers it makes importable there.

Shared by validation (which copies the task's scripts in and reads their results), the agents (the
oracle's copy of the solution) and the backends (a local backend shares one copy of the helpers between
trials): one module, so that none of them needs another's internals.
"""

from __future__ import annotations

import compileall
from importlib import resources
from pathlib import Path
from typing import Final

from scaffold.python.validation.core import CONTEXT_FILE, RESULTS_FILE

__all__ = ["CONTEXT_FILE", "RESULTS_FILE", "SHIM_DIR", "SOLUTION_DIR", "VALIDATION_DIR", "shim_files", "write_shim"]

VALIDATION_DIR: Final = ".eval-validation"
"""Where the task's validation folder is copied, after the agent (a name, not a trigger: the validation
phase starts with an explicit ``Workspace.begin_validation``)."""
SOLUTION_DIR: Final = ".eval-solution"
"""Where the oracle copies the task's solution when the workspace cannot read it in place."""
SHIM_DIR: Final = f"{VALIDATION_DIR}/_lib"
"""Where the validation helpers go when the backend shares no copy of them."""
_SHIM_PACKAGES: Final = ("scaffold", "scaffold/python", "scaffold/python/validation")


_HELPERS: Final = ("core.py", "comet_checks.py", "comet_workflow.py", "expect.py")
_TOP_LEVEL_COMET_CHECKS: Final = (
    '"""The comet-workflow checks under the top-level name the original Comet eval\'s validators import."""\n'
    "import sys\n\n"
    "from scaffold.python.validation import comet_checks\n\n"
    "sys.modules[__name__] = comet_checks\n"
)
"""``comet_checks``: the original's validators import the checks by this name (``from comet_checks import
run_comet_checks, ...``); it is the package's module itself, not a copy."""


def shim_files() -> list[tuple[str, str]]:
    """(relative path, text) of standard-library-only copies of the validation helpers: the package
    ``scaffold.python.validation`` (``core``; ``comet_checks``, also as ``comet_workflow``, the original
    Comet eval's name) and a top-level ``comet_checks``, importable whatever Python runs the scripts
    (containers do not have comet-eval installed). Installed for validation only, after the agent."""
    source = resources.files("scaffold.python.validation")
    helpers = [(f"scaffold/python/validation/{n}", source.joinpath(n).read_text(encoding="utf-8")) for n in _HELPERS]
    packages = [(f"{package}/__init__.py", "") for package in _SHIM_PACKAGES]
    return [*packages, *helpers, ("comet_checks.py", _TOP_LEVEL_COMET_CHECKS)]


def write_shim(folder: Path) -> None:
    """The helpers in a host folder, for backends whose trials can share one."""
    for rel, text in shim_files():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")
    # Compiled once here: validation runs with PYTHONDONTWRITEBYTECODE (nothing written into the
    # workspace), so without a ready .pyc every script would compile the shim again, about a
    # millisecond per trial. Same interpreter as the local backend's commands, so the .pyc is valid.
    compileall.compile_dir(folder, quiet=1)

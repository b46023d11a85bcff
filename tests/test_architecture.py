"""Layering rules of DESIGN.md, checked on the source: pytest_comet -> scaffold -> comet_engine.

Pure modules (loaders, rubrics, records, reports, statistics) must not import pytest, docker or
subprocess, so that logs can be re-scored and re-reported offline.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

PURE = [
    "scaffold/tasks.py",
    "scaffold/treatments.py",
    "scaffold/cases.py",
    "scaffold/profiles.py",
    "scaffold/schema.py",
    "scaffold/errors.py",
    "scaffold/hashing.py",
    "scaffold/trajectory.py",
    "scaffold/records.py",
    "scaffold/experiment.py",
    "scaffold/validation/results.py",
    "scaffold/rubrics/__init__.py",
    "scaffold/rubrics/generic.py",
    "scaffold/rubrics/safety.py",
    "scaffold/reports/summary.py",
    "scaffold/reports/analysis.py",
    "scaffold/reports/svg.py",
    "scaffold/reports/gates.py",
    "scaffold/reports/results.py",
    "scaffold/reports/comparison.py",
    "scaffold/reports/markdown.py",
    "scaffold/reports/config.py",
    "scaffold/reports/html.py",
    "scaffold/python/validation/core.py",
    "scaffold/agents/streams/__init__.py",
    "scaffold/agents/streams/claude.py",
    "scaffold/agents/streams/codex.py",
    "scaffold/agents/streams/failures.py",
    "scaffold/noise.py",
    "scaffold/agents/credentials.py",
    "scaffold/agents/custom.py",
    "scaffold/agents/builtin.py",
    "scaffold/conversation.py",
    "scaffold/modelserver/script.py",
    "scaffold/modelserver/anthropic.py",
    "scaffold/modelserver/openai.py",
    "scaffold/stats/__init__.py",
    "scaffold/stats/aggregate.py",
    "scaffold/stats/outcomes.py",
    "scaffold/stats/paired.py",
    "scaffold/stats/passk.py",
    "scaffold/stats/power.py",
    "scaffold/stats/rates.py",
]
FORBIDDEN_IN_PURE = {"pytest", "_pytest", "docker", "subprocess", "pytest_comet"}


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def top(names: set[str]) -> set[str]:
    return {n.split(".")[0] for n in names}


@pytest.mark.parametrize("path", sorted((REPO / "scaffold").rglob("*.py")), ids=lambda p: str(p.relative_to(REPO)))
def test_scaffold_never_imports_the_plugin(path: Path) -> None:
    assert "pytest_comet" not in top(imports(path))


@pytest.mark.parametrize("rel", PURE)
def test_pure_modules_do_no_io_through_pytest_docker_or_subprocess(rel: str) -> None:
    assert not top(imports(REPO / rel)) & FORBIDDEN_IN_PURE


def test_validation_helper_uses_only_the_standard_library() -> None:
    import sys

    names = top(imports(REPO / "scaffold/python/validation/core.py")) - {"__future__"}
    assert names <= set(sys.stdlib_module_names)


def test_engine_imports_nothing_of_ours() -> None:
    engine = REPO / "comet_engine"
    for path in sorted(engine.rglob("*.py")) if engine.is_dir() else []:
        assert not top(imports(path)) & {"scaffold", "pytest_comet"}, path


def test_importing_scaffold_is_light() -> None:
    """Validation scripts import scaffold.python.validation.core: that must not load the harness."""
    import subprocess
    import sys

    code = (
        "import sys; import scaffold.python.validation.core; "
        "heavy = [m for m in ('pydantic', 'yaml', 'jinja2', 'pytest') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "[]"

"""A fresh clone without Docker or the agent CLIs passes the suite: every test that needs one skips, named.

The test modules that touch Docker or a real agent CLI run again in a subprocess that has neither: the
Docker engine at a socket that does not exist, the agent CLIs' folder empty, no COMET_REQUIRE_* (CI's
demand that they be there). Any failure or error there is a test that needs Docker or a CLI and does not
say so: mark it ``docker`` or ask for ``docker_client`` / ``require_cli``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.factories import REPO

_NEEDS = re.compile(
    r"scaffold\.workspaces\.docker|docker_client|docker_base_image|pytest\.mark\.docker|agent_cli|require_cli"
)


def modules_needing_an_engine_or_a_cli() -> list[str]:
    """The test modules that mention Docker or a real agent CLI (this one aside). Those in an xdist group
    are left out: their fixtures make what exists once per machine (network namespaces, extra engines),
    which the same tests of the main run are using meanwhile; each asks for docker_client first."""
    found = []
    for path in sorted((REPO / "tests").rglob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        if path.name != Path(__file__).name and _NEEDS.search(text) and "xdist_group" not in text:
            found.append(str(path.relative_to(REPO)))
    return found


@pytest.mark.slow
def test_without_docker_or_agent_clis_those_tests_skip(tmp_path: Path) -> None:
    modules = modules_needing_an_engine_or_a_cli()
    assert len(modules) > 20  # the scan finds them (30 when written)
    (tmp_path / "no-clis").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COMET_REQUIRE_", "COMET_CI_", "PYTEST_"))}
    env |= {
        "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock",
        "COMET_AGENT_BIN_DIR": str(tmp_path / "no-clis"),
        "COMET_EVAL_HOME": str(tmp_path / "eval-home"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "-rs", *modules],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    tail = done.stdout[-3000:]
    assert done.returncode == 0, tail
    summary = done.stdout.strip().splitlines()[-1]
    assert "failed" not in summary and "error" not in summary and "skipped" in summary, summary
    assert int(summary.split(" skipped")[0].split()[-1]) > 100, summary  # the Docker and CLI tests did skip

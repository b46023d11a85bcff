"""The repository's tests honour ``xdist_group``: the engine pool's tests, which start engines that exist
once per machine, must never run on two workers at once."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.support.factories import REPO


def test_grouped_tests_share_one_worker(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["tests.support.loadgroup"]\n')
    (tmp_path / "test_grouped.py").write_text(
        "import time, pytest\n"
        'pytestmark = pytest.mark.xdist_group("solo")\n'
        '@pytest.mark.parametrize("i", range(6))\n'
        "def test_grouped(i):\n    time.sleep(0.1)\n"
    )
    (tmp_path / "test_free.py").write_text(
        'import time, pytest\n@pytest.mark.parametrize("i", range(6))\ndef test_free(i):\n    time.sleep(0.1)\n'
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "-v", "-p", "no:cacheprovider", "."],
        cwd=tmp_path,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    ran = re.findall(r"\[(gw\d)\] .*PASSED (\S+)", run.stdout)
    grouped = {worker for worker, test in ran if "test_grouped" in test}
    assert len(ran) == 12 and len(grouped) == 1, run.stdout
    assert all(test.endswith("@solo") for _, test in ran if "test_grouped" in test)

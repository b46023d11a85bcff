"""The docs site: its reference pages are what the parsers make today, and it builds with every link checked."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli_docs import PAGES, REGENERATE
from tests.support.factories import REPO


@pytest.mark.parametrize("relative", sorted(PAGES))
def test_reference_page_is_current(relative: str) -> None:
    committed = (REPO / relative).read_text(encoding="utf-8") if (REPO / relative).is_file() else ""
    assert committed == PAGES[relative](), f"{relative} is out of date with the parser: run {REGENERATE}"


def test_the_site_builds_strict_with_every_link_and_anchor_checked(tmp_path: Path) -> None:
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        message = "mkdocs and mkdocs-material are not installed: pip install -e '.[docs]' (scripts/test does)"
        if os.environ.get("COMET_CI") == "1" or os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    # NO_MKDOCS_2_WARNING: Material's notice about its end of life, printed on every build, is no warning
    # of ours; strict mode (mkdocs.yml) turns every real one (a broken link or anchor) into a failure.
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--quiet", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "site" / "coming-from-original" / "index.html").is_file()
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()


def test_every_page_of_docs_is_in_the_nav() -> None:
    """mkdocs checks this too (validation.nav.omitted_files); here it is said without building."""
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r":\s*(\S+\.md)\s*$", nav, re.MULTILINE))
    pages = {p.relative_to(REPO / "docs").as_posix() for p in (REPO / "docs").rglob("*.md")}
    assert pages == listed, f"not in the nav: {sorted(pages - listed)}; in the nav, no file: {sorted(listed - pages)}"


def test_readme_links_resolve() -> None:
    """The README is read on the repository's host: its relative links must name files that exist."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    missing = [t for t in targets if "://" not in t and not (REPO / t).exists()]
    assert targets and not missing, missing


def test_readme_is_a_front_page() -> None:
    """The manual lives in docs/; the README says what the project is, how to start, and where to read on."""
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines: move the detail into a docs/ page"

"""Checks for changelog-release: a 2.4.0 section on top with the one entry, older sections untouched."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from scaffold.python.validation.core import run_checks

ORIGINAL_SECTIONS = (
    "## 2.3.1\n- Fix a crash when the input file is empty\n\n"
    "## 2.3.0\n- Add the `report` command\n- Speed up parsing of large files\n"
)


def _text() -> str:
    path = Path("CHANGELOG.md")
    assert path.is_file(), "CHANGELOG.md is missing"
    return path.read_text(encoding="utf-8")


def _sections() -> list[tuple[str, list[str]]]:
    sections: list[tuple[str, list[str]]] = []
    for line in _text().splitlines():
        if line.startswith("## "):
            sections.append((line[3:].strip(), []))
        elif sections and line.strip():
            sections[-1][1].append(line.strip())
    return sections


def title_first() -> None:
    first = next((line for line in _text().splitlines() if line.strip()), "")
    assert first == "# Changelog", f"the first line should be '# Changelog', found {first!r}"


def new_section_on_top() -> None:
    sections = _sections()
    assert sections, "no '## <version>' section found"
    assert sections[0][0] == "2.4.0", f"the first section should be '## 2.4.0', found '## {sections[0][0]}'"


def exactly_the_entry() -> None:
    sections = dict(_sections())
    assert "2.4.0" in sections, "no '## 2.4.0' section"
    assert sections["2.4.0"] == ["- Add --json output to the report command"], (
        f"the 2.4.0 section should hold exactly the one entry, found {sections['2.4.0']!r}"
    )


def one_new_section() -> None:
    versions = [v for v, _ in _sections()]
    assert versions == ["2.4.0", "2.3.1", "2.3.0"], f"expected sections 2.4.0, 2.3.1, 2.3.0; found {versions}"


def old_sections_untouched() -> None:
    normalized = re.sub(r"\n{3,}", "\n\n", _text())
    assert ORIGINAL_SECTIONS in normalized, "the 2.3.1 and 2.3.0 sections were changed"


if __name__ == "__main__":
    sys.exit(
        run_checks(
            {
                "title stays first": title_first,
                "2.4.0 section on top": new_section_on_top,
                "2.4.0 has exactly the entry": exactly_the_entry,
                "exactly one new section": one_new_section,
                "older sections untouched": old_sections_untouched,
            }
        )
    )

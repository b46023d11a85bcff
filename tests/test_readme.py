"""What a newcomer reads first: the README's commands work in the order it gives them."""

from __future__ import annotations

import re

from tests.support.factories import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def _command_lines() -> list[tuple[int, str]]:
    """(line number, line) of every line inside the README's bash blocks."""
    found, inside = [], False
    for number, line in enumerate(README.splitlines(), start=1):
        if line.startswith("```"):
            inside = line.strip() == "```bash"
            continue
        if inside:
            found.append((number, line))
    return found


def test_comet_is_put_on_path_before_the_first_bare_comet_command() -> None:
    lines = _command_lines()
    first_comet = next(n for n, line in lines if re.match(r"comet\s", line))
    activation = [n for n, line in lines if "source .venv/bin/activate" in line]
    assert activation and activation[0] <= first_comet, "say how `comet` gets on PATH before using it bare"


def test_the_set_up_scripts_say_how_comet_gets_on_path() -> None:
    for script in ("scripts/eval", "scripts/test"):
        assert "source .venv/bin/activate" in (REPO / script).read_text(encoding="utf-8"), script

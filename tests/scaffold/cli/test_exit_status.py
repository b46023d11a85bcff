"""One table of exit statuses (scaffold.errors.ExitStatus): every command's --help and the docs site say it."""

from __future__ import annotations

import re

import pytest

from scaffold.cli.eval.outcome import EVAL_STATUSES
from scaffold.cli.main import main
from scaffold.cli.report import REPORT_STATUSES
from scaffold.errors import EXIT_MEANINGS, ExitStatus
from tests.support.factories import REPO


def listed_statuses(help_text: str) -> list[int]:
    """The statuses an ``exit status:`` part of a --help lists, in order."""
    part = help_text.split("exit status:", 1)[1]
    return [int(m.group(1)) for m in re.finditer(r"^  (\d+)\s", part, re.M)]


def test_every_status_has_one_meaning_and_distinct_numbers() -> None:
    assert set(EXIT_MEANINGS) == set(ExitStatus)
    assert len({int(s) for s in ExitStatus}) == len(ExitStatus)


@pytest.mark.parametrize(
    ("argv", "statuses"),
    [((), tuple(ExitStatus)), (("eval",), EVAL_STATUSES), (("report",), REPORT_STATUSES)],
)
def test_help_lists_each_status_with_its_meaning_from_the_table(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], statuses: tuple[ExitStatus, ...]
) -> None:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    text = capsys.readouterr().out
    assert listed_statuses(text) == [int(s) for s in statuses]
    flat = " ".join(text.split())
    for status in statuses:
        assert " ".join(EXIT_MEANINGS[status].split()) in flat


def test_the_docs_table_is_the_table() -> None:
    readme = (REPO / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    rows = [f"| {int(s)} | {meaning.replace('|', chr(92) + '|')} |" for s, meaning in EXIT_MEANINGS.items()]
    assert "| status | meaning |\n|---|---|\n" + "\n".join(rows) + "\n" in readme

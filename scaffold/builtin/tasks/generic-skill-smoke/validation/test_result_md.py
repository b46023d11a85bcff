"""Hidden checks for generic-skill-smoke: result.md with the exact title and three real bullets."""

from __future__ import annotations

import re
import sys
from pathlib import Path

try:
    from scaffold.python.validation.core import run_checks
except ImportError:  # the harness may copy core.py next to this script instead
    from core import run_checks  # type: ignore[no-redef]

REPORT = Path("result.md")
TITLE = "# Skill Smoke Result"
MIN_BULLETS = 3
MIN_WORDS = 3
BULLET = re.compile(r"^\s*[-*]\s+(?P<text>\S.*?)\s*$")
CODE_SPAN = re.compile(r"`[^`\n]*`")
PLACEHOLDERS = (
    re.compile(r"<[A-Za-z][^<>\n]*>"),
    re.compile(r"\b(?:TODO|TBD|FIXME)\b"),
    re.compile(r"lorem ipsum", re.IGNORECASE),
)


def _text() -> str:
    assert REPORT.is_file(), "result.md was not found at the top level of the workspace"
    raw = REPORT.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AssertionError(f"result.md is not valid UTF-8: {exc}") from None


def _bullets(text: str) -> list[str]:
    found = []
    in_fence = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        match = None if in_fence else BULLET.match(line)
        if match:
            found.append(match.group("text"))
    return found


def _words(text: str) -> list[str]:
    return re.findall(r"[^\W_]+(?:['’-][^\W_]+)*", text)


def check_exists() -> None:
    text = _text()
    assert text.strip(), "result.md is empty"


def check_title() -> None:
    lines = [line for line in _text().splitlines() if line.strip()]
    assert lines, "result.md is empty"
    first = lines[0].rstrip()
    assert first == TITLE, f"the first non-empty line must be exactly {TITLE!r}, got {first!r}"


def check_bullet_count() -> None:
    bullets = _bullets(_text())
    assert len(bullets) >= MIN_BULLETS, (
        f"expected at least {MIN_BULLETS} bullet points ('- ' or '* ' lines), found {len(bullets)}"
    )


def check_bullets_substantive() -> None:
    bullets = _bullets(_text())
    good = [b for b in bullets if len(_words(CODE_SPAN.sub(" code ", b))) >= MIN_WORDS]
    distinct = {re.sub(r"\s+", " ", b.strip().lower()) for b in good}
    assert len(distinct) >= MIN_BULLETS, (
        f"expected at least {MIN_BULLETS} distinct bullet points of at least {MIN_WORDS} words each, "
        f"found {len(distinct)} among {bullets!r}"
    )


def check_no_placeholders() -> None:
    text = _text()
    for number, line in enumerate(text.splitlines(), start=1):
        visible = CODE_SPAN.sub("", line)
        for pattern in PLACEHOLDERS:
            match = pattern.search(visible)
            assert match is None, f"line {number} still contains placeholder text: {match.group(0)!r}"


CHECKS = {
    "result.md exists and is not empty": check_exists,
    "first non-empty line is the exact title": check_title,
    "at least three bullet points": check_bullet_count,
    "at least three distinct bullets with three or more words": check_bullets_substantive,
    "no placeholder text left": check_no_placeholders,
}

if __name__ == "__main__":
    sys.exit(run_checks(CHECKS))

#!/usr/bin/env python3
"""Check a Markdown result report: title, bullet points, leftover placeholders.

Usage:
    python3 check_report.py REPORT.md [--title "Exact Title"] [--min-bullets 3] [--min-words 3]

Prints ``OK`` and exits with status 0 when the report passes; otherwise prints one line per
problem and exits with status 1 (status 2 for bad arguments). Standard library only.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

BULLET = re.compile(r"^\s*[-*+]\s+(?P<text>.*\S)\s*$")
HEADING1 = re.compile(r"^#\s+(?P<text>.*\S)\s*$")
CODE_SPAN = re.compile(r"`[^`\n]*`")
PLACEHOLDERS = (
    (re.compile(r"<[A-Za-z][^<>\n]*>"), "template placeholder"),
    (re.compile(r"\b(?:TODO|TBD|FIXME|XXX)\b"), "unfinished marker"),
    (re.compile(r"lorem ipsum", re.IGNORECASE), "filler text"),
)


def _without_code(line: str) -> str:
    """The line with inline code spans removed, so `<tag>` in code is not a placeholder."""
    return CODE_SPAN.sub("", line)


def check_report(text: str, title: str | None, min_bullets: int, min_words: int) -> list[str]:
    """Return the list of problems found in *text* (empty when the report is fine)."""
    problems: list[str] = []
    lines = text.splitlines()
    non_empty = [line for line in lines if line.strip()]
    if not non_empty:
        return ["the report is empty"]

    first = non_empty[0].rstrip()
    heading = HEADING1.match(first)
    if heading is None:
        problems.append(f"the first non-empty line is not a level-1 heading ('# Title'): {first!r}")
    elif title is not None and first != f"# {title}":
        problems.append(f"the title is {first!r}, expected {'# ' + title!r}")

    in_fence = False
    bullets: list[tuple[int, str]] = []
    for number, line in enumerate(lines, start=1):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        match = BULLET.match(line)
        if match:
            bullets.append((number, match.group("text")))
        visible = _without_code(line)
        for pattern, label in PLACEHOLDERS:
            found = pattern.search(visible)
            if found:
                problems.append(f"line {number}: {label} left in the report: {found.group(0)!r}")

    if len(bullets) < min_bullets:
        problems.append(f"found {len(bullets)} bullet point(s), expected at least {min_bullets}")
    for number, bullet in bullets:
        words = re.findall(r"\w+", _without_code(bullet)) + CODE_SPAN.findall(bullet)
        if len(words) < min_words:
            problems.append(f"line {number}: bullet is too short (fewer than {min_words} words): {bullet!r}")
    texts = [bullet.strip().lower() for _, bullet in bullets]
    if len(set(texts)) < len(texts):
        problems.append("some bullet points are repeated word for word")
    if not text.endswith("\n"):
        problems.append("the file does not end with a newline")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check a Markdown result report.")
    parser.add_argument("report", type=Path, help="path of the Markdown report")
    parser.add_argument("--title", help="exact text the level-1 title must have (without '# ')")
    parser.add_argument("--min-bullets", type=int, default=3, help="minimum number of bullet points")
    parser.add_argument("--min-words", type=int, default=3, help="minimum number of words per bullet")
    args = parser.parse_args(argv)

    try:
        text = args.report.read_text(encoding="utf-8")
    except FileNotFoundError:
        print(f"{args.report}: file not found")
        return 1
    except UnicodeDecodeError:
        print(f"{args.report}: not valid UTF-8")
        return 1

    problems = check_report(text, args.title, args.min_bullets, args.min_words)
    if problems:
        for problem in problems:
            print(f"{args.report}: {problem}")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())

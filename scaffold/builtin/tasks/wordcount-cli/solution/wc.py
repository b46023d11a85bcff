"""wc.py - count lines, words and characters, like a simplified Unix ``wc``.

Usage: python wc.py [--lines] [--words] [--chars] [--json] [FILE ...]
"""

from __future__ import annotations

import argparse
import json
import sys

FIELDS = ("lines", "words", "chars")
STDIN = "-"


def count(data: bytes) -> dict[str, int]:
    """Return the line, word and character counts of *data* (UTF-8, invalid bytes replaced)."""
    text = data.decode("utf-8", errors="replace")
    return {"lines": text.count("\n"), "words": len(text.split()), "chars": len(text)}


def read_input(name: str) -> bytes:
    """Return the bytes of the named input; ``-`` is standard input."""
    if name == STDIN:
        return sys.stdin.buffer.read()
    with open(name, "rb") as handle:
        return handle.read()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wc.py",
        description="Print line, word and character counts for each FILE, and a total for several.",
    )
    parser.add_argument("-l", "--lines", action="store_true", help="print the newline count")
    parser.add_argument("-w", "--words", action="store_true", help="print the word count")
    parser.add_argument("-c", "--chars", action="store_true", help="print the character count")
    parser.add_argument("--json", action="store_true", help="print the counts as one JSON object")
    parser.add_argument("files", nargs="*", metavar="FILE", help="input files; '-' or none reads stdin")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line interface and return the exit status."""
    args = build_parser().parse_args(argv)
    selected = [field for field in FIELDS if getattr(args, field)] or list(FIELDS)
    names = args.files or [STDIN]

    status = 0
    results: list[tuple[str, dict[str, int]]] = []
    for name in names:
        try:
            data = read_input(name)
        except OSError as exc:
            print(f"wc.py: {name}: {exc.strerror or exc}", file=sys.stderr)
            status = 1
            continue
        results.append((name, count(data)))

    total = {field: sum(counts[field] for _, counts in results) for field in selected}
    if args.json:
        document = {
            "files": [{"name": name, **{f: counts[f] for f in selected}} for name, counts in results],
            "total": total,
        }
        print(json.dumps(document))
    else:
        for name, counts in results:
            print(" ".join(str(counts[f]) for f in selected), name)
        if len(names) > 1:
            print(" ".join(str(total[f]) for f in selected), "total")
    return status


if __name__ == "__main__":
    sys.exit(main())

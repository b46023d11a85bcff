"""wc.py - count lines, words and characters, like a simplified Unix ``wc``.

Usage: python wc.py [--lines] [--words] [--chars] [--json] [FILE ...]
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run the command line interface and return the exit status."""
    raise NotImplementedError("wc.py is not implemented yet")


if __name__ == "__main__":
    sys.exit(main())

"""Validation for the word-count task: the original Comet eval's core helpers, test context included."""

import importlib
import sys
from pathlib import Path

from scaffold.python.validation.core import load_test_context, write_test_results


def main() -> None:
    passed, failed = [], []
    context = load_test_context()
    (passed if context.get("task") == "word-count" else failed).append("test context names the task")
    sys.path.insert(0, str(Path.cwd()))
    try:
        words = importlib.import_module("words")
    except Exception as exc:  # the agent's module may not exist or not import
        write_test_results({"passed": passed, "failed": [*failed, f"words.py imports ({exc})"]})
        return
    got = words.count_words("The cat and the hat. Don't, don't!")
    want = {"the": 2, "cat": 1, "and": 1, "hat": 1, "don't": 2}
    (passed if got == want else failed).append("count_words counts words case-insensitively")
    write_test_results({"passed": passed, "failed": failed})


if __name__ == "__main__":
    main()

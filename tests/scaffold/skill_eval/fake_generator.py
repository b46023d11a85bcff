"""A stand-in for the generator agent in the cache tests: counts its calls in a file, answers fixed tasks.

Run as a script (``python -m tests.scaffold.skill_eval.fake_generator OWNER SKILL CALLS [HOLD]``) it is one
``comet eval`` process asking for generated tasks; with HOLD it writes HOLD.started once it generates and
waits for HOLD.release, so a test can start a second process while the first holds the lock.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from scaffold.catalog.builtin import BUILTIN_TASKS_DIR
from scaffold.catalog.tasks import load_catalog
from scaffold.skill_eval import generated
from scaffold.skill_eval.generator import Attempt, GeneratorResult, GeneratorSettings
from scaffold.skill_eval.manifest import synthesize_manifest

BUILTIN = load_catalog([BUILTIN_TASKS_DIR]).names()
TASKS = (
    {"name": "gen-one", "prompt": "Write one.md", "expect": {"files": ["one.md"]}},
    {"name": "gen-two", "prompt": "Write two.md", "expect": {"contains": {"two.md": ["two"]}}},
)


def fake(calls: Path, hold: Path | None = None, tasks: tuple[dict[str, Any], ...] = TASKS) -> Any:
    def run_generator(snapshot: Any, *, validate: Any, **_: Any) -> GeneratorResult:
        with calls.open("a") as fh:
            fh.write(f"{snapshot.hash}\n")
        if hold is not None:
            hold.with_suffix(".started").write_text("1")
            while not hold.with_suffix(".release").exists():
                time.sleep(0.01)
        problems = validate(list(tasks))
        assert not problems, problems
        attempt = Attempt(1, 0.5, 0, False, 100, 20, 0.01, None, "comet-generated-tasks.json")
        return GeneratorResult(tasks, (attempt,), 0.5, "fake 1.0")

    return run_generator


def main(owner: str, skill: str, calls: str, hold: str | None = None) -> None:
    generated.run_generator = fake(Path(calls), Path(hold) if hold else None)  # type: ignore[assignment]
    path = generated.ensure_generated(
        synthesize_manifest(Path(skill)),
        owner=Path(owner),
        settings=GeneratorSettings("claude-code", "m"),
        builtin_tasks=BUILTIN,
        env={},
    )
    print(path)


if __name__ == "__main__":
    main(*sys.argv[1:])

"""Caps on what an agent's output may occupy in a trial's folder.

An agent's streams (``agent.turn-N.jsonl``, ``agent.*.log``) are written straight to files while it
works, and kept with the record as evidence. One runaway agent printed 120 MB in one trial, kept whole;
a few such trials fill a CI disk. Once the agent is done (and its streams parsed into the trajectory
and scrubbed of its secrets), a stream larger than the cap keeps its first and last halves of it, cut at
line boundaries, with one line between them saying how much was cut: the start (the task, the first
steps) and the end (the final answer, the error) are what a reader looks for.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

from scaffold.util.atomic import write_bytes_atomic

__all__ = ["LOG_CAP_BYTES", "cap_agent_logs", "cap_file"]

LOG_CAP_BYTES: Final = 16 * 1024 * 1024
"""The most an agent's stream keeps (16 MiB): real agents' streams of long sessions are a few MB."""


def cap_agent_logs(trial_dir: Path, cap: int = LOG_CAP_BYTES) -> list[Path]:
    """Cap every agent stream of *trial_dir*; the files that were cut."""
    cut = []
    for path in sorted(trial_dir.glob("agent.*")):
        if path.is_file() and cap_file(path, cap):
            cut.append(path)
    return cut


def cap_file(path: Path, cap: int) -> bool:
    """Keep about *cap* bytes of *path*: its first and last halves, cut at line boundaries, and a line
    saying what was cut between them (a JSON object in a ``.jsonl`` stream, so that readers of the stream
    can skip it). False when the file was within the cap and left alone."""
    size = path.stat().st_size
    if size <= cap:
        return False
    half = cap // 2
    with path.open("rb") as handle:
        head = handle.read(half)
        head = head[: head.rfind(b"\n") + 1] if b"\n" in head else head
        handle.seek(size - half)
        tail = handle.read()
        tail = tail[tail.find(b"\n") + 1 :] if b"\n" in tail else tail
    dropped = size - len(head) - len(tail)
    what = f"{dropped:,} bytes cut here: the stream had {size:,} bytes; its first and last parts are kept"
    if path.suffix == ".jsonl":
        marker = json.dumps({"type": "comet_log_cut", "bytes_cut": dropped, "bytes_total": size, "note": what})
    else:
        marker = f"[comet-eval: {what}]"
    if head and not head.endswith(b"\n"):
        head += b"\n"
    write_bytes_atomic(path, [head, marker.encode() + b"\n", tail], mode=path.stat().st_mode & 0o777)
    return True

"""Write ``transcript.html`` into trial folders: one at the end of a trial, or every trial of experiments.

The page (scaffold.reports.transcript) is built from the record and the folder's files: the instruction
(``instruction.md``), each turn's stream (``agent.turn-N.jsonl``, read with
scaffold.agents.streams.timeline, and its stderr), ``changes.json``, the validation outputs. Every read is
bounded, so a trial that printed gigabytes still makes its page quickly: a stream is read to
``STREAM_LIMIT`` bytes, other files to ``FILE_LIMIT``.

A transcript is a view of files that stay in the folder, never the source of truth: a failure to build
one must not cost the trial its record. :func:`write_transcript` therefore writes a short page naming the
error instead, and raises only when even that cannot be written.

Many trials (``comet report --transcripts``): each record is read once and its page written atomically
(scaffold.util.atomic) but without flushing each to the disk: they can always be written again from the
records.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from markupsafe import escape

from scaffold.agents.streams.timeline import timeline
from scaffold.errors import RecordError
from scaffold.experiment import BUILD_LOG_FILE, CHANGES_FILE, INSTRUCTION_FILE, RECORD_FILE, TRANSCRIPT_FILE
from scaffold.records import TrialRecord
from scaffold.records.files import read_record
from scaffold.reports.transcript import FileText, TrialFolder, TurnStream, render_transcript
from scaffold.util.atomic import write_text_atomic

__all__ = ["FILE_LIMIT", "STREAM_LIMIT", "Transcripts", "read_folder", "write_transcript", "write_transcripts"]

STREAM_LIMIT: Final = 64 * 1024 * 1024
"""Bytes of one turn's stream read for its page (the page itself keeps far less)."""
FILE_LIMIT: Final = 65_536
"""Bytes read of the instruction, a validation output, a stderr log."""
CHANGES_LIMIT: Final = 32 * 1024 * 1024
MAX_LISTED: Final = 50
"""Files of a sub-folder (validation/, simulator/) shown or linked."""
SIMULATOR_DIR: Final = "simulator"
"""Where the simulated user's turns keep their streams (scaffold.agents.conversation)."""

_TURN = re.compile(r"^agent\.turn-(\d+)\.jsonl$")
_TURN_STDERR = re.compile(r"^agent\.turn-(\d+)\.stderr\.log$")
_NOT_OUTPUT = re.compile(r"^agent\.(turn-\d+\.|version\.)")


@dataclass(frozen=True, slots=True)
class Transcripts:
    """What :func:`write_transcripts` did: pages written, and one line per trial it could not do."""

    written: int
    problems: tuple[str, ...] = ()


def read_folder(trial_dir: Path, record: TrialRecord) -> TrialFolder:
    """Everything the page shows beyond the record, read (bounded) from *trial_dir*."""
    agent = record.agent.name or _config_agent(record)
    turns = []
    outputs = []
    stderr = {int(m[1]): name for name in record.streams if (m := _TURN_STDERR.match(name))}
    for name in record.streams:
        found = _TURN.match(name)
        if found:
            index = int(found[1])
            err = stderr.get(index)
            with _stream_lines(trial_dir / name) as lines:
                turns.append(TurnStream(index, name, timeline(lines, agent), _read(trial_dir, err) if err else None))
        elif not _NOT_OUTPUT.match(name):
            text = _read(trial_dir, name)
            if text is not None:
                outputs.append(text)
    turns.sort(key=lambda t: t.index)
    instruction = _read(trial_dir, INSTRUCTION_FILE)
    changes, problem = _changes(trial_dir / CHANGES_FILE)
    validation = _validation(trial_dir)
    files = [name for name in (INSTRUCTION_FILE, CHANGES_FILE, BUILD_LOG_FILE) if (trial_dir / name).is_file()]
    files += _listed(trial_dir, SIMULATOR_DIR)  # the simulated user's own turns
    return TrialFolder(
        record,
        instruction=None if instruction is None else instruction.text,
        turns=tuple(turns),
        changes=changes,
        changes_problem=problem,
        validation=validation,
        outputs=tuple(o for o in outputs if o is not None),
        files=(*files, *(f.name for f in validation)),
    )


def write_transcript(trial_dir: Path, record: TrialRecord, *, durable: bool = False) -> Path:
    """Write *trial_dir*/transcript.html for *record*; when the page cannot be built, a page that says why.

    *durable*: flush the page to the disk before the rename. Off by default: the page is rebuilt from the
    folder at will (``comet report --transcripts``), and two flushes cost more than rendering it.
    """
    path = trial_dir / TRANSCRIPT_FILE
    try:
        page = render_transcript(read_folder(trial_dir, record))
    except Exception as exc:  # a bad file in the folder must not cost the trial more than this page
        page = _failed_page(record, f"{type(exc).__name__}: {exc}")
    return write_text_atomic(path, page, durable=durable)


def write_transcripts(dirs: Sequence[Path]) -> Transcripts:
    """(Re)write the transcript of every trial with a record in the experiment directories *dirs*."""
    return _write_all([folder for directory in dirs for folder in _trial_folders(directory / "trials")])


def _write_all(folders: Sequence[Path]) -> Transcripts:
    written = 0
    problems = []
    for folder in folders:
        try:
            record = read_record(folder / RECORD_FILE)
        except RecordError:
            continue  # an unreadable record: the reports list it, with the field at fault
        try:
            write_transcript(folder, record, durable=False)
            written += 1
        except OSError as exc:
            problems.append(f"{folder / TRANSCRIPT_FILE}: cannot be written: {exc}")
    return Transcripts(written, tuple(problems))


def _trial_folders(trials: Path) -> list[Path]:
    try:
        with os.scandir(trials) as entries:
            names = sorted(e.name for e in entries if e.is_dir())
    except FileNotFoundError:
        return []
    return [trials / name for name in names if (trials / name / RECORD_FILE).exists()]


def _config_agent(record: TrialRecord) -> str | None:
    agent = record.config.get("agent")
    name = agent.get("name") if isinstance(agent, dict) else None
    return name if isinstance(name, str) else None


@contextlib.contextmanager
def _stream_lines(path: Path) -> Iterator[Iterator[str]]:
    """A stream file's lines, at most STREAM_LIMIT bytes of them; none when it cannot be read."""
    try:
        handle = path.open(encoding="utf-8", errors="replace")
    except OSError:
        yield iter(())
        return
    with handle:
        yield _bounded(handle)


def _bounded(lines: Iterable[str]) -> Iterator[str]:
    left = STREAM_LIMIT
    for line in lines:
        left -= len(line)
        if left < 0:
            return
        yield line


def _read(folder: Path, name: str, limit: int = FILE_LIMIT) -> FileText | None:
    try:  # descriptors, not file objects: a page reads five files or more, and is written for every trial
        fd = os.open(f"{folder}/{name}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        chunks = []
        left = limit
        while left > 0 and (chunk := os.read(fd, left)):
            chunks.append(chunk)
            left -= len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return FileText(name, b"".join(chunks).decode("utf-8", errors="replace"), size)


def _changes(path: Path) -> tuple[dict[str, Any] | None, str]:
    try:
        size = path.stat().st_size
    except OSError:
        return None, ""
    if size > CHANGES_LIMIT:
        return None, f"{CHANGES_FILE} is {size:,} bytes, more than a page reads"
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as exc:
        return None, f"{CHANGES_FILE} cannot be read: {exc}"
    if not isinstance(data, dict):
        return None, f"{CHANGES_FILE} is not a JSON object"
    return data, ""


def _listed(trial_dir: Path, sub: str) -> list[str]:
    """The files under *trial_dir*/*sub*, relative to *trial_dir*, sorted: at most MAX_LISTED."""
    found: list[str] = []
    pending = [sub]
    while pending:  # os.scandir on str paths: a page is written per trial, and Path.rglob costs 4x as much
        rel = pending.pop()
        try:
            with os.scandir(f"{trial_dir}/{rel}") as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(f"{rel}/{entry.name}")
                    elif entry.is_file():  # a link to a file is listed, as its name is linked
                        found.append(f"{rel}/{entry.name}")
        except OSError:  # missing (no simulated user), or unreadable: nothing to list
            continue
    return sorted(found)[:MAX_LISTED]


def _validation(trial_dir: Path) -> tuple[FileText, ...]:
    names = _listed(trial_dir, "validation")
    found = (_read(trial_dir, name, 16_384) for name in names)
    return tuple(f for f in found if f is not None)


def _failed_page(record: TrialRecord, error: str) -> str:
    title = escape(f"{record.task} · {record.treatment} · trial {record.trial}")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{title}</title></head><body><h1>{title}</h1>"
        f'<p id="transcript-error">The transcript could not be built: {escape(error[:2000])}</p>'
        f'<p>Verdict: {escape(record.verdict)}. See <a href="./{RECORD_FILE}">{RECORD_FILE}</a> and the '
        "agent's stream files in this folder.</p></body></html>\n"
    )

"""Trial record files: reading them (older shapes brought up to date in one place) and writing them.

Reading takes the fast way first: the file's bytes decode straight into the typed record
(scaffold.records.decode_record). Only when that fails does :func:`upgrade` see the record as plain
data: it refuses unknown schema versions, migrates every older shape, and converts the result to the
typed record, so a wrong type is a RecordError naming the file and the field. Older shapes migrated:

* no ``streams`` (records written before the runner listed the agent's stream files): the trial
  folder is listed now, when the record is read from one (else no streams);
* no ``noise`` (records written before noise classification existed): classified now, from the record
  itself, exactly as the runner classifies a finished trial;
* ``null`` for a list (checks, dimensions, hard failures, errors): read as the empty list;
* no ``harness_version`` or ``agent.endpoint`` (records written before they were recorded): unknown
  (None), which scaffold.reports.comparable never counts as a difference;
* JSON that only Python's json module reads: NaN, which that writer used for an unknown score, is read as
  unknown (None) where a record may say "unknown" (``weighted_score``, a dimension's ``score``, the
  trajectory's ``cost_usd``); anywhere else, and Infinity anywhere, the record is unreadable.

Every value is checked as well as typed, as it is decoded (the bounds are declared on the types:
scaffold.records, scaffold.trajectory, scaffold.rubrics): counts fit in 64 bits, seconds and costs are
finite and not negative, scores lie in [0, 1], weights are finite. A damaged record is a RecordError
naming the file and the field, listed by the reports as unreadable, never a crash later.
"""

from __future__ import annotations

import contextlib
import gc
import json
import math
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import msgspec

from scaffold.errors import RecordError
from scaffold.records import SCHEMA_VERSION, STREAM_PREFIX, TrialRecord, decode_record
from scaffold.records.noise import UNCLASSIFIED, classify
from scaffold.util.atomic import write_json_atomic

__all__ = ["gc_paused", "read_record", "record_field", "stream_names", "upgrade", "write_record"]


def read_record(path: Path | str) -> TrialRecord:
    """The record in the file *path* (its folder is the trial folder); RecordError when it is not one.

    Never raises anything else for what a file holds: whatever the bytes, the caller gets a record or a
    RecordError naming the file (and the field, when one is to blame).
    """
    try:
        data = _read_bytes(path)
    except OSError as exc:
        raise RecordError(f"{path}: cannot be read as a trial record: {exc}") from None
    try:
        record = decode_record(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        try:
            return upgrade(_loose_json(data, path), source=path, folder=Path(path).parent)
        except RecordError:
            raise
        except (ValueError, TypeError, OverflowError, RecursionError) as exc:  # e.g. nesting too deep
            raise RecordError(f"{path}: cannot be read as a trial record: {type(exc).__name__}: {exc}") from None
    if record.schema_version != SCHEMA_VERSION:
        raise _unsupported(record.schema_version, path)
    return record


_FIELD_AT = re.compile(r" - at `(\$[^`]*)`")


def record_field(message: str) -> str | None:
    """The field a RecordError's message names (``$.weighted_score``, as msgspec writes it), or None when
    it names none (the file as a whole is to blame)."""
    found = _FIELD_AT.search(message)
    return found[1] if found else None


def write_record(path: Path, record: TrialRecord) -> Path:
    """Write *record* to *path* atomically (scaffold.util.atomic), as indented JSON."""
    return write_json_atomic(path, record.to_builtins())


def upgrade(data: Any, *, source: Path | str = "record", folder: str | Path | None = None) -> TrialRecord:
    """The current typed record from the plain data of a record of any shape this harness knows.

    *folder*: the trial folder, listed for the stream names of records that lack them. RecordError when
    *data* is not a record: not an object, an unknown ``schema_version``, a required field missing, or a
    value of the wrong type (the message names the field, e.g. ``$.trajectory.tokens.input``).
    """
    if not isinstance(data, Mapping):
        raise RecordError(f"{source}: a trial record is a JSON object")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise _unsupported(version, source)
    fields = {k: v for k, v in data.items() if not (v is None and k in _LISTS)}
    _unknown_as_none(fields)
    unclassified = fields.get("noise") in (None, {})
    if unclassified:
        fields["noise"] = UNCLASSIFIED
    if fields.get("streams") is None:
        fields["streams"] = stream_names(folder) if folder is not None else ()
    try:
        record = msgspec.convert(fields, TrialRecord)
    except msgspec.ValidationError as exc:
        raise RecordError(f"{source}: not a valid trial record: {exc}") from None
    if unclassified:
        record = msgspec.structs.replace(record, noise=classify(record))
    return record


_LISTS = frozenset({"checks", "dimensions", "hard_failures", "errors"})


def _is_nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _unknown_as_none(fields: dict[str, Any]) -> None:
    """NaN where a record may say "unknown" becomes None (the older writer's way of saying it); a NaN
    anywhere else stays, and the typed conversion refuses it by field."""
    if _is_nan(fields.get("weighted_score")):
        fields["weighted_score"] = None
    trajectory = fields.get("trajectory")
    if isinstance(trajectory, Mapping) and _is_nan(trajectory.get("cost_usd")):
        fields["trajectory"] = {**trajectory, "cost_usd": None}
    dimensions = fields.get("dimensions")
    if isinstance(dimensions, list):
        fields["dimensions"] = [
            {**d, "score": None} if isinstance(d, Mapping) and _is_nan(d.get("score")) else d for d in dimensions
        ]


def _unsupported(version: object, source: Path | str) -> RecordError:
    return RecordError(
        f"{source}: schema_version {version!r} is not supported (this harness reads {SCHEMA_VERSION}); "
        "re-run the trial or use the comet-eval release that wrote it"
    )


def _loose_json(data: bytes, source: Path | str) -> Any:
    """Plain data of a record file msgspec refused: the json module also reads NaN and Infinity."""
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RecordError(f"{source}: cannot be read as a trial record: {exc}") from None


def _read_bytes(path: str | Path) -> bytes:
    """The whole file, with one open, one fstat and (almost always) one read.

    Cheaper than ``open(path, "rb").read()`` by about 4 µs a file, which is 0.4 s at 100,000 records.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        data = os.read(fd, size + 1)
        if len(data) <= size:
            return data
        chunks = [data]  # the file grew since fstat
        while more := os.read(fd, 1 << 16):
            chunks.append(more)
        return b"".join(chunks)
    finally:
        os.close(fd)


def stream_names(folder: str | Path) -> tuple[str, ...]:
    """The agent's raw stream files in a trial folder, sorted; () when the folder is missing."""
    try:
        with os.scandir(folder) as entries:
            return tuple(sorted(e.name for e in entries if e.name.startswith(STREAM_PREFIX) and e.is_file()))
    except FileNotFoundError:
        return ()


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while building large acyclic data (records, reports).

    Reading 100,000 records allocates millions of objects; every few hundred allocations the collector
    walks the growing heap again, which made reading them about three times slower. Nothing built here
    is cyclic, so reference counting frees it all; the collector resumes afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()

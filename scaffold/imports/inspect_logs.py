"""Read Inspect AI eval logs as trials of ours: one record per sample and epoch.

Inspect writes two log formats, both its ``InspectLog`` (``inspect_ai.log``; tests/data/imports/inspect
holds logs written by inspect-ai 0.3.285):

- ``.json``: the log as one JSON document. Read here directly (msgspec structs of the fields used,
  unknown fields ignored), so a ``.json`` log needs nothing installed;
- ``.eval``: a zip of JSON files whose members recent releases compress with zstd, which Python 3.11's
  zipfile cannot open. Read with Inspect's own reader, ``inspect_ai.log.read_eval_log``, from the
  optional extra ``comet-eval[inspect]``: the reader the project keeps in step with its format. Without
  it the error says to install the extra, or to convert the log (``inspect log convert --to json``).

Either way the log becomes the same structs, so the mapping below is one path. What a sample becomes
(docs/imports.md has the table): task ``<task>/<sample id>``; treatment the eval's ``metadata.treatment``,
else its model, solver and the task arguments given, joined by dots (``mockllm_model.skill-True``; ``--as``
names it instead); trial: the epoch;
the first scorer's value as a number (Inspect's C/I/P/N: 1, 0, 0.5, 0) by our pass rule; a sample
error is ``error``, a limit the sample hit (time, tokens, messages) is the agent's own budget spent.

Reads files only (and Inspect's reader, which reads them).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import msgspec

from scaffold.errors import ReportError
from scaffold.imports.common import SourceTrial, duration_between, endpoint_of, error_of, treatment_name
from scaffold.records import AgentInfo, NoiseVerdict
from scaffold.reports.model import UnreadableRecord
from scaffold.trajectory import TokenUsage
from scaffold.util.hashing import hash_json

__all__ = ["LOG_SUFFIXES", "log_files", "read_log"]

LOG_SUFFIXES: Final = (".eval", ".json")
_EXTRA: Final = "pip install 'comet-eval[inspect]'"
# Inspect's letter values (inspect_ai.scorer: CORRECT, INCORRECT, PARTIAL, NOANSWER) and the words its
# value_to_float reads as numbers.
_LETTERS: Final[Mapping[str, float]] = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
_WORDS: Final[Mapping[str, float]] = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}
_ERROR_TYPE: Final = re.compile(r"^([A-Za-z_][\w.]*)\(")


# --- Inspect's EvalLog, the fields read ---------------------------------------------------------------------------


class _Score(msgspec.Struct, frozen=True):
    value: Any = None


class _Usage(msgspec.Struct, frozen=True):
    input_tokens: int = 0
    output_tokens: int = 0
    input_tokens_cache_write: int | None = None
    input_tokens_cache_read: int | None = None
    total_cost: float | None = None


class _Error(msgspec.Struct, frozen=True):
    message: str = ""


class _Limit(msgspec.Struct, frozen=True):
    type: str
    limit: float | None = None


class InspectSample(msgspec.Struct, frozen=True):
    """The fields of Inspect's ``EvalSample`` this importer reads."""

    id: int | str
    epoch: int = 1
    input: Any = ""
    target: Any = ""
    scores: dict[str, _Score] | None = None
    model_usage: dict[str, _Usage] = {}
    started_at: str | None = None
    completed_at: str | None = None
    total_time: float | None = None
    working_time: float | None = None
    error: _Error | None = None
    limit: _Limit | None = None


class _Spec(msgspec.Struct, frozen=True):
    task: str
    model: str
    eval_id: str = ""
    run_id: str = ""
    task_args_passed: dict[str, Any] = {}
    solver: str | None = None
    sandbox: Any = None
    metadata: dict[str, Any] | None = None
    packages: dict[str, str] = {}


class InspectLog(msgspec.Struct, frozen=True):
    """The fields of Inspect's ``EvalLog`` this importer reads."""

    eval: _Spec
    status: str = ""
    samples: list[InspectSample] | None = None


_DECODER: Final = msgspec.json.Decoder(InspectLog)


# --- finding and reading logs --------------------------------------------------------------------------------


def log_files(path: Path) -> list[Path]:
    """The Inspect logs *path* stands for: the file itself, or every log in the folder and below it
    (``inspect eval --log-dir``), sorted. A ``.json`` file counts only when it is an eval log."""
    if path.is_file():
        return [path] if _is_log(path) else []
    if not path.is_dir():
        return []
    return [p for p in sorted(path.rglob("*")) if p.is_file() and _is_log(p)]


def _is_log(path: Path) -> bool:
    if path.suffix == ".eval":
        return True
    if path.suffix != ".json" or path.name.startswith("."):
        return False
    try:
        with path.open("rb") as file:
            head = file.read(4096)
    except OSError:
        return False
    # An eval log's JSON opens with its version and status, then "eval" (inspect_ai.log.InspectLog's order).
    return head.lstrip().startswith(b"{") and b'"eval"' in head and b'"status"' in head


def read_log(path: Path, *, treatment: str | None = None) -> tuple[list[SourceTrial], list[UnreadableRecord]]:
    """Every sample and epoch of the log at *path*; the log as a problem when it cannot be read."""
    try:
        log = load_log(path)
    except (OSError, msgspec.DecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else f"not an Inspect eval log: {exc}"
        return [], [UnreadableRecord(os.fspath(path), None, reason or str(exc))]
    return [_trial(path, log, sample, treatment) for sample in log.samples or ()], []


def load_log(path: Path) -> InspectLog:
    """The log at *path* as our structs (``.json`` directly, ``.eval`` through Inspect's reader)."""
    if path.suffix == ".json":
        return _DECODER.decode(path.read_bytes())
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise ReportError(
            f"{path}: reading Inspect's .eval logs needs Inspect's own reader: {_EXTRA}; or convert the "
            f"log to JSON first (inspect log convert --to json --output-dir DIR {path})"
        ) from None
    return _DECODER.decode(read_eval_log(os.fspath(path)).model_dump_json())


# --- one sample ----------------------------------------------------------------------------------------------


def _trial(path: Path, log: InspectLog, sample: InspectSample, treatment: str | None) -> SourceTrial:
    spec = log.eval
    task = f"{spec.task}/{sample.id}"
    score, scorer = _score(sample)
    backend = _sandbox(spec.sandbox)
    experiment = spec.eval_id or spec.run_id or path.stem
    config = {
        "source": "inspect",
        "log": experiment,
        "model": spec.model,
        "solver": spec.solver,
        "task_args": dict(spec.task_args_passed),
        "sandbox": backend,
        # The sample as the dataset gave it: two logs of one task must have asked the same.
        "task": {"name": task, "content_hash": hash_json([sample.input, sample.target])},
    }
    errors = (error_of(_error_type(sample.error.message), sample.error.message),) if sample.error else ()
    noise = None
    if sample.limit is not None:
        # A limit is the agent's budget (time, tokens, messages) spent: a result of its own, as our runs
        # count an agent that used up its time.
        evidence = {"limit": {"type": sample.limit.type, "value": sample.limit.limit}, "source": "inspect limit"}
        noise = NoiseVerdict("included", "agent_exceeded_task_budget", "structured", evidence)
    return SourceTrial(
        experiment_id=experiment,
        case_id=f"{sample.id}-e{sample.epoch}",
        task=task,
        treatment=treatment if treatment is not None else _treatment(spec),
        config=config,
        score=score if not errors else None,
        check=scorer or "scorer",
        score_source=f"scorer {scorer}" if scorer else "no score",
        agent=AgentInfo(
            name="inspect_ai",
            model=spec.model,
            version=spec.packages.get("inspect_ai"),
            endpoint=endpoint_of(None, spec.model),
        ),
        backend=backend,
        started_at=sample.started_at or "",
        finished_at=sample.completed_at or "",
        duration_s=sample.total_time
        if sample.total_time is not None
        else duration_between(sample.started_at, sample.completed_at),
        phases={"agent_s": sample.working_time} if sample.working_time is not None else {},
        tokens=_tokens(sample),
        cost_usd=_cost(sample),
        errors=errors,
        noise=noise,
        trial=sample.epoch,
    )


def _treatment(spec: _Spec) -> str:
    """The eval's own label (``metadata.treatment``), else what set it apart: model, solver, arguments."""
    label = (spec.metadata or {}).get("treatment")
    if isinstance(label, str) and label:
        return treatment_name(label)
    arguments = (f"{k}-{v}" for k, v in sorted(spec.task_args_passed.items()))
    return treatment_name(spec.model, spec.solver or "", *arguments)


def _score(sample: InspectSample) -> tuple[float | None, str | None]:
    """The first scorer's value as a number (Inspect's value_to_float rules), and the scorer's name."""
    for name, score in (sample.scores or {}).items():
        return _number(score.value), name
    return None, None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if text in _LETTERS:
            return _LETTERS[text]
        if text.lower() in _WORDS:
            return _WORDS[text.lower()]
        try:
            return float(text)
        except ValueError:
            return None
    return None  # a list or a dict of values: no one number to judge by


def _error_type(message: str) -> str:
    """The exception's type Inspect's message starts with (``KeyError('command')``), else ``EvalError``."""
    found = _ERROR_TYPE.match(message.strip())
    return found.group(1).rsplit(".", 1)[-1] if found else "EvalError"


def _sandbox(value: Any) -> str:
    """The sandbox type (``local``, ``docker``): a {type, config} object, or an older [type, config] pair."""
    if isinstance(value, Mapping):
        return str(value.get("type") or "")
    if isinstance(value, list | tuple) and value:
        return str(value[0])
    return str(value) if isinstance(value, str) else ""


def _usages(sample: InspectSample) -> Iterator[_Usage]:
    return iter(sample.model_usage.values())


def _tokens(sample: InspectSample) -> TokenUsage | None:
    usages = list(_usages(sample))
    if not usages:
        return None
    return TokenUsage(
        input=sum(u.input_tokens for u in usages),
        output=sum(u.output_tokens for u in usages),
        cache_read=sum(u.input_tokens_cache_read or 0 for u in usages),
        cache_write=sum(u.input_tokens_cache_write or 0 for u in usages),
    )


def _cost(sample: InspectSample) -> float | None:
    costs = [u.total_cost for u in _usages(sample) if u.total_cost is not None]
    return sum(costs) if costs else None

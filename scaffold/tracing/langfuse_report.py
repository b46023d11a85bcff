"""I/O. Reports trials and experiments to Langfuse with its official SDK (langfuse 5.x: spans as OTLP to
``/api/public/otel/v1/traces``, scores to ``/api/public/scores``, the key check ``GET /api/public/projects``).

One trace per trial: a span ``comet.eval.run`` (input: scaffold.tracing.case_inputs and the task's
reference outputs; output: trial_outputs), with the agent's trajectory as child spans
``agent.<kind>/<name>/<index>``, and the trial's scores ``comet.<key>`` (scaffold.tracing.feedback) on
that trace and span. Per experiment: a span ``comet.eval.experiment`` (scaffold.tracing.summary) with
scores ``comet.pass_at_k``, ``comet.pass_power_k`` and ``comet.quality_gate``.

The SDK sends in background threads and only logs what fails; the reporter listens to those logs, and
flushes after each trial, so a failure is attributed to the trial (or summary) whose data it lost. It
never raises for a failed upload: the trial and its local reports are the result, the upload a copy.

Credentials come from the mapping given (the process environment over ``~/.comet/eval/.env``) and go to
the SDK alone: no record, report, log line or tracing.json holds them, and no agent is handed them
(scaffold.agents.credentials passes an agent only the names its adapter declares).
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit, urlunsplit

from scaffold.agents.credentials import Redactor
from scaffold.catalog.tasks import Task
from scaffold.errors import RecordError, TracingError
from scaffold.experiment import Experiment
from scaffold.records import TrialRecord
from scaffold.records.files import read_record
from scaffold.reports.gates import GateResult
from scaffold.tracing import case_inputs, feedback, reference_outputs, trajectory_observations, trial_outputs
from scaffold.tracing.summary import ExperimentSummary, experiment_summary
from scaffold.util.atomic import write_json_atomic
from scaffold.util.hashing import hash_tree

if TYPE_CHECKING:
    from langfuse import Langfuse

__all__ = [
    "INSTALL_HINT",
    "PUBLIC_KEY",
    "RUN_SPAN",
    "SECRET_KEY",
    "SUITE",
    "SUMMARY_SPAN",
    "TRACING_FILE",
    "LangfuseReporter",
    "LangfuseReupload",
    "LangfuseSettings",
    "TrialUpload",
    "connect",
    "matching_task",
    "read_status",
    "read_summary",
    "reupload",
    "settings_from",
    "write_status",
]

SUITE: Final = "langfuse"
PUBLIC_KEY: Final = "LANGFUSE_PUBLIC_KEY"
SECRET_KEY: Final = "LANGFUSE_SECRET_KEY"
BASE_URL: Final = "LANGFUSE_BASE_URL"
ENVIRONMENT: Final = "LANGFUSE_TRACING_ENVIRONMENT"
INSTALL_HINT: Final = "pip install 'comet-eval[langfuse]'"
RUN_SPAN: Final = "comet.eval.run"
SUMMARY_SPAN: Final = "comet.eval.experiment"
SCORE_PREFIX: Final = "comet."
TRACING_FILE: Final = "tracing.json"
"""In the experiment folder: what reached the service, and what failed (never a credential)."""
QUALITY_FILE: Final = "quality-gates.json"  # scaffold.skill_eval.quality's, without the manifest's imports
_SDK_LOGGERS: Final = ("langfuse", "opentelemetry.exporter", "opentelemetry.sdk")
"""Where the SDK and its OTLP exporter say that a background upload failed."""


@dataclass(frozen=True, slots=True)
class LangfuseSettings:
    public_key: str = field(repr=False)
    secret_key: str = field(repr=False)
    base_url: str | None = None
    environment: str | None = None

    @property
    def shown_url(self) -> str:
        """The base URL to print and write: without any user:password part."""
        url = self.base_url or "https://cloud.langfuse.com"
        parts = urlsplit(url)
        host = parts.hostname or ""
        netloc = host + (f":{parts.port}" if parts.port else "")
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))

    def redactor(self) -> Redactor:
        return Redactor([self.public_key, self.secret_key])


def settings_from(env: Mapping[str, str]) -> LangfuseSettings:
    """The settings from *env*; TracingError naming the variables when a key is missing."""
    missing = [name for name in (PUBLIC_KEY, SECRET_KEY) if not env.get(name)]
    if missing:
        raise TracingError(
            f"the Langfuse suite needs {' and '.join(missing)}: set {'it' if len(missing) == 1 else 'them'} in "
            "the process environment or in ~/.comet/eval/.env (comet-eval never writes the keys anywhere)"
        )
    return LangfuseSettings(
        public_key=env[PUBLIC_KEY],
        secret_key=env[SECRET_KEY],
        base_url=env.get(BASE_URL) or None,
        environment=env.get(ENVIRONMENT) or None,
    )


def connect(settings: LangfuseSettings, *, check: bool = True) -> LangfuseReporter:
    """A reporter with a Langfuse client; with *check*, the keys checked first (``auth_check``).

    TracingError when the SDK is not installed or the keys are refused (the message without them)."""
    Langfuse = _sdk().Langfuse
    redact = settings.redactor()
    client = Langfuse(
        public_key=settings.public_key,
        secret_key=settings.secret_key,
        base_url=settings.base_url,
        environment=settings.environment,
    )
    if check:
        try:
            ok = client.auth_check()
        except Exception as exc:  # the SDK raises its HTTP errors and transport errors alike
            client.shutdown()
            raise TracingError(
                f"Langfuse authentication failed at {settings.shown_url}: {redact.text(_described(exc))[:500]}"
            ) from None
        if not ok:
            client.shutdown()
            raise TracingError(f"Langfuse authentication check failed at {settings.shown_url}")
    return LangfuseReporter(client, settings)


def _described(exc: Exception) -> str:
    """An SDK error in one line: the HTTP status and body of an API error (not its response headers)."""
    status = getattr(exc, "status_code", None)
    if status is not None:
        return f"HTTP {status}: {getattr(exc, 'body', '')}"
    return f"{type(exc).__name__}: {exc}"


def _sdk() -> Any:
    """The SDK's top module; TracingError naming the extra when it is not installed."""
    module = sys.modules.get("langfuse")
    if module is not None and getattr(module, "__file__", None) is None:
        # Not the SDK: pytest's importlib import mode imports the suite folder langfuse/ (no __init__.py)
        # as a namespace module "langfuse", the parent of "langfuse.conftest". Dropped, the SDK imports;
        # the suite's own modules stay loaded under their names.
        del sys.modules["langfuse"]
    try:
        import langfuse
    except ImportError:
        raise TracingError(f"the Langfuse suite needs the Langfuse SDK: {INSTALL_HINT}") from None
    if not hasattr(langfuse, "Langfuse"):
        raise TracingError(f"the Langfuse suite needs the Langfuse SDK (found {langfuse!r}): {INSTALL_HINT}")
    return langfuse


@dataclass(frozen=True, slots=True)
class TrialUpload:
    """What one trial's upload did: its trace (empty when nothing was started) and what failed."""

    case_id: str
    trace_id: str
    scores: int
    error: str = ""


class _FailureLog(logging.Handler):
    """Keeps the SDK's error messages (background uploads that failed), credentials removed."""

    def __init__(self, redact: Redactor) -> None:
        super().__init__(logging.ERROR)
        self._redact = redact
        self._lock_messages = threading.Lock()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a malformed log call of the SDK is still a failure
            message = str(record.msg)
        with self._lock_messages:
            self.messages.append(self._redact.text(message)[:500])


class LangfuseReporter:
    """Sends trials and experiment summaries through one Langfuse client."""

    def __init__(self, client: Langfuse, settings: LangfuseSettings) -> None:
        self.client = client
        self.settings = settings
        self._redact = settings.redactor()
        self._failures = _FailureLog(self._redact)
        for name in _SDK_LOGGERS:
            logging.getLogger(name).addHandler(self._failures)

    @contextmanager
    def _watch(self) -> Iterator[list[str]]:
        """The SDK's failures while the block runs and its data is flushed, and any exception raised."""
        start = len(self._failures.messages)
        found: list[str] = []
        try:
            yield found
        except Exception as exc:
            found.append(self._redact.text(f"{type(exc).__name__}: {exc}")[:500])
        try:
            self.client.flush()
        except Exception as exc:
            found.append(self._redact.text(f"flush: {type(exc).__name__}: {exc}")[:500])
        found[:0] = self._failures.messages[start:]

    def report_trial(self, record: TrialRecord, task: Task | None = None) -> TrialUpload:
        """One trace for *record*: the run span, its trajectory children, its scores; then a flush."""
        trace_id, sent = "", 0
        with self._watch() as failures:
            inputs = {**case_inputs(record, task), **({"reference": reference_outputs(task)} if task else {})}
            metadata = {"case_id": record.case_id, "experiment_id": record.experiment_id, "suite": SUITE}
            root = self.client.start_observation(as_type="span", name=RUN_SPAN, input=inputs, metadata=metadata)
            trace_id, span_id = root.trace_id, root.id
            try:
                for step in trajectory_observations(record.trajectory):
                    child = root.start_observation(
                        as_type="span", name=f"agent.{step.kind}/{step.name}/{step.index}", input=step.input
                    )
                    if step.output is not None:
                        child.update(output=step.output)
                    child.end()
                root.update(output=trial_outputs(record))
            finally:
                root.end()
            for score in feedback(record):
                self.client.create_score(
                    name=SCORE_PREFIX + score.key,
                    value=score.value,
                    trace_id=trace_id,
                    observation_id=span_id,
                    data_type="BOOLEAN" if score.boolean else "NUMERIC",
                    comment=score.comment or None,
                )
                sent += 1
        return TrialUpload(record.case_id, trace_id, sent, "; ".join(failures))

    def report_summary(self, summary: ExperimentSummary) -> tuple[str, str]:
        """The experiment span and its scores, then a flush: (trace id, what failed or "")."""
        trace_id = ""
        with self._watch() as failures:
            span = self.client.start_observation(
                as_type="span",
                name=SUMMARY_SPAN,
                input=summary.inputs(SUITE),
                metadata={"experiment_id": summary.experiment_id, "suite": SUITE},
            )
            trace_id, span_id = span.trace_id, span.id
            span.update(output=summary.outputs())
            span.end()
            for name, value, boolean, metadata in _summary_scores(summary):
                self.client.create_score(
                    name=name,
                    value=value,
                    trace_id=trace_id,
                    observation_id=span_id,
                    data_type="BOOLEAN" if boolean else "NUMERIC",
                    metadata=metadata,
                )
        return trace_id, "; ".join(failures)

    def close(self) -> None:
        """Flush what is left and stop the SDK's threads; the failure log detached."""
        try:
            self.client.shutdown()
        finally:
            for name in _SDK_LOGGERS:
                logging.getLogger(name).removeHandler(self._failures)


def _summary_scores(summary: ExperimentSummary) -> Iterator[tuple[str, float, bool, dict[str, Any]]]:
    for aggregate in summary.aggregates:
        base = {
            "experiment_id": summary.experiment_id,
            "agent": aggregate.agent,
            "task": aggregate.task,
            "treatment": aggregate.treatment,
        }
        for k, value in aggregate.pass_at_k.items():
            yield SCORE_PREFIX + "pass_at_k", value, False, {**base, "k": k}
        for k, value in aggregate.pass_power_k.items():
            yield SCORE_PREFIX + "pass_power_k", value, False, {**base, "k": k}
    for result in summary.gates:
        meta = {"experiment_id": summary.experiment_id, "gate": result.gate.expression, "message": result.message}
        yield SCORE_PREFIX + "quality_gate", 1.0 if result.passed else 0.0, True, meta
    if summary.quality_gates is not None:
        meta = {"experiment_id": summary.experiment_id, "gate": "eval.yaml qualityGates"}
        yield SCORE_PREFIX + "quality_gate", 1.0 if summary.quality_gates else 0.0, True, meta


def matching_task(record: TrialRecord, tasks: Mapping[str, Task]) -> Task | None:
    """The task of *tasks* that *record* ran: same name and same content hash (else None: a re-upload
    never describes a trial with a task that has changed since)."""
    task = tasks.get(record.task)
    if task is None:
        return None
    recorded = record.config.get("task", {})
    wanted = recorded.get("content_hash") if isinstance(recorded, Mapping) else None
    if wanted and hash_tree(task.root) != wanted:
        return None
    return task


def read_status(folder: Path) -> dict[str, TrialUpload]:
    """The trials an earlier tracing.json in *folder* lists as sent without error, by case id (empty when
    there is none or it cannot be read)."""
    try:
        data = json.loads((folder / TRACING_FILE).read_text(encoding="utf-8"))
        trials = data["trials"]
        return {
            t["case_id"]: TrialUpload(t["case_id"], t["trace_id"], int(t["scores"]))
            for t in trials
            if not t.get("error") and t.get("trace_id")
        }
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def write_status(
    folder: Path,
    settings: LangfuseSettings,
    uploads: Sequence[TrialUpload],
    summary: tuple[str, str] | None,
    problems: Iterable[str] = (),
) -> Path:
    """``tracing.json`` in the experiment folder: the service, each trial's trace id and failure, the
    summary's, and the status (``ok`` or ``failed``). Nothing secret: ids, counts, redacted messages."""
    redact = settings.redactor()
    failed = [u for u in uploads if u.error]
    extra = [redact.text(p) for p in problems]
    summary_error = summary[1] if summary else "not sent"
    ok = not failed and not extra and not summary_error
    data = {
        "suite": SUITE,
        "base_url": settings.shown_url,
        "environment": settings.environment,
        "status": "ok" if ok else "failed",
        "trials": [
            {"case_id": u.case_id, "trace_id": u.trace_id, "scores": u.scores, "error": redact.text(u.error)}
            for u in sorted(uploads, key=lambda u: u.case_id)
        ],
        "summary": {"trace_id": summary[0] if summary else "", "error": redact.text(summary_error)},
        "problems": extra,
    }
    return write_json_atomic(folder / TRACING_FILE, json.loads(json.dumps(data)))


def read_summary(experiment_id: str, folder: Path, gates: Sequence[GateResult] = ()) -> ExperimentSummary:
    """The experiment summary from the records under *folder* (unreadable ones left out, as the reports
    leave them out), the gate results, and the eval.yaml quality gates' answer from quality-gates.json."""
    records = []
    for path in Experiment(experiment_id, folder).record_paths():
        try:
            records.append(read_record(path))
        except (RecordError, OSError):
            continue
    quality: bool | None = None
    quality_file = folder / QUALITY_FILE
    if quality_file.is_file():
        try:
            quality = bool(json.loads(quality_file.read_text(encoding="utf-8")).get("passed"))
        except (OSError, ValueError, AttributeError):
            quality = False  # a quality gate file that cannot be read vouches for nothing
    return experiment_summary(experiment_id, records, gates, quality)


@dataclass(frozen=True, slots=True)
class LangfuseReupload:
    """What ``comet report --suite langfuse`` sent of one experiment folder."""

    folder: Path
    uploads: tuple[TrialUpload, ...]
    summary: tuple[str, str]
    status_file: Path

    @property
    def failed(self) -> bool:
        return bool(self.summary[1]) or any(u.error for u in self.uploads)


def reupload(
    folder: Path, settings: LangfuseSettings, gates: Sequence[GateResult] = (), reporter: LangfuseReporter | None = None
) -> LangfuseReupload:
    """Send an existing experiment again from its records: each trial's trace and scores (described with
    its task when the task is found unchanged: the experiment's own ``tasks/``, else the built-in ones),
    the summary, then tracing.json rewritten. TracingError when the keys are refused (nothing sent)."""
    from scaffold.catalog.builtin import BUILTIN_TASKS_DIR
    from scaffold.catalog.tasks import load_catalog

    experiment = Experiment(folder.name, folder.absolute())
    records: list[TrialRecord] = []
    problems: list[str] = []
    for path in experiment.record_paths():
        try:
            records.append(read_record(path))
        except (RecordError, OSError) as exc:
            problems.append(f"unreadable record {path}: {exc}")
    tasks: dict[str, Task] = {}
    for tasks_dir in (BUILTIN_TASKS_DIR, folder / "tasks"):
        if tasks_dir.is_dir():
            tasks.update(load_catalog([tasks_dir]).tasks)
    experiment_id = records[0].experiment_id if records else folder.name
    own = reporter is None
    reporter = reporter or connect(settings, check=True)
    try:
        uploads = tuple(reporter.report_trial(r, matching_task(r, tasks)) for r in records)
        summary = reporter.report_summary(read_summary(experiment_id, experiment.root, gates))
    finally:
        if own:
            reporter.close()
    status = write_status(folder, settings, uploads, summary, problems)
    return LangfuseReupload(folder, uploads, summary, status)

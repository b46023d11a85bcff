"""I/O (the LangSmith SDK's Client: HTTP to the service, its threads). What the LangSmith suite and
``comet report --suite langsmith DIR`` share: our Client, which notes every call that failed for good,
the example id of a case, and the re-upload of an existing experiment from its records.

The SDK swallows most failures (background threads, executors) or words them with part of the API key:
:class:`Failures` keeps our own description, then the exception's class and message with the key (and the
SDK's masked form of it) taken out (``"POST /datasets: server error (5xx): LangSmithAPIError: ..."``).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from threading import Lock
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit, urlunsplit

from scaffold.agents.credentials import REDACTED, Redactor
from scaffold.tracing import feedback, reference_outputs, trial_outputs

if TYPE_CHECKING:
    from langsmith import Client

    from scaffold.catalog.tasks import Task
    from scaffold.records import TrialRecord

__all__ = [
    "API_KEY",
    "DEFAULT_TEST_SUITE",
    "Failures",
    "Reupload",
    "example_id",
    "make_client",
    "reupload",
    "shown_url",
]

API_KEY: Final = "LANGSMITH_API_KEY"
DEFAULT_TEST_SUITE: Final = "comet-skill-eval"
SPLIT: Final = "base"
"""Every example's dataset split: LangSmith's default one, named so the plugin's re-sync compares alike."""
_EXAMPLE_NAMESPACE: Final = uuid.UUID("5a0c7e2e-3c1b-4f0e-9a51-8e7f2b6c4d10")
_EXPECTED: Final = ("LangSmithNotFoundError", "LangSmithConflictError")
"""The plugin reads an example before creating it (404) and tolerates another worker's copy (409)."""
_INGEST_PATHS: Final = ("/runs", "/runs/multipart", "/runs/batch")
"""Run ingestion: retried by the SDK, its final failures reach ``tracing_error_callback``."""
_KINDS: Final[Mapping[str, str]] = {
    "LangSmithAPIError": "server error (5xx)",
    "LangSmithAuthError": "authentication failed (401)",
    "LangSmithRateLimitError": "rate limited (429)",
    "LangSmithRequestTimeout": "timed out (408)",
    "LangSmithConnectionError": "connection failed or timed out",
    "ReadTimeout": "timed out",
    "ConnectTimeout": "timed out",
    "ConnectionError": "connection failed",
}


_MASKED_KEY: Final = re.compile(r"API Key: \S*|\w{0,5}\*{4,}\w{0,2}")
"""The SDK's connection errors end with ``API Key: lsv2_****...ey``: the key's first 5 and last 2
characters, which no output may show."""
MESSAGE_CHARS: Final = 500
"""Characters of an exception's description kept (the SDK puts whole response bodies in its messages)."""


def _described(exc: BaseException, redactor: Redactor) -> str:
    """``LangSmithError: <message>``: the exception's class and message on one line, the API key and its
    masked form replaced, cut at ``MESSAGE_CHARS``."""
    message = _MASKED_KEY.sub(REDACTED, redactor.text(str(exc)))
    text = " ".join(f"{type(exc).__name__}: {message}".split())
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 1] + "…"


@dataclass
class Failures:
    """Failures noted from any SDK thread, each as our own words (what failed, the kind of failure),
    then the exception's class and message without *redactor*'s secrets: the class alone (a bare
    ``LangSmithError``) does not say what went wrong."""

    items: list[str] = field(default_factory=list)
    lock: Lock = field(default_factory=Lock)
    redactor: Redactor = field(default_factory=lambda: Redactor(()))

    def add(self, method: str, path: str, exc: BaseException) -> None:
        kind = _KINDS.get(type(exc).__name__)
        with self.lock:
            self.items.append(f"{method} {path}: {kind + ': ' if kind else ''}{_described(exc, self.redactor)}")


def make_client(endpoint: str, api_key: str, failures: Failures) -> Client:
    """A Client with the key passed in (never through os.environ) that notes every final failure."""
    from langsmith import Client

    class _NotingClient(Client):
        def request_with_retries(self, /, method: Any, pathname: str, **kwargs: Any) -> Any:
            try:
                return super().request_with_retries(method, pathname, **kwargs)
            except Exception as exc:
                path = urlsplit(pathname).path
                if type(exc).__name__ not in _EXPECTED and not (method == "POST" and path.endswith(_INGEST_PATHS)):
                    failures.add(str(method), path, exc)
                raise

    return _NotingClient(
        api_url=endpoint or None,
        api_key=api_key,
        tracing_error_callback=lambda exc: failures.add("POST", "/runs (trace ingestion)", exc),
    )


def example_id(test_suite: str, task: str, treatment: str) -> uuid.UUID:
    """The example of a case: the same for every trial of the task and treatment, in every session."""
    return uuid.uuid5(_EXAMPLE_NAMESPACE, f"{test_suite}\n{task}\n{treatment}")


def shown_url(url: str) -> str:
    """*url* without user, password, query or fragment (what a summary line or tracing.json may show)."""
    if not url:
        return ""
    parts = urlsplit(url)
    netloc = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def case_inputs(record: TrialRecord, task: Task | None) -> dict[str, Any]:
    """The example's inputs: the case, never the trial (repetitions share the example)."""
    difficulty = task.spec.metadata.difficulty if task is not None else None
    return {"task": record.task, "treatment": record.treatment, "difficulty": difficulty}


def run_outputs(record: TrialRecord) -> dict[str, Any]:
    return {**trial_outputs(record), "trial": record.trial, "experiment_id": record.experiment_id}


@dataclass(frozen=True, slots=True)
class Reupload:
    folder: Path
    experiment: str
    trials: int
    failures: tuple[str, ...]


def reupload(folder: Path, env: Mapping[str, str]) -> Reupload:
    """Send an existing experiment again from its records, as the suite would have: the suite's dataset,
    each case's example (the same ids), a new experiment ``<experiment id>:reupload-<8 hex>`` with one run
    per trial and its feedback (``pass`` included). Failures are returned, never raised."""
    from scaffold.catalog.builtin import BUILTIN_TASKS_DIR
    from scaffold.catalog.tasks import load_catalog
    from scaffold.errors import RecordError
    from scaffold.experiment import Experiment
    from scaffold.records.files import read_record
    from scaffold.tracing.langfuse_report import matching_task

    failures = Failures(redactor=Redactor([env.get(API_KEY, "")]))
    experiment = Experiment(folder.name, folder.absolute())
    records = []
    for path in experiment.record_paths():
        try:
            records.append(read_record(path))
        except (RecordError, OSError):
            failures.items.append(f"record {path.name}: unreadable, not sent")
    tasks: dict[str, Task] = {}
    for tasks_dir in (BUILTIN_TASKS_DIR, folder / "tasks"):
        if tasks_dir.is_dir():
            tasks.update(load_catalog([tasks_dir]).tasks)
    endpoint = env.get("LANGSMITH_ENDPOINT") or env.get("LANGCHAIN_ENDPOINT") or ""
    client = make_client(endpoint, env.get(API_KEY, ""), failures)
    suite = env.get("LANGSMITH_TEST_SUITE") or DEFAULT_TEST_SUITE
    experiment_id = records[0].experiment_id if records else folder.name
    name = f"{experiment_id}:reupload-{uuid.uuid4().hex[:8]}"
    sent = 0
    try:
        if client.has_dataset(dataset_name=suite):
            dataset = client.read_dataset(dataset_name=suite)
        else:
            dataset = client.create_dataset(suite, description="Test suite", metadata={"__ls_runner": "pytest"})
        project = client.create_project(
            name,
            reference_dataset_id=dataset.id,
            description="Test Suite Results.",
            metadata={"suite": "comet-eval-langsmith", "comet_experiment_id": experiment_id, "reupload": True},
        )
    except Exception as exc:
        failures.add("setup", "dataset and experiment (nothing sent)", exc)
        return Reupload(folder, name, 0, tuple(failures.items))
    known: set[uuid.UUID] = set()
    for record in records:
        try:
            _send_trial(client, suite, dataset.id, project, record, matching_task(record, tasks), known)
        except Exception as exc:
            failures.add("trial", record.case_id, exc)
            continue
        sent += 1
    try:
        client.flush()
    except Exception as exc:
        failures.add("flush", "trace queue", exc)
    return Reupload(folder, str(project.name), sent, tuple(failures.items))


def _send_trial(
    client: Any,
    suite: str,
    dataset_id: Any,
    project: Any,
    record: TrialRecord,
    task: Task | None,
    known: set[uuid.UUID],
) -> None:
    """One trial as the suite sends it: its case's example (created when missing; *known*: the examples
    this upload has seen already), a run, its feedback."""
    from langsmith import RunTree

    inputs = case_inputs(record, task)
    example = example_id(suite, record.task, record.treatment)
    try:
        if example not in known:
            client.read_example(example)
    except Exception as exc:
        if type(exc).__name__ != "LangSmithNotFoundError":
            raise
        client.create_example(
            example_id=example,
            inputs=inputs,
            outputs=reference_outputs(task) if task is not None else None,
            dataset_id=dataset_id,
            split=SPLIT,
        )
    known.add(example)
    end = datetime.now(UTC)
    run = RunTree(
        name="test_task",
        run_type="chain",
        inputs=inputs,
        project_name=project.name,
        reference_example_id=example,
        start_time=end - timedelta(seconds=record.duration_s or 0.0),
        ls_client=client,
    )
    run.end(outputs=run_outputs(record), end_time=end)
    run.post()
    passed = record.verdict == "passed"
    client.create_feedback(run.id, key="pass", score=int(passed), trace_id=run.id, session_id=project.id)
    for score in feedback(record):
        if score.key != "passed":  # "pass" above, as the pytest plugin names it
            client.create_feedback(
                run.id,
                key=score.key,
                score=score.value,
                comment=score.comment or None,
                trace_id=run.id,
                session_id=project.id,
            )

"""LangSmith's REST API as the langsmith SDK (0.15) and its pytest plugin call it, recorded in memory.

Answers carry every field the SDK's pydantic models require (Dataset, TracerSession, Example,
Feedback), so the SDK logs no validation errors. Conflicts are real: creating a dataset, session or
example that exists answers 409, which the pytest plugin under xdist relies on (another worker won the
race; it reads the existing one instead).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from scaffold.traceserver.bodies import BodyError, Handled, json_body, not_found, now_iso
from scaffold.traceserver.multipart import MultipartError, Part, boundary_of, parse_multipart

__all__ = ["LangSmithState"]

_RUN_FIELDS = ("inputs", "outputs", "events", "extra", "error", "serialized")


def _merge(into: dict[str, Any], update: Mapping[str, Any]) -> None:
    """Fields of *update* over *into*: None never erases a value, ``extra.metadata`` is merged."""
    for key, value in update.items():
        if value is None and key in into:
            continue
        if key == "extra" and isinstance(value, Mapping) and isinstance(into.get("extra"), Mapping):
            extra = dict(into["extra"])
            for k, v in value.items():
                if k == "metadata" and isinstance(v, Mapping) and isinstance(extra.get("metadata"), Mapping):
                    extra["metadata"] = {**extra["metadata"], **v}
                else:
                    extra[k] = v
            into["extra"] = extra
        else:
            into[key] = value


def _first(query: Mapping[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    return values[0] if values else None


def _limited(items: list[dict[str, Any]], query: Mapping[str, list[str]]) -> list[dict[str, Any]]:
    offset = int(_first(query, "offset") or 0)
    limit = _first(query, "limit")
    return items[offset : offset + int(limit)] if limit else items[offset:]


def _part_value(part: Part) -> Any:
    """A part's JSON (None for attachments, which are kept as their size only)."""
    if part.name.startswith("attachment.") or not part.data.strip():
        return None
    try:
        return json.loads(part.data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BodyError(400, f"part {part.name!r} is not JSON: {exc}") from exc


class LangSmithState:
    """Datasets, sessions (experiments), examples, runs and feedback as the SDK sent them."""

    def __init__(self, *, multipart: bool = True, zstd: bool = False) -> None:
        self.multipart = multipart
        self.zstd = zstd
        self.tenant_id = str(uuid.uuid4())
        self.datasets: dict[str, dict[str, Any]] = {}
        self.sessions: dict[str, dict[str, Any]] = {}
        self.examples: dict[str, dict[str, Any]] = {}
        self.runs: dict[str, dict[str, Any]] = {}
        self.feedback: dict[str, dict[str, Any]] = {}

    # --- the view ----------------------------------------------------------------------------------

    def decoded(self) -> dict[str, Any]:
        by_name = {s["name"]: s["id"] for s in self.sessions.values()}
        runs = []
        for run in self.runs.values():
            run = dict(run)
            if run.get("session_id") is None and run.get("session_name") in by_name:
                run["session_id"] = by_name[run["session_name"]]
            runs.append(run)
        return {
            "datasets": [dict(d) for d in self.datasets.values()],
            "sessions": [dict(s) for s in self.sessions.values()],
            "examples": [dict(e) for e in self.examples.values()],
            "runs": runs,
            "feedback": [dict(f) for f in self.feedback.values()],
        }

    # --- requests ----------------------------------------------------------------------------------

    def handle(self, method: str, path: str, query: Mapping[str, list[str]], content_type: str, data: bytes) -> Handled:
        """Answer one request (its body already inflated)."""
        segments = path.removeprefix("/api/v1").strip("/").split("/")
        head, rest = segments[0], segments[1:]
        if head == "runs" and rest == ["multipart"] and method == "POST":
            return self._multipart(content_type, data)
        body = json_body(data)
        summary = body
        if head == "info" and method == "GET":
            return Handled(200, self.info(), summary)
        handler = {
            "datasets": self._datasets,
            "sessions": self._sessions,
            "examples": self._examples,
            "runs": self._runs,
            "feedback": self._feedback,
        }.get(head)
        if handler is None:
            return not_found(f"no route for {method} {path}")
        handled = handler(method, rest, query, body)
        handled.summary = summary
        return handled

    def info(self) -> dict[str, Any]:
        return {
            "version": "0.0.0-comet-trace-server",
            "license_expiration_time": None,
            "batch_ingest_config": {
                "use_multipart_endpoint": self.multipart,
                "scale_up_qsize_trigger": 1000,
                "scale_up_nthreads_limit": 16,
                "scale_down_nempty_trigger": 4,
                "size_limit": 100,
                "size_limit_bytes": 20_971_520,
            },
            "instance_flags": {"zstd_compression_enabled": self.zstd},
            "tenant_handle": None,
        }

    # datasets

    def _datasets(self, method: str, rest: list[str], query: Mapping[str, list[str]], body: Any) -> Handled:
        if not rest and method == "GET":
            found = list(self.datasets.values())
            if (name := _first(query, "name")) is not None:
                found = [d for d in found if d["name"] == name]
            if (contains := _first(query, "name_contains")) is not None:
                found = [d for d in found if contains.lower() in d["name"].lower()]
            if ids := query.get("id"):
                found = [d for d in found if d["id"] in ids]
            return Handled(200, _limited(found, query))
        if not rest and method == "POST":
            if not isinstance(body, dict) or not body.get("name"):
                return Handled(422, {"detail": "a dataset needs a name"})
            if any(d["name"] == body["name"] for d in self.datasets.values()):
                return Handled(409, {"detail": f"Dataset with name {body['name']!r} already exists"})
            now = now_iso()
            extra = body["extra"] if isinstance(body.get("extra"), dict) else {}
            dataset = {
                "id": str(body.get("id") or uuid.uuid4()),
                "name": body["name"],
                "description": body.get("description"),
                "data_type": body.get("data_type") or "kv",
                "inputs_schema_definition": body.get("inputs_schema_definition"),
                "outputs_schema_definition": body.get("outputs_schema_definition"),
                "transformations": body.get("transformations"),
                "externally_managed": False,
                "metadata": extra.get("metadata"),
                "created_at": now,
                "modified_at": now,
                "tenant_id": self.tenant_id,
                "example_count": 0,
                "session_count": 0,
                "last_session_start_time": None,
            }
            self.datasets[dataset["id"]] = dataset
            return Handled(200, dataset)
        if not rest:
            return Handled(405, {"detail": f"{method} /datasets is not supported"})
        dataset_id = rest[0]
        if dataset_id not in self.datasets:
            return not_found(f"Dataset {dataset_id} not found")
        dataset = self.datasets[dataset_id]
        if len(rest) == 1 and method == "GET":
            return Handled(200, self._counted(dataset))
        if len(rest) == 1 and method == "PATCH" and isinstance(body, dict):
            _merge(dataset, body)
            dataset["modified_at"] = now_iso()
            return Handled(200, dataset)
        if rest[1:] == ["tags"] and method == "PUT":  # update_dataset_tag (git commit / branch)
            dataset.setdefault("tags", []).append(body)
            return Handled(200, {})
        if rest[1:] == ["version"] and method == "GET":
            return Handled(200, {"as_of": dataset["modified_at"], "tags": []})
        return not_found(f"no route for {method} /datasets/{'/'.join(rest)}")

    def _counted(self, dataset: dict[str, Any]) -> dict[str, Any]:
        count = sum(1 for e in self.examples.values() if e.get("dataset_id") == dataset["id"])
        sessions = sum(1 for s in self.sessions.values() if s.get("reference_dataset_id") == dataset["id"])
        return {**dataset, "example_count": count, "session_count": sessions}

    # sessions (projects, experiments)

    def _sessions(self, method: str, rest: list[str], query: Mapping[str, list[str]], body: Any) -> Handled:
        if not rest and method == "GET":
            found = list(self.sessions.values())
            if names := query.get("name"):
                found = [s for s in found if s["name"] in names]
            if ids := query.get("id"):
                found = [s for s in found if s["id"] in ids]
            if (dataset := _first(query, "reference_dataset")) is not None:
                found = [s for s in found if s.get("reference_dataset_id") == dataset]
            return Handled(200, _limited(found, query))
        if not rest and method == "POST":
            if not isinstance(body, dict) or not body.get("name"):
                return Handled(422, {"detail": "a session needs a name"})
            if any(s["name"] == body["name"] for s in self.sessions.values()):
                return Handled(409, {"detail": f"Session with name {body['name']!r} already exists"})
            session = {
                "id": str(body.get("id") or uuid.uuid4()),
                "name": body["name"],
                "description": body.get("description"),
                "start_time": body.get("start_time") or now_iso(),
                "end_time": body.get("end_time"),
                "extra": body.get("extra"),
                "reference_dataset_id": body.get("reference_dataset_id"),
                "tenant_id": self.tenant_id,
            }
            self.sessions[session["id"]] = session
            return Handled(200, session)
        if len(rest) != 1:
            return not_found(f"no route for {method} /sessions/{'/'.join(rest)}")
        if rest[0] not in self.sessions:
            return not_found(f"Session {rest[0]} not found")
        session = self.sessions[rest[0]]
        if method == "GET":
            return Handled(200, session)
        if method == "PATCH" and isinstance(body, dict):
            _merge(session, body)
            return Handled(200, session)
        return Handled(405, {"detail": f"{method} /sessions/<id> is not supported"})

    # examples

    def _examples(self, method: str, rest: list[str], query: Mapping[str, list[str]], body: Any) -> Handled:
        if not rest and method == "GET":
            found = list(self.examples.values())
            if ids := query.get("id"):
                found = [e for e in found if e["id"] in ids]
            if (dataset := _first(query, "dataset")) is not None:
                found = [e for e in found if e.get("dataset_id") == dataset]
            return Handled(200, _limited(found, query))
        if not rest and method == "POST":
            return self._create_example(body)
        if rest == ["bulk"] and method == "POST":
            if not isinstance(body, list):
                return Handled(422, {"detail": "POST /examples/bulk takes a list of examples"})
            created = [self._create_example(item) for item in body]
            failed = next((h for h in created if h.status != 200), None)
            return failed or Handled(200, [h.body for h in created])
        if rest == ["bulk"] and method == "PATCH":
            if not isinstance(body, list):
                return Handled(422, {"detail": "PATCH /examples/bulk takes a list of examples"})
            for item in body:
                if isinstance(item, dict) and str(item.get("id")) in self.examples:
                    self._update_example(self.examples[str(item["id"])], item)
            return Handled(200, {"message": f"{len(body)} examples updated"})
        if len(rest) != 1:
            return not_found(f"no route for {method} /examples/{'/'.join(rest)}")
        example = self.examples.get(rest[0])
        if example is None:
            return not_found(f"Example {rest[0]} not found")
        if method == "GET":
            return Handled(200, example)
        if method == "PATCH" and isinstance(body, dict):
            self._update_example(example, body)
            return Handled(200, {"message": "Example updated"})
        return Handled(405, {"detail": f"{method} /examples/<id> is not supported"})

    def _create_example(self, body: Any) -> Handled:
        if not isinstance(body, dict):
            return Handled(422, {"detail": "an example is a JSON object"})
        example_id = str(body.get("id") or uuid.uuid4())
        if example_id in self.examples:
            return Handled(409, {"detail": f"Example {example_id} already exists"})
        dataset_id = body.get("dataset_id")
        if dataset_id not in self.datasets:
            return not_found(f"Dataset {dataset_id} not found")
        now = now_iso()
        # As the real API answers: the split always in metadata.dataset_split (a list, ["base"] by default;
        # the SDK's pytest plugin pops it without a default), attachments as attachment_urls (an
        # "attachments" key collides with the SDK's own keyword when it builds its Example).
        split = body.get("split") or "base"
        metadata = {**(body.get("metadata") or {}), "dataset_split": split if isinstance(split, list) else [split]}
        example = {
            "id": example_id,
            "dataset_id": dataset_id,
            "inputs": body.get("inputs") or {},
            "outputs": body.get("outputs"),
            "metadata": metadata,
            "source_run_id": body.get("source_run_id"),
            "created_at": body.get("created_at") or now,
            "modified_at": now,
            "attachment_urls": None,
        }
        self.examples[example_id] = example
        self.datasets[dataset_id]["modified_at"] = now
        return Handled(200, example)

    def _update_example(self, example: dict[str, Any], body: Mapping[str, Any]) -> None:
        _merge(example, {k: v for k, v in body.items() if k != "id"})
        example["modified_at"] = now_iso()

    # runs

    def _runs(self, method: str, rest: list[str], query: Mapping[str, list[str]], body: Any) -> Handled:
        if rest == ["batch"] and method == "POST":
            if not isinstance(body, dict):
                return Handled(422, {"detail": "POST /runs/batch takes {post: [...], patch: [...]}"})
            for run in body.get("post") or ():
                self._post_run(run)
            for run in body.get("patch") or ():
                self._patch_run(run)
            return Handled(200, {})
        if not rest and method == "POST":
            if not isinstance(body, dict):
                return Handled(422, {"detail": "a run is a JSON object"})
            self._post_run(body)
            return Handled(200, {})
        if len(rest) != 1:
            return not_found(f"no route for {method} /runs/{'/'.join(rest)}")
        if method == "PATCH" and isinstance(body, dict):
            self._patch_run({**body, "id": rest[0]})
            return Handled(200, {})
        if method == "GET" and rest[0] in self.runs:
            return Handled(200, self.runs[rest[0]])
        return not_found(f"Run {rest[0]} not found")

    def _run(self, run_id: str) -> dict[str, Any]:
        return self.runs.setdefault(run_id, {"id": run_id})

    def _post_run(self, run: Any) -> None:
        if isinstance(run, dict) and run.get("id"):
            # A retried post (after an error answer) arrives again: merging keeps one run.
            _merge(self._run(str(run["id"])), run)

    def _patch_run(self, run: Any) -> None:
        if isinstance(run, dict) and run.get("id"):
            _merge(self._run(str(run["id"])), run)

    def _multipart(self, content_type: str, data: bytes) -> Handled:
        try:
            parts = parse_multipart(data, boundary_of(content_type))
        except MultipartError as exc:
            raise BodyError(400, f"cannot read the multipart body: {exc}") from exc
        summary = {"parts": [{"name": p.name, "content_type": p.content_type, "bytes": len(p.data)} for p in parts]}
        # Every part is read before any is applied: a bad body changes nothing.
        values = [_part_value(part) for part in parts]
        for part, value in zip(parts, values, strict=True):
            self._part(part, value)
        return Handled(202, {}, summary)

    def _part(self, part: Part, value: Any) -> None:
        """``post.<id>``, ``patch.<id>``, ``post|patch.<id>.<field>``, ``feedback.<id>``, ``attachment.<id>.<name>``."""
        kind, _, rest = part.name.partition(".")
        run_id, _, field = rest.partition(".")
        if kind == "attachment":
            attachment = {"name": field, "content_type": part.content_type, "bytes": len(part.data)}
            self._run(run_id).setdefault("attachments", []).append(attachment)
        elif kind == "feedback" and isinstance(value, dict):
            self._add_feedback(value)
        elif kind in ("post", "patch") and not field and isinstance(value, dict):
            _merge(self._run(run_id), {**value, "id": run_id})
        elif kind in ("post", "patch") and field in _RUN_FIELDS:
            _merge(self._run(run_id), {field: value})

    # feedback

    def _add_feedback(self, body: dict[str, Any]) -> dict[str, Any]:
        now = now_iso()
        feedback_id = str(body.get("id") or uuid.uuid4())
        feedback = {"created_at": now, "modified_at": now, **body, "id": feedback_id}
        self.feedback[feedback_id] = feedback
        return feedback

    def _feedback(self, method: str, rest: list[str], query: Mapping[str, list[str]], body: Any) -> Handled:
        if not rest and method == "POST":
            if not isinstance(body, dict) or not body.get("key"):
                return Handled(422, {"detail": "feedback needs a key"})
            return Handled(200, self._add_feedback(body))
        if not rest and method == "GET":
            found = list(self.feedback.values())
            if runs := query.get("run"):
                found = [f for f in found if str(f.get("run_id")) in runs]
            if keys := query.get("key"):
                found = [f for f in found if f.get("key") in keys]
            return Handled(200, _limited(found, query))
        if len(rest) == 1 and method == "GET" and rest[0] in self.feedback:
            return Handled(200, self.feedback[rest[0]])
        return not_found(f"no route for {method} /feedback/{'/'.join(rest)}")

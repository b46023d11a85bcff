"""Anthropic Messages API (``POST /v1/messages``): read a request, write a message or its SSE events.

Pure functions only. Wire format: a streamed message is ``message_start``, ``ping``, then per content
block ``content_block_start`` / ``content_block_delta`` (``text_delta`` or ``input_json_delta``) /
``content_block_stop``, then ``message_delta`` (stop reason and usage) and ``message_stop``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from scaffold.modelserver.script import (
    Answer,
    HistoryItem,
    RequestView,
    body_chars,
    chunks,
    estimate_tokens,
    find_cwd,
    fingerprint,
    json_schema_of,
)

__all__ = ["count_tokens", "error_body", "message_body", "request_view", "stream_events", "text_of"]

Event = tuple[str, dict[str, Any]]

_SESSION = re.compile(r"session(?:_id)?[\"']?\s*[:_]\s*[\"']?([A-Za-z0-9-]{8,})")


def text_of(content: object) -> str:
    """The text of a message's content: a string, or its ``text`` blocks joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(block.get("text", ""))
            for block in content
            if isinstance(block, Mapping) and block.get("type") == "text"
        )
    return ""


def request_view(body: Mapping[str, Any], headers: Mapping[str, str]) -> RequestView:
    """The provider-neutral view of a Messages request (see script.RequestView)."""
    messages = [m for m in body.get("messages") or () if isinstance(m, Mapping)]
    history: list[HistoryItem] = []
    opening: list[str] = []
    seen_assistant = False
    for message in messages:
        if message.get("role") == "assistant":
            seen_assistant = True
            content = message.get("content")
            ids = tuple(
                str(block.get("id", ""))
                for block in (content if isinstance(content, list) else ())
                if isinstance(block, Mapping) and block.get("type") == "tool_use"
            )
            history.append(HistoryItem(assistant=True, call_ids=ids))
        else:
            history.append(HistoryItem(assistant=False))
            if not seen_assistant and message.get("role") == "user":
                opening.append(text_of(message.get("content")))
    system = text_of(body.get("system"))
    metadata = body.get("metadata")
    user_id = str(metadata.get("user_id", "")) if isinstance(metadata, Mapping) else ""
    session = headers.get("x-claude-code-session-id")
    if not session and (m := _SESSION.search(user_id)):
        session = m.group(1)
    return RequestView(
        model=str(body.get("model", "")),
        has_tools=bool(body.get("tools")),
        history=tuple(history),
        opening_text="\n".join(opening),
        cwd=find_cwd([system, *opening]),
        session=session or None,
        size_chars=body_chars(body),
        fingerprint=fingerprint(body.get("messages")),
        json_schema=json_schema_of(body.get("output_config")),
    )


def _usage(answer: Answer, *, output_tokens: int | None = None) -> dict[str, int]:
    u = answer.usage
    return {
        "input_tokens": u.input_tokens,
        "cache_creation_input_tokens": u.cache_creation_input_tokens,
        "cache_read_input_tokens": u.cache_read_input_tokens,
        "output_tokens": u.output_tokens if output_tokens is None else output_tokens,
    }


def _content(answer: Answer) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if answer.text:
        blocks.append({"type": "text", "text": answer.text})
    for call in answer.calls:
        tool_input = call.input if isinstance(call.input, dict) else _object_of(call.input)
        blocks.append({"type": "tool_use", "id": f"toolu_{call.id}", "name": call.name, "input": tool_input})
    return blocks


def _object_of(text: str) -> dict[str, Any]:
    """A string tool input: the JSON object it spells, else ``{"input": text}`` (tool_use input is an object)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return {"input": text}
    return value if isinstance(value, dict) else {"input": text}


def message_body(answer: Answer, model: str) -> dict[str, Any]:
    """The non-streaming response: one ``message`` object."""
    return {
        "id": f"msg_{answer.id}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _content(answer),
        "stop_reason": answer.stop_reason,
        "stop_sequence": None,
        "usage": _usage(answer),
    }


def stream_events(answer: Answer, model: str) -> list[Event]:
    """The SSE events of a streamed message, as (event name, data) pairs."""
    start = message_body(answer, model)
    start.update(content=[], stop_reason=None, usage=_usage(answer, output_tokens=1))
    events: list[Event] = [("message_start", {"type": "message_start", "message": start}), ("ping", {"type": "ping"})]
    for index, block in enumerate(_content(answer)):
        if block["type"] == "text":
            opened: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in chunks(block["text"])]
        else:
            opened = {**block, "input": {}}
            partial = json.dumps(block["input"], ensure_ascii=False)
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in chunks(partial)]
        events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": opened}))
        events.extend(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas
        )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": answer.stop_reason, "stop_sequence": None},
                "usage": _usage(answer),
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def count_tokens(body: Mapping[str, Any]) -> dict[str, int]:
    """``POST /v1/messages/count_tokens``: a rough, deterministic estimate."""
    return {"input_tokens": estimate_tokens(body)}


def error_body(kind: str, message: str) -> dict[str, Any]:
    """An error in Anthropic's shape (``not_found_error``, ``invalid_request_error``, ...).

    ``error.code`` is there too, so OpenAI clients read the same body.
    """
    return {"type": "error", "error": {"type": kind, "message": message, "code": kind}}

"""OpenAI Responses API (``POST /v1/responses``): read a request, write a response or its SSE events.

Pure functions only. A streamed response is ``response.created``, ``response.in_progress``, then per
output item ``response.output_item.added``, its content events, ``response.output_item.done``, and
``response.completed`` carrying the whole response with ``usage``. Every event has ``type`` and
``sequence_number``. A tool the request declares as ``{"type": "custom"}`` (Codex's ``apply_patch``
in some versions) is answered with a ``custom_tool_call`` item and a string ``input``; every other
tool with a ``function_call`` item and JSON ``arguments``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scaffold.modelserver.script import (
    Answer,
    HistoryItem,
    PlannedCall,
    RequestView,
    body_chars,
    chunks,
    find_cwd,
    fingerprint,
    json_schema_of,
)

__all__ = [
    "custom_tools",
    "declared_tools",
    "error_body",
    "models_body",
    "request_view",
    "response_body",
    "stream_events",
]

# Items the assistant produced (one model call may produce several); outputs and user turns end a run.
_ASSISTANT_ITEMS = {
    "function_call",
    "custom_tool_call",
    "local_shell_call",
    "reasoning",
    "web_search_call",
    "file_search_call",
    "computer_call",
    "image_generation_call",
    "code_interpreter_call",
    "mcp_call",
}
_OTHER_ITEMS = {
    "function_call_output",
    "custom_tool_call_output",
    "local_shell_call_output",
    "computer_call_output",
    "mcp_call_output",
}


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, Mapping) and part.get("type") in ("input_text", "output_text", "text")
        )
    return ""


def _is_message(item: Mapping[str, Any]) -> bool:
    return item.get("type", "message") == "message" and "role" in item


def request_view(body: Mapping[str, Any], headers: Mapping[str, str]) -> RequestView:
    """The provider-neutral view of a Responses request (see script.RequestView)."""
    raw = body.get("input")
    items: list[Mapping[str, Any]] = (
        [{"type": "message", "role": "user", "content": raw}]
        if isinstance(raw, str)
        else [i for i in raw or () if isinstance(i, Mapping)]
    )
    history: list[HistoryItem] = []
    opening: list[str] = []
    context: list[str] = [str(body.get("instructions") or "")]
    seen_assistant = False
    for item in items:
        kind = item.get("type", "message")
        if (_is_message(item) and item.get("role") == "assistant") or kind in _ASSISTANT_ITEMS:
            seen_assistant = True
            history.append(HistoryItem(assistant=True, call_ids=(str(item.get("call_id", "")),)))
        elif _is_message(item) or kind in _OTHER_ITEMS:
            history.append(HistoryItem(assistant=False))
            if _is_message(item) and not seen_assistant:
                context.append(_text(item.get("content")))
                if item.get("role") == "user":
                    opening.append(context[-1])
    # Codex 0.171 sends session-id and thread-id headers; older versions session_id / conversation_id.
    names = ("session-id", "session_id", "thread-id", "conversation_id")
    session = next((headers[n] for n in names if headers.get(n)), None) or body.get("prompt_cache_key")
    return RequestView(
        model=str(body.get("model", "")),
        has_tools=bool(declared_tools(body)),
        history=tuple(history),
        opening_text="\n".join(opening),
        cwd=find_cwd(context),
        session=str(session) if session else None,
        size_chars=body_chars(body),
        fingerprint=fingerprint(body.get("input")),
        json_schema=json_schema_of(body.get("text")),
    )


def declared_tools(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Every tool the request declares: ``tools``, plus ``additional_tools`` input items (Codex 0.17x),
    with ``namespace`` tools opened up."""
    found: list[Mapping[str, Any]] = []

    def walk(tools: object) -> None:
        for tool in tools if isinstance(tools, list) else ():
            if not isinstance(tool, Mapping):
                continue
            if tool.get("type") == "namespace":
                walk(tool.get("tools"))
            else:
                found.append(tool)

    walk(body.get("tools"))
    raw = body.get("input")
    for item in raw if isinstance(raw, list) else ():
        if isinstance(item, Mapping) and item.get("type") == "additional_tools":
            walk(item.get("tools"))
    return found


def custom_tools(body: Mapping[str, Any]) -> frozenset[str]:
    """Names of the tools the request declares as freeform ``custom`` tools."""
    return frozenset(str(t["name"]) for t in declared_tools(body) if t.get("type") == "custom" and t.get("name"))


def _usage(answer: Answer) -> dict[str, Any]:
    u = answer.usage
    prompt = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": u.cache_read_input_tokens},
        "output_tokens": u.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + u.output_tokens,
    }


def _message_item(answer: Answer, *, done: bool) -> dict[str, Any]:
    content = [{"type": "output_text", "text": answer.text, "annotations": [], "logprobs": []}] if done else []
    return {
        "id": f"msg_{answer.id}",
        "type": "message",
        "status": "completed" if done else "in_progress",
        "role": "assistant",
        "content": content,
    }


def _call_item(call: PlannedCall, custom: frozenset[str], *, done: bool) -> dict[str, Any]:
    status = "completed" if done else "in_progress"
    if call.name in custom:
        text = call.input if isinstance(call.input, str) else str(call.input.get("input", call.arguments()))
        return {
            "id": f"ctc_{call.id}",
            "type": "custom_tool_call",
            "status": status,
            "call_id": f"call_{call.id}",
            "name": call.name,
            "input": text if done else "",
        }
    return {
        "id": f"fc_{call.id}",
        "type": "function_call",
        "status": status,
        "call_id": f"call_{call.id}",
        "name": call.name,
        "arguments": call.arguments() if done else "",
    }


def _output(answer: Answer, custom: frozenset[str]) -> list[dict[str, Any]]:
    items = [_message_item(answer, done=True)] if answer.text or not answer.calls else []
    return items + [_call_item(call, custom, done=True) for call in answer.calls]


def response_body(
    answer: Answer, model: str, *, created_at: int = 0, custom: frozenset[str] = frozenset(), done: bool = True
) -> dict[str, Any]:
    """The ``response`` object: completed with output and usage, or (``done=False``) just created."""
    return {
        "id": f"resp_{answer.id}",
        "object": "response",
        "created_at": created_at,
        "status": "completed" if done else "in_progress",
        "error": None,
        "incomplete_details": None,
        "model": model,
        "output": _output(answer, custom) if done else [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "usage": _usage(answer) if done else None,
    }


def stream_events(
    answer: Answer, model: str, *, created_at: int = 0, custom: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    """The SSE events of a streamed response, each a dict with ``type`` and ``sequence_number``."""
    events: list[dict[str, Any]] = []

    def emit(kind: str, **data: Any) -> None:
        events.append({"type": kind, "sequence_number": len(events), **data})

    created = response_body(answer, model, created_at=created_at, custom=custom, done=False)
    emit("response.created", response=created)
    emit("response.in_progress", response=created)
    index = 0
    if answer.text or not answer.calls:
        item = _message_item(answer, done=False)
        ids = {"item_id": item["id"], "output_index": index}
        emit("response.output_item.added", output_index=index, item=item)
        part = {"type": "output_text", "text": "", "annotations": []}
        emit("response.content_part.added", **ids, content_index=0, part=part)
        for piece in chunks(answer.text):
            emit("response.output_text.delta", **ids, content_index=0, delta=piece, logprobs=[])
        emit("response.output_text.done", **ids, content_index=0, text=answer.text, logprobs=[])
        emit("response.content_part.done", **ids, content_index=0, part={**part, "text": answer.text})
        emit("response.output_item.done", output_index=index, item=_message_item(answer, done=True))
        index += 1
    for call in answer.calls:
        item = _call_item(call, custom, done=False)
        done = _call_item(call, custom, done=True)
        ids = {"item_id": item["id"], "output_index": index}
        emit("response.output_item.added", output_index=index, item=item)
        if done["type"] == "custom_tool_call":
            for piece in chunks(done["input"]):
                emit("response.custom_tool_call_input.delta", **ids, delta=piece)
            emit("response.custom_tool_call_input.done", **ids, input=done["input"])
        else:
            for piece in chunks(done["arguments"]):
                emit("response.function_call_arguments.delta", **ids, delta=piece)
            emit("response.function_call_arguments.done", **ids, name=call.name, arguments=done["arguments"])
        emit("response.output_item.done", output_index=index, item=done)
        index += 1
    emit("response.completed", response=response_body(answer, model, created_at=created_at, custom=custom))
    return events


def error_body(kind: str, message: str, status: int) -> dict[str, Any]:
    """An error in OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}``."""
    code = {429: "rate_limit_exceeded", 401: "invalid_api_key"}.get(status, kind)
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def models_body(models: list[str]) -> dict[str, Any]:
    """``GET /v1/models``: a small list in OpenAI's shape."""
    return {
        "object": "list",
        "data": [{"id": m, "object": "model", "created": 0, "owned_by": "comet-eval"} for m in models],
    }

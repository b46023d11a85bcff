"""Scripts for the scripted model server: the file model, its loader and the choice of an answer.

Pure: no sockets, no threads. The provider modules turn a request body into a :class:`RequestView`,
:func:`plan_answer` picks what to say, and the provider modules render the :class:`Answer`.

Rules (also in the package docstring):

* **main conversation** = a request that carries a non-empty ``tools`` list (and, when the script sets
  ``model``, whose model contains that text). Anything else is a *side request* (titles, topic or
  command-prefix detection, quota checks) and gets ``fallback_text`` without touching the script.
* **which conversation**: the first entry of ``conversations`` whose ``match`` is a substring of the
  opening user text (the user messages before the first assistant turn). ``responses:`` at the top is
  one conversation that matches everything. No match: ``fallback_text``.
* **which response**: stateless. The number of assistant turns already in the request (runs of
  assistant items; tool calls whose ids this server made are put back in the turn that made them) is the
  index into ``responses``. Past the end: ``fallback_text`` with ``end_turn``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Final, Literal

import yaml
from pydantic import Field, ValidationError

from scaffold.errors import LoadError, Problem
from scaffold.util.hashing import canonical_json
from scaffold.util.schema import Model, NonEmptyStr, load_yaml, problems_from, yaml_problem

__all__ = [
    "Answer",
    "Conversation",
    "HistoryItem",
    "PlannedCall",
    "RequestView",
    "Script",
    "ScriptError",
    "ScriptedError",
    "ScriptedResponse",
    "ScriptedToolCall",
    "ScriptedUsage",
    "Usage",
    "body_chars",
    "chunks",
    "count_turns",
    "decode_position",
    "estimate_tokens",
    "example_json",
    "fill_placeholders",
    "find_cwd",
    "fingerprint",
    "json_schema_of",
    "load_script",
    "parse_script",
    "plan_answer",
    "position_id",
]

Count = Annotated[int, Field(strict=True, ge=0)]
Text = Annotated[str, Field(strict=True)]


class ScriptError(LoadError):
    """A script file for the scripted model server is invalid."""


class ScriptedToolCall(Model):
    """One tool call: the tool's name as the agent knows it and its input, echoed as given."""

    name: NonEmptyStr
    # A mapping becomes the tool's JSON input; a string is sent as the raw arguments (or custom-tool input).
    input: dict[str, Any] | Text = Field(default_factory=dict)


class Usage(Model):
    """Token counts reported for a response; a count left out is estimated (input, output) or 0 (cache)."""

    input_tokens: Count | None = None
    output_tokens: Count | None = None
    cache_read_input_tokens: Count | None = None
    cache_creation_input_tokens: Count | None = None


class ScriptedError(Model):
    """An HTTP error answered instead of a response, in the provider's error body format.

    ``times`` bounds how many calls of this turn get the error (the agent's retries included); after
    that the response's text and tool calls are served, so a recovered failure can be scripted.
    Without ``times`` every call of the turn fails (a persistent outage).
    """

    status: Annotated[int, Field(strict=True, ge=400, le=599)]
    type: NonEmptyStr = "api_error"
    message: Text = "scripted error"
    times: Annotated[int, Field(strict=True, ge=1)] | None = None


class ScriptedResponse(Model):
    """What one model call answers: optional text, then tool calls in order (or an HTTP ``error``)."""

    error: ScriptedError | None = None
    text: Text = ""
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    usage: Usage | None = None


class Conversation(Model):
    """Responses for the conversations whose opening user text contains ``match`` ("" matches all)."""

    match: Text = ""
    responses: tuple[ScriptedResponse, ...]


class Script(Model):
    """A whole script file. Give either ``responses`` (one conversation) or ``conversations``."""

    responses: tuple[ScriptedResponse, ...] | None = None
    conversations: tuple[Conversation, ...] | None = None
    usage: Usage | None = None
    fallback_text: Text = "OK"
    judge: ScriptedResponse | None = None
    """The answer to an LLM judge's request (a tool-less request asking for ``[RUBRIC-JUDGE]`` lines),
    instead of ``fallback_text``: the judge calls the Messages API directly, without tools."""
    cwd: NonEmptyStr | None = None
    model: NonEmptyStr | None = None
    latency: Annotated[float, Field(ge=0, le=600, allow_inf_nan=False)] = 0.0
    """Seconds the server waits before it answers each model call (main conversation and judge; side
    requests are answered at once): a provider's response time, so a benchmark's trials spend their time
    waiting on the model as real ones do. Each request waits in its own thread: calls overlap."""

    @property
    def all_conversations(self) -> tuple[Conversation, ...]:
        """``conversations``, or the top-level ``responses`` as one conversation matching everything."""
        if self.conversations is not None:
            return self.conversations
        return (Conversation(match="", responses=self.responses or ()),)


def load_script(path: Path | str) -> Script:
    """Read and validate a YAML script; every problem names the file and the key (raises ScriptError)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScriptError([Problem(file, f"cannot read script: {exc.strerror or exc}")]) from exc
    except UnicodeDecodeError as exc:  # a binary file: named, not a traceback
        raise ScriptError([yaml_problem(file, exc)]) from None
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        raise ScriptError([Problem(file, f"not valid YAML: {exc}")]) from exc
    return parse_script(data, file)


def parse_script(data: object, file: Path | str = "<script>") -> Script:
    """Validate already-parsed script data (a mapping); raises ScriptError naming *file* and keys."""
    file = Path(file)
    if not isinstance(data, Mapping):
        raise ScriptError([Problem(file, "expected a mapping with `responses` or `conversations`", value=data)])
    try:
        script = Script.model_validate(dict(data))
    except ValidationError as exc:
        raise ScriptError(problems_from(exc, file, Script, sections=False)) from exc
    problems: list[Problem] = []
    if (script.responses is None) == (script.conversations is None):
        problems.append(Problem(file, "give exactly one of `responses` and `conversations`", "responses"))
    if script.responses is not None:
        problems.extend(_empty_responses(file, "responses", script.responses))
    for i, conv in enumerate(script.conversations or ()):
        problems.extend(_empty_responses(file, f"conversations[{i}].responses", conv.responses))
    if problems:
        raise ScriptError(problems)
    return script


def _empty_responses(file: Path, key: str, responses: Sequence[ScriptedResponse]) -> list[Problem]:
    return [
        Problem(file, "a response needs `text`, `tool_calls` or `error`", f"{key}[{i}]")
        for i, resp in enumerate(responses)
        if not resp.text and not resp.tool_calls and resp.error is None
    ]


# --- placeholders ------------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def fill_placeholders(value: Any, values: Mapping[str, str | None]) -> Any:
    """Replace ``{name}`` in every string of *value* (recursively) when *values* has a non-None name.

    Unknown names, and names without a value, are left untouched; mapping keys are not changed.
    """
    if isinstance(value, str):

        def sub(m: re.Match[str]) -> str:
            found = values.get(m.group(1))
            return m.group(0) if found is None else found

        return _PLACEHOLDER.sub(sub, value)
    if isinstance(value, Mapping):
        return {k: fill_placeholders(v, values) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [fill_placeholders(v, values) for v in value]
    return value


# --- deterministic ids ---------------------------------------------------------------------------------

_POSITION = re.compile(r"([0-9a-f]{4})([0-9a-f]{4})([0-9a-f]{4})([0-9a-f]{12})$")


def _digest(*parts: object) -> str:
    return hashlib.sha256(":".join(str(p) for p in ("comet", *parts)).encode()).hexdigest()


def position_id(conversation: int, turn: int, index: int, salt: str = "") -> str:
    """24 hex digits naming tool call *index* of response *turn* of *conversation*; see decode_position.

    *salt* (a hash of the conversation's opening) keeps ids apart between conversations that share a
    script entry, such as a sub-agent's and its parent's.
    """
    return f"{conversation:04x}{turn:04x}{index:04x}" + _digest(salt, conversation, turn, index)[:12]


def decode_position(call_id: str, salt: str = "") -> tuple[int, int] | None:
    """(conversation, turn) of an id ending in a :func:`position_id` made with *salt*; else None."""
    m = _POSITION.search(call_id)
    if not m:
        return None
    conv, turn, index = (int(g, 16) for g in m.groups()[:3])
    return (conv, turn) if m.group(4) == _digest(salt, conv, turn, index)[:12] else None


# --- requests, seen the same way for every provider ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class HistoryItem:
    """One item of the request's conversation: said by the assistant (with its tool-call ids) or not."""

    assistant: bool
    call_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RequestView:
    """What the planner needs from a request, whatever its wire format."""

    model: str
    has_tools: bool
    history: tuple[HistoryItem, ...]
    opening_text: str
    cwd: str | None = None
    session: str | None = None
    size_chars: int = 0
    fingerprint: str = ""
    # The JSON schema the request asks the answer to follow (structured output), if any.
    json_schema: Mapping[str, Any] | None = None


def count_turns(history: Sequence[HistoryItem], conversation: int | None = None, salt: str = "") -> int:
    """How many model calls the history already holds: runs of assistant items.

    Some agents record a response's tool calls interleaved with their outputs (call A, output A, call
    B); a tool call whose id this server made for the current turn of *conversation* stays in that turn.
    """
    count = 0
    in_run = False
    for item in history:
        if not item.assistant:
            in_run = False
            continue
        positions = [decode_position(cid, salt) for cid in item.call_ids]
        if not in_run and count > 0 and any(p == (conversation, count - 1) for p in positions):
            in_run = True
            continue
        if not in_run:
            count += 1
            in_run = True
    return count


# --- answers ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScriptedUsage:
    """Resolved token counts, in Anthropic's sense (input excludes cache reads and writes)."""

    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0


@dataclass(frozen=True, slots=True)
class PlannedCall:
    """A tool call ready to render: ``id`` is bare hex, each provider adds its prefix."""

    id: str
    name: str
    input: dict[str, Any] | str

    def arguments(self) -> str:
        """The input as a JSON string (a string input is sent as is)."""
        return self.input if isinstance(self.input, str) else json.dumps(self.input, ensure_ascii=False)


AnswerKind = Literal["script", "exhausted", "side", "unmatched", "judge"]


@dataclass(frozen=True, slots=True)
class Answer:
    """What to send back for one request, and why (``kind``), for the request log."""

    kind: AnswerKind
    id: str
    text: str
    calls: tuple[PlannedCall, ...]
    usage: ScriptedUsage
    conversation: int | None = None
    turn: int | None = None
    notes: dict[str, Any] = field(default_factory=dict)
    error: ScriptedError | None = None

    @property
    def stop_reason(self) -> Literal["tool_use", "end_turn"]:
        return "tool_use" if self.calls else "end_turn"

    def describe(self) -> dict[str, Any]:
        """A JSON-ready summary for the request log."""
        return {
            "kind": self.kind,
            "conversation": self.conversation,
            "turn": self.turn,
            "stop_reason": self.stop_reason,
            "text": self.text,
            "tool_calls": [{"id": c.id, "name": c.name, "input": c.input} for c in self.calls],
            **self.notes,
        }


JUDGE_MARKER: Final = "[RUBRIC-JUDGE]"
"""What marks a judge's request: its prompt asks for lines in this format (scaffold.judge.prompts)."""


def is_side_request(script: Script, view: RequestView) -> bool:
    """A request outside the main conversation: no tools, or another model than the script's ``model``."""
    return not view.has_tools or (script.model is not None and script.model not in view.model)


def select_conversation(script: Script, opening_text: str) -> int | None:
    """Index of the first conversation whose ``match`` occurs in *opening_text*, or None."""
    for i, conv in enumerate(script.all_conversations):
        if conv.match in opening_text:
            return i
    return None


def plan_answer(script: Script, view: RequestView) -> Answer:
    """Choose the answer for one request (see the module docstring for the rules)."""
    values = {"cwd": script.cwd or view.cwd, "session": view.session}
    fallback = str(fill_placeholders(script.fallback_text, values))
    if view.json_schema is not None:
        fallback = json.dumps(example_json(view.json_schema, fallback), ensure_ascii=False)
    notes: dict[str, Any] = {"cwd": values["cwd"]}
    if script.judge is not None and not view.has_tools and JUDGE_MARKER in view.opening_text:
        judge = script.judge
        text = str(fill_placeholders(judge.text, values))
        usage = _usage(script.usage, judge.usage, view, text, ())
        ident = _digest("msg", "judge", view.fingerprint)[:24]
        return Answer("judge", ident, text, (), usage, notes=notes, error=judge.error)
    if is_side_request(script, view):
        reason = "no tools" if not view.has_tools else f"model {view.model!r} is not {script.model!r}"
        return _text_answer("side", fallback, script, view, {**notes, "reason": reason})
    conv = select_conversation(script, view.opening_text)
    if conv is None:
        return _text_answer("unmatched", fallback, script, view, notes)
    salt = _digest(view.opening_text)[:8]
    turn = count_turns(view.history, conv, salt)
    responses = script.all_conversations[conv].responses
    if turn >= len(responses):
        return _text_answer("exhausted", fallback, script, view, notes, conv, turn)
    response = responses[turn]
    calls = tuple(
        PlannedCall(position_id(conv, turn, k, salt), call.name, fill_placeholders(call.input, values))
        for k, call in enumerate(response.tool_calls)
    )
    text = str(fill_placeholders(response.text, values))
    usage = _usage(script.usage, response.usage, view, text, calls)
    ident = _digest("msg", salt, conv, turn)[:24]
    return Answer("script", ident, text, calls, usage, conv, turn, notes, response.error)


def json_schema_of(config: object) -> Mapping[str, Any] | None:
    """The schema of a structured-output setting ``{"format": {"type": "json_schema", "schema": ...}}``.

    Anthropic puts it in ``output_config``, the Responses API in ``text``.
    """
    fmt = config.get("format") if isinstance(config, Mapping) else None
    if isinstance(fmt, Mapping) and fmt.get("type") == "json_schema" and isinstance(fmt.get("schema"), Mapping):
        return fmt["schema"]  # type: ignore[no-any-return]
    return None


def example_json(schema: Mapping[str, Any], text: str, depth: int = 0) -> Any:
    """A small value that satisfies *schema*: required properties filled, strings set to *text*.

    Lets a fallback answer a structured-output request (Claude Code's session title asks for
    ``{"title": ...}``) with something the client can parse.
    """
    if depth > 8:
        return None
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list) and options and isinstance(options[0], Mapping):
            return example_json(options[0], text, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    props = schema.get("properties")
    if kind == "object" or (kind is None and isinstance(props, Mapping)):
        props = props if isinstance(props, Mapping) else {}
        required = schema.get("required")
        names = [n for n in required if n in props] if isinstance(required, list) else list(props)
        return {n: example_json(props[n], text, depth + 1) if isinstance(props[n], Mapping) else text for n in names}
    defaults: dict[str, Any] = {"array": [], "integer": 0, "number": 0, "boolean": False, "null": None}
    return defaults.get(str(kind), text)


def _text_answer(
    kind: AnswerKind,
    text: str,
    script: Script,
    view: RequestView,
    notes: dict[str, Any],
    conv: int | None = None,
    turn: int | None = None,
) -> Answer:
    ident = _digest("msg", kind, conv, turn, view.fingerprint)[:24]
    return Answer(kind, ident, text, (), _usage(script.usage, None, view, text, ()), conv, turn, notes)


def _usage(
    base: Usage | None, own: Usage | None, view: RequestView, text: str, calls: Sequence[PlannedCall]
) -> ScriptedUsage:
    def pick(name: str, default: int) -> int:
        for source in (own, base):
            value = getattr(source, name, None) if source is not None else None
            if value is not None:
                return int(value)
        return default

    out_chars = len(text) + sum(len(c.name) + len(c.arguments()) for c in calls)
    return ScriptedUsage(
        input_tokens=pick("input_tokens", max(1, view.size_chars // 4)),
        output_tokens=pick("output_tokens", max(1, out_chars // 4)),
        cache_read_input_tokens=pick("cache_read_input_tokens", 0),
        cache_creation_input_tokens=pick("cache_creation_input_tokens", 0),
    )


_CWD_PATTERNS = (
    re.compile(r"<cwd>\s*([^<\n]+?)\s*</cwd>"),  # Codex: <environment_context><cwd>/path</cwd>
    # Claude Code: " - Primary working directory: /path" (2.1) or "Working directory: /path" (<env> block)
    re.compile(r"(?m)^[ \t\-*]*(?:Primary )?[Ww]orking directory:[ \t]*(\S[^\n<]*?)[ \t]*$"),
)


def find_cwd(texts: Sequence[str]) -> str | None:
    """The working directory an agent reports in its system prompt or environment context, if any."""
    for pattern in _CWD_PATTERNS:
        for text in texts:
            m = pattern.search(text)
            if m:
                return m.group(1)
    return None


def chunks(text: str, parts: int = 3) -> list[str]:
    """*text* cut into at most *parts* pieces of near-equal length (one piece when short)."""
    if len(text) < 2 * parts:
        return [text]
    size = -(-len(text) // parts)
    return [text[i : i + size] for i in range(0, len(text), size)]


def body_chars(body: object) -> int:
    """The length of a request body as compact JSON text."""
    return len(json.dumps(body, ensure_ascii=False, separators=(",", ":")))


def estimate_tokens(body: object) -> int:
    """A rough, deterministic token count for a request body (4 characters a token)."""
    return max(1, body_chars(body) // 4)


def fingerprint(body: object) -> str:
    """A short stable hash of a request body, for ids of answers outside the script."""
    return _digest(canonical_json(body))[:16]

"""The scripted model server, over real HTTP on a free local port: wire formats, script choice, log."""

from __future__ import annotations

import gzip
import http.client
import json
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from scaffold.errors import LoadError
from scaffold.modelserver import REDACTED, ScriptedModelServer, ScriptError, load_script, parse_script
from scaffold.modelserver.__main__ import main
from scaffold.modelserver.script import HistoryItem, count_turns, position_id
from tests.support.factories import REPO

BASH = {"name": "Bash", "input": {"command": "ls -la {cwd}", "description": "list"}}
WRITE = {"name": "Write", "input": {"file_path": "{cwd}/result.md", "content": "# Result\n- one\n"}}
SCRIPT: dict[str, Any] = {
    "responses": [
        {"text": "I'll look around first.", "tool_calls": [BASH]},
        {"tool_calls": [WRITE]},
        {"text": "Done: result.md written."},
    ],
    "usage": {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 7},
    "fallback_text": "OK",
}
TOOLS = [{"name": "Bash", "input_schema": {"type": "object"}}, {"name": "Write", "input_schema": {"type": "object"}}]
SYSTEM = [
    {"type": "text", "text": "You are Claude Code.\n - Primary working directory: /tmp/trial-7\n - Platform: linux"}
]


# --- helpers -----------------------------------------------------------------------------------------


class Reply:
    def __init__(self, status: int, headers: Mapping[str, str], raw: bytes) -> None:
        self.status, self.headers, self.raw = status, headers, raw

    def json(self) -> Any:
        return json.loads(self.raw)

    def events(self) -> list[tuple[str, dict[str, Any]]]:
        """SSE frames as (event, data) pairs."""
        out = []
        for frame in self.raw.decode().split("\n\n"):
            if not frame.strip():
                continue
            fields = dict(line.split(": ", 1) for line in frame.splitlines())
            out.append((fields["event"], json.loads(fields["data"])))
        return out


def call(
    url: str,
    method: str,
    path: str,
    body: object = None,
    headers: Mapping[str, str] | None = None,
    conn: http.client.HTTPConnection | None = None,
) -> Reply:
    parts = urlsplit(url)
    own = conn or http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=5)
    data = body if isinstance(body, bytes) else (None if body is None else json.dumps(body).encode())
    own.request(method, path, body=data, headers={"content-type": "application/json", **(headers or {})})
    resp = own.getresponse()
    reply = Reply(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
    if conn is None:
        own.close()
    return reply


def messages_request(*messages: Mapping[str, Any], stream: bool = True, **extra: Any) -> dict[str, Any]:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 1000, "system": SYSTEM, "tools": TOOLS, "stream": stream}
    body["messages"] = list(messages) or [{"role": "user", "content": [{"type": "text", "text": "Create result.md"}]}]
    return {**body, **extra}


def assistant(*blocks: Mapping[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def tool_result(tool_id: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": "ok"}]}


def message_of(events: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Reassemble a streamed Anthropic message the way a client does."""
    message = dict(events[0][1]["message"])
    blocks: list[dict[str, Any]] = []
    for name, data in events:
        if name == "content_block_start":
            blocks.append({**data["content_block"], "_json": ""})
        elif name == "content_block_delta":
            delta = data["delta"]
            if delta["type"] == "text_delta":
                blocks[data["index"]]["text"] += delta["text"]
            else:
                blocks[data["index"]]["_json"] += delta["partial_json"]
        elif name == "message_delta":
            message["stop_reason"] = data["delta"]["stop_reason"]
            message["usage"] = data["usage"]
    for block in blocks:
        raw = block.pop("_json")
        if block["type"] == "tool_use":
            block["input"] = json.loads(raw)
    message["content"] = blocks
    return message


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(SCRIPT) as srv:
        yield srv


# --- Anthropic Messages --------------------------------------------------------------------------------


def test_anthropic_stream_sends_text_then_tool_use_as_sse(server: ScriptedModelServer) -> None:
    reply = call(server.url, "POST", "/v1/messages?beta=true", messages_request(), {"anthropic-version": "2023-06-01"})
    assert reply.status == 200
    assert reply.headers["content-type"].startswith("text/event-stream")
    events = reply.events()
    names = [n for n, _ in events]
    assert names[:2] == ["message_start", "ping"]
    assert names[-2:] == ["message_delta", "message_stop"]
    blocks = [d["content_block"]["type"] for n, d in events if n == "content_block_start"]
    assert blocks == ["text", "tool_use"]
    assert names.count("content_block_stop") == 2
    json_deltas = [d["delta"] for n, d in events if n == "content_block_delta" and d["index"] == 1]
    assert len(json_deltas) > 1 and all(d["type"] == "input_json_delta" for d in json_deltas)
    assert all(data["type"] == name for name, data in events)

    start = events[0][1]["message"]
    assert start["model"] == "claude-sonnet-4-5" and start["role"] == "assistant" and start["id"].startswith("msg_")
    assert start["usage"]["input_tokens"] == 100 and start["usage"]["cache_read_input_tokens"] == 7

    message = message_of(events)
    assert message["stop_reason"] == "tool_use"
    assert message["usage"]["output_tokens"] == 20
    text, tool = message["content"]
    assert text == {"type": "text", "text": "I'll look around first."}
    assert tool["name"] == "Bash" and tool["id"].startswith("toolu_")
    assert tool["input"] == {"command": "ls -la /tmp/trial-7", "description": "list"}


def test_anthropic_without_stream_answers_one_json_message(server: ScriptedModelServer) -> None:
    first = call(server.url, "POST", "/v1/messages", messages_request(stream=False)).json()
    tool_id = first["content"][1]["id"]
    body = messages_request(user("Create result.md"), assistant(*first["content"]), tool_result(tool_id), stream=False)
    reply = call(server.url, "POST", "/v1/messages", body)
    assert reply.status == 200 and reply.headers["content-type"] == "application/json"
    message = reply.json()
    assert message["type"] == "message" and message["stop_reason"] == "tool_use"
    assert message["content"] == [
        {
            "type": "tool_use",
            "id": message["content"][0]["id"],
            "name": "Write",
            "input": {"file_path": "/tmp/trial-7/result.md", "content": "# Result\n- one\n"},
        }
    ]
    assert message["id"] != first["id"] and message["content"][0]["id"] != tool_id


def test_tool_ids_are_deterministic_per_conversation_position(server: ScriptedModelServer) -> None:
    a = call(server.url, "POST", "/v1/messages", messages_request(stream=False)).json()
    b = call(server.url, "POST", "/v1/messages", messages_request(stream=False)).json()
    other = call(server.url, "POST", "/v1/messages", messages_request(user("Another task"), stream=False)).json()
    assert a == b
    assert other["content"][1]["id"] != a["content"][1]["id"]  # another conversation opening, other ids
    assert all(c in "0123456789abcdef" for c in a["content"][1]["id"].removeprefix("toolu_"))


def test_response_is_chosen_by_the_number_of_assistant_turns(server: ScriptedModelServer) -> None:
    history = [user("go"), assistant({"type": "text", "text": "x"}), user("more")]
    reply = call(server.url, "POST", "/v1/messages", messages_request(*history, stream=False)).json()
    assert reply["content"][0]["name"] == "Write"  # one assistant turn so far: responses[1]
    history += [assistant({"type": "text", "text": "y"}), user("again")]
    reply = call(server.url, "POST", "/v1/messages", messages_request(*history, stream=False)).json()
    assert reply["content"] == [{"type": "text", "text": "Done: result.md written."}]
    assert reply["stop_reason"] == "end_turn"
    # Consecutive assistant messages are one turn (a client that splits a response per block).
    split = [user("go"), assistant({"type": "text", "text": "a"}), assistant({"type": "text", "text": "b"}), user("k")]
    reply = call(server.url, "POST", "/v1/messages", messages_request(*split, stream=False)).json()
    assert reply["content"][0]["name"] == "Write"


def test_after_the_last_response_the_fallback_ends_the_turn(server: ScriptedModelServer) -> None:
    history = [user("go")]
    for i in range(3):
        history += [assistant({"type": "text", "text": str(i)}), user("next")]
    events = call(server.url, "POST", "/v1/messages", messages_request(*history)).events()
    message = message_of(events)
    assert message["content"] == [{"type": "text", "text": "OK"}] and message["stop_reason"] == "end_turn"
    assert server.requests[-1]["answer"]["kind"] == "exhausted"


def test_side_requests_get_the_fallback_without_consuming_the_script(server: ScriptedModelServer) -> None:
    title = messages_request(model="claude-haiku-4-5", tools=[], stream=False)
    assert call(server.url, "POST", "/v1/messages", title).json()["content"] == [{"type": "text", "text": "OK"}]
    no_tools = messages_request(stream=False)
    del no_tools["tools"]
    assert call(server.url, "POST", "/v1/messages", no_tools).json()["content"][0]["text"] == "OK"
    main_reply = call(server.url, "POST", "/v1/messages", messages_request(stream=False)).json()
    assert main_reply["content"][0]["text"] == "I'll look around first."
    assert [r["answer"]["kind"] for r in server.requests] == ["side", "side", "script"]
    assert server.requests[0]["answer"]["reason"] == "no tools"


def test_side_request_with_a_json_schema_gets_json_that_fits() -> None:
    schema = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
    body = messages_request(tools=[], stream=False, output_config={"format": {"type": "json_schema", "schema": schema}})
    with ScriptedModelServer(SCRIPT) as srv:
        text = call(srv.url, "POST", "/v1/messages", body).json()["content"][0]["text"]
    assert json.loads(text) == {"title": "OK"}


def test_script_model_makes_other_models_side_requests() -> None:
    with ScriptedModelServer({**SCRIPT, "model": "sonnet"}) as srv:
        haiku = call(srv.url, "POST", "/v1/messages", messages_request(model="claude-haiku-4-5", stream=False))
        sonnet = call(srv.url, "POST", "/v1/messages", messages_request(stream=False))
    assert haiku.json()["content"] == [{"type": "text", "text": "OK"}]
    assert sonnet.json()["content"][0]["text"] == "I'll look around first."


def test_conversations_are_chosen_by_a_marker_in_the_first_user_message() -> None:
    script = {
        "conversations": [
            {"match": "[task-a]", "responses": [{"text": "A0"}, {"text": "A1"}]},
            {"match": "[task-b]", "responses": [{"text": "B0"}]},
        ],
        "fallback_text": "nobody",
    }
    with ScriptedModelServer(script) as srv:

        def say(*messages: Mapping[str, Any]) -> str:
            reply = call(srv.url, "POST", "/v1/messages", messages_request(*messages, stream=False)).json()
            return str(reply["content"][0]["text"])

        assert say(user("[task-b] do b")) == "B0"
        assert say(user("[task-a] do a")) == "A0"
        # Later turns stay in the conversation their opening matched, whatever they say.
        assert say(user("[task-a] do a"), assistant({"type": "text", "text": "A0"}), user("[task-b]?")) == "A1"
        assert say(user("no marker")) == "nobody"
        assert [r["answer"]["conversation"] for r in srv.requests] == [1, 0, 0, None]


def test_placeholders_cwd_session_and_unknown_names() -> None:
    script = {"responses": [{"text": "in {cwd} for {session} with {unknown} and {not a name}"}]}
    with ScriptedModelServer(script) as srv:
        reply = call(
            srv.url,
            "POST",
            "/v1/messages",
            messages_request(stream=False),
            {"x-claude-code-session-id": "sess-1234-5678"},
        )
        assert (
            reply.json()["content"][0]["text"] == "in /tmp/trial-7 for sess-1234-5678 with {unknown} and {not a name}"
        )
        codex = {
            "model": "m",
            "tools": [{"type": "function", "name": "shell"}],
            "input": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<cwd>/w/x</cwd>"}]},
            ],
        }
        text = call(srv.url, "POST", "/v1/responses", codex).json()["output"][0]["content"][0]["text"]
        assert text.startswith("in /w/x for {session}")
        reply = call(srv.url, "POST", "/v1/responses", codex, {"session-id": "thread-42"})
        assert reply.json()["output"][0]["content"][0]["text"].startswith("in /w/x for thread-42")
    with ScriptedModelServer({**script, "cwd": "/workspace"}) as srv:
        reply = call(srv.url, "POST", "/v1/messages", messages_request(stream=False))
        assert reply.json()["content"][0]["text"].startswith("in /workspace for {session}")


# --- OpenAI Responses ----------------------------------------------------------------------------------

SHELL_SCRIPT: dict[str, Any] = {
    "responses": [
        {
            "text": "Writing it.",
            "tool_calls": [{"name": "shell", "input": {"command": ["bash", "-lc", "echo hi > {cwd}/out.txt"]}}],
        },
        {"text": "Done."},
    ],
    "usage": {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 40},
}


def responses_request(*items: Mapping[str, Any], stream: bool = True, **extra: Any) -> dict[str, Any]:
    opening = [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are Codex."}]},
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "<environment_context>\n  <cwd>/ws</cwd>\n"}],
        },
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Create result.md"}]},
    ]
    tools = [{"type": "function", "name": "shell", "parameters": {"type": "object"}}]
    return {"model": "gpt-5-codex", "input": opening + list(items), "tools": tools, "stream": stream, **extra}


def test_responses_stream_with_function_call_and_completed_usage() -> None:
    with ScriptedModelServer(SHELL_SCRIPT) as srv:
        reply = call(srv.url, "POST", "/v1/responses", responses_request())
    assert reply.status == 200 and reply.headers["content-type"].startswith("text/event-stream")
    events = [data for _, data in reply.events()]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert all(name == data["type"] for name, data in reply.events())
    types = [e["type"] for e in events]
    assert types[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert types[-1] == "response.completed"
    assert types.index("response.content_part.added") < types.index("response.output_text.delta")
    assert types.index("response.output_text.done") < types.index("response.content_part.done")
    assert "response.function_call_arguments.delta" in types and "response.function_call_arguments.done" in types
    assert types.count("response.output_item.done") == 2
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert text == "Writing it."
    args = "".join(e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta")
    assert json.loads(args) == {"command": ["bash", "-lc", "echo hi > /ws/out.txt"]}

    final = events[-1]["response"]
    assert final["status"] == "completed" and final["model"] == "gpt-5-codex"
    message, fc = final["output"]
    assert message["type"] == "message" and message["content"][0]["text"] == "Writing it."
    assert fc["type"] == "function_call" and fc["name"] == "shell" and fc["arguments"] == args
    assert fc["call_id"].startswith("call_")
    usage = final["usage"]
    assert usage["input_tokens"] == 140 and usage["input_tokens_details"]["cached_tokens"] == 40
    assert usage["output_tokens"] == 20 and usage["total_tokens"] == 160


def test_responses_count_turns_from_items_and_answer_without_stream() -> None:
    with ScriptedModelServer(SHELL_SCRIPT) as srv:
        first = call(srv.url, "POST", "/v1/responses", responses_request(stream=False)).json()
        message, fc = first["output"]
        output = {"type": "function_call_output", "call_id": fc["call_id"], "output": "done"}
        second = call(srv.url, "POST", "/v1/responses", responses_request(message, fc, output, stream=False)).json()
        third = call(
            srv.url,
            "POST",
            "/v1/responses",
            responses_request(message, fc, output, *second["output"], {"role": "user", "content": "more"}),
        )
    assert first["object"] == "response" and first["status"] == "completed"
    assert second["output"][0]["content"][0]["text"] == "Done."
    assert [e for _, e in third.events()][-1]["response"]["output"][0]["content"][0]["text"] == "OK"


def test_responses_custom_tools_declared_in_additional_tools_get_custom_tool_calls() -> None:
    script = {"responses": [{"tool_calls": [{"name": "exec", "input": "await tools.exec_command({cmd: 'ls'})"}]}]}
    namespace = {"type": "namespace", "name": "functions", "tools": [{"type": "custom", "name": "exec"}]}
    body = responses_request(tools=None)
    body["input"].insert(0, {"type": "additional_tools", "role": "developer", "tools": [namespace]})
    with ScriptedModelServer(script) as srv:
        events = [e for _, e in call(srv.url, "POST", "/v1/responses", body).events()]
    item = events[-1]["response"]["output"][0]
    assert item["type"] == "custom_tool_call" and item["name"] == "exec"
    assert item["input"] == "await tools.exec_command({cmd: 'ls'})"
    deltas = "".join(e["delta"] for e in events if e["type"] == "response.custom_tool_call_input.delta")
    assert deltas == item["input"]


def test_interleaved_tool_calls_and_outputs_stay_in_one_turn() -> None:
    a, b = position_id(0, 0, 0), position_id(0, 0, 1)
    later = position_id(0, 1, 0)
    history = [
        HistoryItem(True, (f"call_{a}",)),
        HistoryItem(False),
        HistoryItem(True, (f"call_{b}",)),
        HistoryItem(False),
    ]
    assert count_turns(history, 0) == 1
    assert count_turns([*history, HistoryItem(True, (f"call_{later}",)), HistoryItem(False)], 0) == 2
    assert count_turns([HistoryItem(True, ("call_foreign",)), HistoryItem(False), HistoryItem(True, ("x",))], 0) == 2


# --- routes, log, errors -------------------------------------------------------------------------------


def test_other_routes_and_unknown_paths(server: ScriptedModelServer) -> None:
    parts = urlsplit(server.url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=5)
    try:  # one keep-alive connection for all of them
        assert call(server.url, "HEAD", "/", conn=conn).status == 200
        assert call(server.url, "GET", "/", conn=conn).json()["ok"] is True
        models = call(server.url, "GET", "/v1/models", conn=conn).json()
        assert models["object"] == "list" and models["data"][0]["id"]
        count = call(server.url, "POST", "/v1/messages/count_tokens", messages_request(), conn=conn).json()
        assert isinstance(count["input_tokens"], int) and count["input_tokens"] > 0
        missing = call(server.url, "POST", "/v2/complete", {"x": 1}, conn=conn)
        assert missing.status == 404 and missing.json()["error"]["type"] == "not_found_error"
        assert call(server.url, "GET", "/v1/messages", conn=conn).status == 404
        bad = call(server.url, "POST", "/v1/messages", b"{not json", conn=conn)
        assert bad.status == 400 and "not JSON" in bad.json()["error"]["message"]
        zipped = gzip.compress(json.dumps(messages_request(stream=False)).encode())
        ok = call(server.url, "POST", "/v1/messages", zipped, {"content-encoding": "gzip"}, conn=conn)
        assert ok.json()["content"][0]["text"] == "I'll look around first."
        broken = call(server.url, "POST", "/v1/messages", b"not gzip", {"content-encoding": "gzip"}, conn=conn)
        assert broken.status == 400 and "inflate" in broken.json()["error"]["message"]
        zstd = call(server.url, "POST", "/v1/messages", b"\x28\xb5", {"content-encoding": "zstd"}, conn=conn)
        assert zstd.status == 415
    finally:
        conn.close()
    assert [r["status"] for r in server.requests] == [200, 200, 200, 200, 404, 404, 400, 200, 400, 415]


def test_request_log_is_jsonl_with_secrets_redacted(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "requests.jsonl"
    secrets = {"x-api-key": "sk-ant-secret-1", "authorization": "Bearer sk-secret-2"}
    with ScriptedModelServer(SCRIPT, log_path=log) as srv:
        call(srv.url, "POST", "/v1/messages?beta=true", messages_request(stream=False), secrets)
        call(srv.url, "POST", "/v1/responses", responses_request(), {"Authorization": "Bearer sk-secret-3"})
        call(srv.url, "GET", "/nowhere")
        in_memory = srv.requests
    text = log.read_text()
    assert "sk-ant-secret-1" not in text and "sk-secret-2" not in text and "sk-secret-3" not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines == in_memory
    first = lines[0]
    assert first["method"] == "POST" and first["path"] == "/v1/messages?beta=true"
    assert first["headers"]["x-api-key"] == REDACTED and first["headers"]["authorization"] == REDACTED
    assert first["body"]["model"] == "claude-sonnet-4-5"
    assert first["answer"]["kind"] == "script" and first["answer"]["turn"] == 0
    assert [line["seq"] for line in lines] == [0, 1, 2]
    assert lines[2]["status"] == 404 and lines[2]["answer"] is None


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("fallback_text: OK\n", "give exactly one of `responses` and `conversations`"),
        ("responses: []\nconversations: []\n", "give exactly one of `responses` and `conversations`"),
        ("responses: []\nfalback_text: x\n", "falback_text: unknown key; allowed: conversations, cwd, fallback_text"),
        ("responses:\n  - tool_calls: [{input: {a: 1}}]\n", "responses[0].tool_calls[0].name: required key is missing"),
        (
            "responses:\n  - {text: hi, tool_calls: [{name: Bash, input: 3}]}\n",
            # One problem for the union's two alternatives, without pydantic's member tags in the key.
            "responses[0].tool_calls[0].input: expected a mapping or a string (got 3)",
        ),
        ("responses:\n  - {text: hi}\n  - {}\n", "responses[1]: a response needs `text`, `tool_calls` or `error`"),
        ("responses: []\nusage: {input_tokens: -1}\n", "usage.input_tokens"),
        ("conversations:\n  - {match: a}\n", "conversations[0].responses: required key is missing"),
        ("responses: [\n", "not valid YAML"),
        ("- just a list\n", "expected a mapping"),
    ],
)
def test_bad_script_files_name_the_file_and_the_key(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "script.yaml"
    path.write_text(content)
    with pytest.raises(ScriptError) as info:
        load_script(path)
    assert isinstance(info.value, LoadError)
    message = str(info.value)
    assert str(path) in message and expected in message, message


def test_a_missing_script_file_is_a_script_error(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="cannot read script"):
        load_script(tmp_path / "nope.yaml")
    with pytest.raises(ScriptError, match="<script>"):
        parse_script({"responses": "no"})


def test_cli_serves_in_the_foreground_and_prints_the_url(tmp_path: Path) -> None:
    script = tmp_path / "script.yaml"
    script.write_text("responses:\n  - text: hello\n")
    log = tmp_path / "log.jsonl"
    cmd = [sys.executable, "-m", "scaffold.modelserver", "--script", str(script), "--port", "0", "--log", str(log)]
    with subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:")
            reply = call(url, "POST", "/v1/messages", messages_request(stream=False))
            assert reply.json()["content"] == [{"type": "text", "text": "hello"}]
        finally:
            proc.terminate()
            proc.wait(timeout=5)
    assert json.loads(log.read_text().splitlines()[0])["answer"]["text"] == "hello"


def test_cli_reports_a_bad_script_and_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "bad.yaml"
    script.write_text("responses: 3\n")
    assert main(["--script", str(script)]) == 2
    err = capsys.readouterr().err
    assert str(script) in err and "responses" in err


def test_a_binary_script_is_an_error_naming_the_file(tmp_path: Path) -> None:
    script = tmp_path / "model.bin"
    script.write_bytes(b"\x00\xff\xfe\x00 not text")
    result = subprocess.run(
        [sys.executable, "-m", "scaffold.cli.main", "model-server", "--script", str(script)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == f"error: {script}: not valid YAML: not UTF-8 text (byte 1 cannot be decoded)"


def test_the_scripts_and_streams_from_the_real_clis_are_valid() -> None:
    data = REPO / "tests/data"
    for name in ("claude-code-basic", "codex-basic", "codex-exec-command"):
        assert load_script(data / "scripts" / f"{name}.yaml").all_conversations[0].responses
    for name in ("claude-code-basic", "codex-basic"):
        lines = (data / "streams" / f"{name}.jsonl").read_text().splitlines()
        events = [json.loads(line) for line in lines]
        assert events and all("type" in e for e in events)
        assert "/tmp/" not in "".join(lines)


def test_latency_holds_every_model_call_but_no_side_request(monkeypatch: pytest.MonkeyPatch) -> None:
    import scaffold.modelserver.server as server_module

    waited: list[float] = []
    monkeypatch.setattr(server_module.time, "sleep", waited.append)
    with ScriptedModelServer({**SCRIPT, "latency": 1.5}) as srv:
        call(srv.url, "POST", "/v1/messages", messages_request(model="claude-haiku-4-5", tools=[], stream=False))
        assert waited == []  # a side request (a title) is answered at once
        call(srv.url, "POST", "/v1/messages", messages_request(stream=False))
        call(srv.url, "POST", "/v1/responses", {"model": "gpt-5", "input": "hi", "tools": [{"type": "function"}]})
    assert waited == [1.5, 1.5]


def test_latency_waits_in_each_request_s_own_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    import scaffold.modelserver.server as server_module

    # Both calls must be waiting at the same moment: served one after the other, the barrier breaks.
    both = threading.Barrier(2, timeout=20)
    monkeypatch.setattr(server_module.time, "sleep", lambda seconds: both.wait())
    with ScriptedModelServer({**SCRIPT, "latency": 2}) as srv:
        replies: list[int] = []

        def one() -> None:
            replies.append(call(srv.url, "POST", "/v1/messages", messages_request()).status)

        calls = [threading.Thread(target=one) for _ in range(2)]
        for thread in calls:
            thread.start()
        for thread in calls:
            thread.join(30)
    assert replies == [200, 200]


@pytest.mark.parametrize("latency", ["-1", "nan", "601"])
def test_a_latency_out_of_range_is_refused(tmp_path: Path, latency: str, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "script.yaml"
    script.write_text(f"latency: {latency}\nresponses: []\n", encoding="utf-8")
    with pytest.raises(ScriptError, match="latency"):
        load_script(script)
    script.write_text("responses: []\n", encoding="utf-8")
    assert main(["--script", str(script), "--latency", latency.replace("nan", "-5")]) == 2
    assert "--latency" in capsys.readouterr().err

"""The judge end to end over its transports: the scripted model server over real HTTP, a fake CLI that
shows what environment the judge's process gets, failures, and a whole trial with the judge on."""

from __future__ import annotations

import http.server
import json
import os
import socket
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar
from urllib.parse import urlsplit

import pytest

from scaffold.catalog.builtin import BUILTIN_TASKS_DIR, BUILTIN_TREATMENTS_DIR
from scaffold.errors import AgentError, SelectionError
from scaffold.experiment.cases import Case
from scaffold.judge import JudgeRequest
from scaffold.judge.config import MODEL_REQUIRED, JudgeConfig
from scaffold.judge.transport import JudgeRun, check_judge
from scaffold.modelserver import ScriptedModelServer
from scaffold.modelserver.script import parse_script
from scaffold.rubrics import JUDGE_SOURCE, weighted_score
from scaffold.validation.results import ValidationOutcome
from scaffold.workspaces.files import HostFiles
from tests.support.factories import make_runner

ANSWER = (
    "[RUBRIC-JUDGE] task_completion: 0.9 - hello.py prints hello\n"
    "[RUBRIC-JUDGE] output_quality: 0.8 - tidy\n"
    "[RUBRIC-JUDGE] instruction_adherence: 1.0 - kept\n"
)
SUBJECT_KEY = "sk-subject-planted-0123456789"


def _request(tmp_path: Path) -> JudgeRequest:
    (tmp_path / "ws").mkdir(exist_ok=True)
    (tmp_path / "ws" / "hello.py").write_text("print('hello')\n")
    return JudgeRequest("Write hello.py", (), ValidationOutcome(), HostFiles(tmp_path / "ws"))


def _server(judge: dict[str, object]) -> ScriptedModelServer:
    """A scripted server answering the judge's requests with *judge*: they offer no tools, over HTTP and
    through Claude Code's CLI alike (the main conversation's response is there for a request with tools)."""
    return ScriptedModelServer(parse_script({"responses": [judge], "judge": judge}))


def test_http_transport_against_the_scripted_server(tmp_path: Path) -> None:
    with _server({"text": ANSWER}) as server:
        config = JudgeConfig("claude-code", "judge-model", server.url, api_key="judge-key")
        dims, info = JudgeRun(config, {}).judge(_request(tmp_path))
        sent = server.requests
    assert info.status == "enabled_and_successful" and info.transport == "http"
    assert [(d.name, d.score, d.source) for d in dims] == [
        ("task_completion", 0.9, JUDGE_SOURCE),
        ("output_quality", 0.8, JUDGE_SOURCE),
        ("instruction_adherence", 1.0, JUDGE_SOURCE),
    ]
    assert info.model == "judge-model" and info.input_tokens is not None and info.latency_s is not None
    assert len(sent) == 1 and "hello.py" in json.dumps(sent[0])


def test_http_500_is_failed_with_the_status(tmp_path: Path) -> None:
    with _server({"error": {"status": 500, "message": "boom"}}) as server:
        config = JudgeConfig("claude-code", "m", server.url, auth_token="t")
        dims, info = JudgeRun(config, {}).judge(_request(tmp_path))
    assert dims == () and info.status == "failed" and "HTTP 500" in info.reason


def test_unparseable_answer_is_failed(tmp_path: Path) -> None:
    with _server({"text": "I think it is fine."}) as server:
        dims, info = JudgeRun(JudgeConfig("claude-code", "m", server.url, api_key="k"), {}).judge(_request(tmp_path))
    assert dims == () and info.status == "failed" and info.reason.startswith("unparseable answer")


def test_http_timeout_is_failed(tmp_path: Path) -> None:
    with socket.socket() as listener:  # accepts connections, never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        config = JudgeConfig("claude-code", "m", url, api_key="k", timeout_s=0.3)
        dims, info = JudgeRun(config, {}).judge(_request(tmp_path))
    assert dims == () and info.status == "failed" and info.reason.startswith("timeout")


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Answers by path, keeping what each request sent: /ok a Messages answer, /tool one that also calls a
    tool, /text a page that is not JSON, /list JSON that is no Messages answer, /moved a redirect to /ok."""

    seen: ClassVar[list[tuple[str, dict[str, str], bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        self.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        route = urlsplit(self.path).path  # a proxy is sent the whole URL
        if route.startswith("/moved"):
            self.send_response(302)
            self.send_header("location", "/ok/v1/messages")
            self.send_header("content-length", "0")
            self.end_headers()
            return
        tool = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls /"}}
        reply = (
            json.dumps({"id": "msg-1", "content": [{"type": "text", "text": ANSWER}], "usage": {"input_tokens": 7}})
            if route.startswith("/ok")
            else json.dumps({"id": "msg-2", "content": [{"type": "text", "text": ANSWER}, tool]})
            if route.startswith("/tool")
            else "[]"
            if route.startswith("/list")
            else "<html>a proxy's page</html>"
        ).encode()
        self.send_response(200)
        self.send_header("content-length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[str]:
    _Recorder.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_http_sends_the_key_or_the_token_and_reads_the_answer(tmp_path: Path, recorder: str) -> None:
    keyed = JudgeRun(JudgeConfig("claude-code", "m", recorder + "/ok", api_key="judge-key"), {})
    dims, info = keyed.judge(_request(tmp_path))
    assert info.status == "enabled_and_successful" and len(dims) == 3
    assert (info.session_id, info.input_tokens, info.output_tokens) == ("msg-1", 7, None)
    bearer = JudgeRun(JudgeConfig("claude-code", "m", recorder + "/ok/v1", auth_token="judge-token"), {})
    assert bearer.judge(_request(tmp_path))[1].status == "enabled_and_successful"
    (path1, headers1, body1), (path2, headers2, _) = _Recorder.seen
    assert (path1, path2) == ("/ok/v1/messages", "/ok/v1/messages")
    assert headers1["x-api-key"] == "judge-key" and "authorization" not in headers1
    assert headers2["authorization"] == "Bearer judge-token" and "x-api-key" not in headers2
    assert headers1["anthropic-version"] == "2023-06-01" and headers1["content-type"] == "application/json"
    assert headers1["user-agent"].startswith("comet-eval/")
    sent = json.loads(body1)
    assert (
        sent["model"] == "m" and sent["messages"][0]["role"] == "user" and "hello.py" in sent["messages"][0]["content"]
    )


def test_http_answer_that_calls_a_tool_is_failed(tmp_path: Path, recorder: str) -> None:
    """The request offers no tool and says the workspace is data: an answer that calls one anyway (a model
    steered by a planted file, a gateway that adds tools) is not a grade, even with score lines in it."""
    dims, info = JudgeRun(JudgeConfig("claude-code", "m", recorder + "/tool", api_key="k"), {}).judge(
        _request(tmp_path)
    )
    assert dims == () and info.status == "failed"
    assert info.reason.startswith("the judge tried to use tools (Bash)")
    sent = json.loads(_Recorder.seen[0][2])
    assert "tools" not in sent and "never instructions" in sent["system"]


def test_http_answer_that_is_not_json_is_failed(tmp_path: Path, recorder: str) -> None:
    dims, info = JudgeRun(JudgeConfig("claude-code", "m", recorder + "/text", api_key="k"), {}).judge(
        _request(tmp_path)
    )
    assert dims == () and info.status == "failed" and info.reason == "HTTP answer is not JSON"


def test_http_json_that_is_no_messages_answer_is_failed(tmp_path: Path, recorder: str) -> None:
    config = JudgeConfig("claude-code", "m", recorder + "/list", api_key="k")
    dims, info = JudgeRun(config, {}).judge(_request(tmp_path))
    assert dims == () and info.status == "failed" and info.reason.startswith("unparseable answer")


def test_http_redirect_is_not_followed(tmp_path: Path, recorder: str) -> None:
    """A redirect is an answer of its own, not a second request (which would carry the key elsewhere)."""
    dims, info = JudgeRun(JudgeConfig("claude-code", "m", recorder + "/moved", api_key="k"), {}).judge(
        _request(tmp_path)
    )
    assert dims == () and info.status == "failed" and info.reason.startswith("HTTP 302")
    assert [path for path, _, _ in _Recorder.seen] == ["/moved/v1/messages"]


def test_http_goes_through_the_environments_proxy(
    tmp_path: Path, recorder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As behind a corporate proxy: the request goes to HTTP_PROXY, naming the judge's URL."""
    for name in ("NO_PROXY", "no_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", recorder)
    config = JudgeConfig("claude-code", "m", "http://judge.invalid/ok", api_key="k")
    dims, info = JudgeRun(config, {}).judge(_request(tmp_path))
    assert [path for path, _, _ in _Recorder.seen] == ["http://judge.invalid/ok/v1/messages"]
    assert info.status == "enabled_and_successful" and len(dims) == 3


def test_http_refused_connection_is_failed(tmp_path: Path) -> None:
    with socket.socket() as placeholder:  # a port nobody listens on
        placeholder.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{placeholder.getsockname()[1]}"
    dims, info = JudgeRun(JudgeConfig("claude-code", "m", url, api_key="judge-key"), {}).judge(_request(tmp_path))
    assert dims == () and info.status == "failed" and info.reason == "request failed: ConnectionRefusedError"
    assert "judge-key" not in info.reason


def test_missing_model_is_skipped_without_a_call(tmp_path: Path) -> None:
    with _server({"text": ANSWER}) as server:
        dims, info = JudgeRun(JudgeConfig("claude-code", None, server.url, api_key="k"), {}).judge(_request(tmp_path))
        assert server.requests == []
    assert dims == () and (info.status, info.reason) == ("skipped", MODEL_REQUIRED)


def _fake_claude(bin_dir: Path, body: str) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "claude"
    script.write_text("#!/usr/bin/env python3\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def test_cli_process_gets_no_subject_credential(tmp_path: Path) -> None:
    dump = tmp_path / "environ.json"
    _fake_claude(
        tmp_path / "bin",
        "import json, os, sys\n"
        "prompt = sys.stdin.read()\n"
        "seen = {'env': dict(os.environ), 'argv': sys.argv, 'cwd': os.getcwd(), 'ls': os.listdir('.')}\n"
        f"json.dump({{**seen, 'stdin': prompt}},"
        f" open({str(dump)!r}, 'w'))\n"
        f"print(json.dumps({{'type': 'result', 'subtype': 'success', 'result': {ANSWER!r}, 'session_id': 'js-1'}}))\n",
    )
    environ = {
        "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "ANTHROPIC_API_KEY": SUBJECT_KEY,
        "ANTHROPIC_BASE_URL": "http://subject.example",
        "ACME_LOGIN": SUBJECT_KEY,
        "GH_TOKEN": SUBJECT_KEY,
        "BENCH_JUDGE_API_KEY": "judge-key",
    }
    config = JudgeConfig("claude-code", "judge-model", None, api_key="judge-key")
    run = JudgeRun(config, environ, ("ACME_LOGIN",))
    dims, info = run.judge(_request(tmp_path))
    assert info.status == "enabled_and_successful" and info.transport == "cli" and info.session_id == "js-1"
    seen = json.loads(dump.read_text())
    assert SUBJECT_KEY not in json.dumps(seen["env"])
    assert seen["env"]["ANTHROPIC_API_KEY"] == "judge-key" and seen["env"]["ANTHROPIC_MODEL"] == "judge-model"
    assert "ANTHROPIC_BASE_URL" not in seen["env"]
    assert seen["env"]["HOME"] != os.environ.get("HOME") and Path(seen["cwd"]).name == "work"
    assert "hello.py" in seen["stdin"] and "hello.py" not in " ".join(seen["argv"])  # the prompt on stdin
    assert len(dims) == 3
    # No tool, nothing bypassed: the flags of Claude Code that leave the judge nothing to act with.
    argv = seen["argv"][1:]
    assert argv[argv.index("--tools") + 1] == "" and argv[argv.index("--permission-mode") + 1] == "dontAsk"
    assert "--strict-mcp-config" in argv and "--dangerously-skip-permissions" not in argv
    assert "IS_SANDBOX" not in seen["env"] and seen["ls"] == []  # an empty scratch folder


def test_samples_give_mean_and_spread(tmp_path: Path) -> None:
    counter = tmp_path / "calls"
    answers = [ANSWER, ANSWER.replace("0.9", "0.5")]
    _fake_claude(
        tmp_path / "bin",
        "import json, pathlib, sys\n"
        "sys.stdin.read()\n"
        f"c = pathlib.Path({str(counter)!r}); n = int(c.read_text()) if c.exists() else 0; c.write_text(str(n + 1))\n"
        f"print(json.dumps({{'type': 'result', 'subtype': 'success', 'result': {answers!r}[n % 2]}}))\n",
    )
    environ = {"PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    dims, info = JudgeRun(JudgeConfig("claude-code", "m", samples=2), environ).judge(_request(tmp_path))
    scores = {d.name: d.score for d in dims}
    assert scores["task_completion"] == pytest.approx(0.7)
    assert info.samples == 2 and info.spread["task_completion"] == pytest.approx(0.2)
    assert info.spread["output_quality"] == 0.0


def test_cli_timeout_is_failed(tmp_path: Path) -> None:
    _fake_claude(tmp_path / "bin", "import time\ntime.sleep(30)\n")
    environ = {"PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    dims, info = JudgeRun(JudgeConfig("claude-code", "m", timeout_s=0.5), environ).judge(_request(tmp_path))
    assert dims == () and info.status == "failed" and info.reason.startswith("timeout")


def test_a_tool_call_in_the_cli_stream_is_failed(tmp_path: Path) -> None:
    """The CLI refused the call (no tool is on) and went on to answer with scores: still not a grade."""
    call = {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/etc/hostname"}}
    events = [
        {"type": "assistant", "message": {"id": "m1", "content": [call]}},
        {"type": "assistant", "message": {"id": "m2", "content": [{"type": "text", "text": ANSWER}]}},
        {"type": "result", "subtype": "success", "result": ANSWER, "permission_denials": []},
    ]
    _fake_claude(tmp_path / "bin", f"import sys\nsys.stdin.read()\nprint({chr(10).join(map(json.dumps, events))!r})\n")
    environ = {"PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    dims, info = JudgeRun(JudgeConfig("claude-code", "m"), environ).judge(_request(tmp_path))
    assert dims == () and info.status == "failed" and info.reason.startswith("the judge tried to use tools (Read)")


def test_an_agent_that_cannot_judge_is_refused(tmp_path: Path) -> None:
    """Codex (or any agent but Claude Code) as the judge: refused before the session's first trial, and a
    judge built by hand fails each trial without starting it."""
    config = JudgeConfig("codex", "m", "http://127.0.0.1:9", api_key="k")
    with pytest.raises(SelectionError, match="judge agent 'codex': only claude-code can judge"):
        check_judge(config, {})
    dims, info = JudgeRun(config, {"PATH": os.environ["PATH"]}).judge(_request(tmp_path))
    assert dims == () and info.status == "failed" and info.reason.startswith("judge agent 'codex'")


def test_a_missing_judge_cli_is_found_before_any_trial(tmp_path: Path) -> None:
    """A judge that needs Claude Code's CLI, which is nowhere: a usage error naming the program, where it
    was looked for and how to install it or point at it. No CLI is needed for the Messages API, nor for a
    judge skipped for want of a model."""
    environ = {"PATH": str(tmp_path / "empty"), "COMET_EVAL_HOME": str(tmp_path / "home")}
    with pytest.raises(AgentError) as raised:
        check_judge(JudgeConfig("claude-code", "m", api_key="k"), environ)
    message = str(raised.value)
    assert "program 'claude' is not installed" in message and str(tmp_path / "empty") in message
    assert "comet agents install claude-code" in message and "$COMET_AGENT_BIN_DIR" in message
    check_judge(JudgeConfig("claude-code", "m", "http://judge", api_key="k"), environ)
    check_judge(JudgeConfig("claude-code", None), environ)


@pytest.mark.parametrize("answer", [ANSWER.replace("0.9", "0.0"), "unparseable"])
def test_trial_with_the_judge_keeps_the_rule_verdict(tmp_path: Path, answer: str) -> None:
    """A full trial (oracle agent, real validation) with the judge on: record.judge is written, the judge
    dimensions follow the rule ones, and neither a low score nor a failure changes verdict or score."""
    plain = make_runner([BUILTIN_TASKS_DIR], [BUILTIN_TREATMENTS_DIR], tmp_path / "plain")
    runner = make_runner([BUILTIN_TASKS_DIR], [BUILTIN_TREATMENTS_DIR], tmp_path / "judged")
    case = Case(_first_task(plain), "CONTROL", 1)
    before = plain.run(case).record
    with _server({"text": answer}) as server:
        runner.judge = JudgeRun(JudgeConfig("claude-code", "m", server.url, api_key="k"), {})
        record = runner.run(case).record
    assert record.judge is not None
    rule = [d for d in record.dimensions if d.source != JUDGE_SOURCE]
    # Same verdict as without the judge; the weighted score is the rule dimensions' alone (a rule score
    # may depend on timing, so the two runs' scores are not compared with each other).
    assert record.verdict == before.verdict == "passed"
    assert record.weighted_score == weighted_score(rule)
    assert [d.name for d in rule] == [d.name for d in before.dimensions]
    assert record.dimensions[: len(rule)] == tuple(rule)
    if answer == "unparseable":
        assert record.judge.status == "failed" and len(record.dimensions) == len(rule)
    else:
        assert record.judge.status == "enabled_and_successful"
        assert {d.name for d in record.dimensions[len(rule) :]} == {
            "task_completion",
            "output_quality",
            "instruction_adherence",
        }
    for trial_file in (tmp_path / "judged" / "logs").rglob("*.json"):
        assert '"k"' not in trial_file.read_text()


def _first_task(runner: object) -> str:
    names = runner.tasks.names()  # type: ignore[attr-defined]
    return "hello-world" if "hello-world" in names else sorted(n for n in names if n in runner.tasks.tasks)[0]  # type: ignore[attr-defined]


def test_a_comet_workflow_trial_gets_the_comet_judge_overlay(tmp_path: Path) -> None:
    """Under comet-workflow, with a change folder in the workspace, the judge also re-scores
    artifact_quality, spec_drift and main_flow from the change's documents: judge dimensions beside the rule
    ones of the same names, the rule scores and the verdict untouched."""
    from tests.support.factories import TaskFactory

    factory = TaskFactory(tmp_path / "suite")
    solve = (
        "mkdir -p openspec/changes/add-x && printf '# Proposal\\n\\nAdd x.\\n' > openspec/changes/add-x/proposal.md\n"
        "echo done > out.txt\n"
    )
    factory.task("comet-judged", solve=solve, metadata={"category": "comet"}, interaction={"mode": "none"})
    factory.write_index()
    answer = ANSWER + (
        "[RUBRIC-JUDGE] artifact_quality: 0.4 - the proposal is a stub\n"
        "[RUBRIC-JUDGE] spec_drift: 0.9 - no delta spec needed\n"
        "[RUBRIC-JUDGE] main_flow: 0.0 - only the open phase\n"
    )
    runner = make_runner([factory.tasks_dir], [factory.treatments_dir], tmp_path / "out")
    with _server({"text": answer}) as server:
        runner.judge = JudgeRun(JudgeConfig("claude-code", "m", server.url, api_key="k"), {})
        record = runner.run(Case("comet-judged", "CONTROL", 1)).record
    assert record.profile == "comet-workflow" and record.verdict == "passed"
    assert record.judge is not None and record.judge.status == "enabled_and_successful"
    judge = {d.name: d.score for d in record.dimensions if d.source == JUDGE_SOURCE}
    assert judge["artifact_quality"] == 0.4 and judge["main_flow"] == 0.0 and judge["spec_drift"] == 0.9
    assert judge["task_completion"] == 0.9
    rule = {d.name: d for d in record.dimensions if d.source != JUDGE_SOURCE}
    assert rule["artifact_quality"].score is None  # the baseline's rule score is N/A; the judge's stands apart
    assert record.weighted_score == weighted_score(tuple(rule.values()))

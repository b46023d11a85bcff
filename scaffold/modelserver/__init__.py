"""A scripted model server: the Anthropic Messages and OpenAI Responses APIs, answered from a script.

Agent CLIs (Claude Code, Codex) are pointed at it instead of a provider, so they can be driven in tests
and smoke runs without a network. Each model call of the main conversation is answered with the next
scripted response (text and tool calls, echoed in the provider's wire format); every request is logged.

Script (YAML)::

    responses:                       # one response per model call of the main conversation
      - text: "I'll look around first."
        tool_calls:
          - {name: Bash, input: {command: "ls -la {cwd}", description: list}}
      - tool_calls:
          - {name: Write, input: {file_path: "{cwd}/result.md", content: "# Result\\n"}}
      - text: "Done."
      - error: {status: 429, type: rate_limit_error, message: "slow down", times: 2}
        text: "served on the third call"   # optional: after `times` failed calls (none: fail forever)
    usage: {input_tokens: 100, output_tokens: 20}   # optional, per response; missing counts estimated
    fallback_text: "OK"              # side requests, unmatched conversations, after the script's end
    judge: {text: "[RUBRIC-JUDGE] task_completion: 0.9 - ..."}   # optional: tool-less judge requests
    cwd: /workspace                  # optional: overrides the working directory read from the request
    model: sonnet                    # optional: only requests whose model contains this are main
    latency: 2.0                     # optional: seconds before each model call is answered (not side requests)

or ``conversations: [{match: "marker in the first user message", responses: [...]}, ...]`` instead of
``responses`` to serve several tasks from one server (first match wins; ``match: ""`` matches all).

Rules:

* Main conversation = requests that carry a non-empty ``tools`` list (and match ``model`` when set).
  Any other request is a side request (Claude Code's title / topic / command-prefix calls, quota
  checks) and gets ``fallback_text`` without moving the script.
* Which response: stateless. The number of assistant turns already in the request picks
  ``responses[n]``; past the end the answer is ``fallback_text`` with ``end_turn``.
* Placeholders in any string: ``{cwd}`` (the script's ``cwd``, else the agent's working directory:
  Claude Code's "Working directory: ..." line, Codex's ``<cwd>...</cwd>``) and ``{session}`` (the
  agent's session id when the request carries one). Unknown ``{...}`` are left as they are.

Routes: ``POST /v1/messages`` (``stream`` true: SSE), ``POST /v1/messages/count_tokens``,
``POST /v1/responses`` (``stream`` true: SSE), ``GET /v1/models``, ``GET``/``HEAD /``; others 404.
Request log: one JSON line per request (method, path, headers with credentials redacted, body, status,
and what was answered and why).
"""

from __future__ import annotations

from scaffold.modelserver.script import (
    Conversation,
    Script,
    ScriptedError,
    ScriptedResponse,
    ScriptedToolCall,
    ScriptError,
    Usage,
    load_script,
    parse_script,
)
from scaffold.modelserver.server import REDACTED, ScriptedModelServer

__all__ = [
    "REDACTED",
    "Conversation",
    "Script",
    "ScriptError",
    "ScriptedError",
    "ScriptedModelServer",
    "ScriptedResponse",
    "ScriptedToolCall",
    "Usage",
    "load_script",
    "parse_script",
]

"""``comet model-server`` and ``comet trace-server``: the offline stand-ins for a model API and the tracing services."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["add_commands"]


def add_commands(commands: Any) -> None:
    """``comet model-server`` and ``comet trace-server``."""
    server = commands.add_parser(
        "model-server", help="serve a scripted model (Anthropic Messages and OpenAI Responses) for offline runs"
    )
    server.add_argument("--script", required=True, type=Path, help="the script file (YAML)")
    server.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    server.add_argument("--port", type=int, default=0, help="port (default: any free port)")
    server.add_argument("--log", type=Path, default=None, help="append one JSON line per request to this file")
    server.add_argument(
        "--latency", type=float, default=None, metavar="SECONDS", help="wait before answering each model call"
    )
    server.set_defaults(func=_model_server)

    from scaffold.traceserver.__main__ import add_arguments as trace_server_arguments

    trace_server = commands.add_parser(
        "trace-server", help="record what the LangSmith and Langfuse SDKs send, offline (a stand-in for both)"
    )
    trace_server_arguments(trace_server)
    trace_server.set_defaults(func=_trace_server)


def _model_server(args: argparse.Namespace) -> int:
    from scaffold.modelserver.__main__ import main as serve

    argv = ["--script", str(args.script), "--host", args.host, "--port", str(args.port)]
    if args.log:
        argv += ["--log", str(args.log)]
    if args.latency is not None:
        argv += ["--latency", str(args.latency)]
    return serve(argv)


def _trace_server(args: argparse.Namespace) -> int:
    from scaffold.traceserver.__main__ import serve

    return serve(args)

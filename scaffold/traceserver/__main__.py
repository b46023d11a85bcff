"""``python -m scaffold.traceserver`` (and ``comet trace-server``): record LangSmith and Langfuse traffic."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from scaffold.traceserver.failures import Failure, parse_delay, parse_failure
from scaffold.traceserver.server import TraceServer
from scaffold.util.httpserve import in_foreground

__all__ = ["add_arguments", "build_parser", "main", "serve"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options, shared by ``python -m scaffold.traceserver`` and ``comet trace-server``."""
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port (default: any free port)")
    parser.add_argument("--log", default=None, help="append one JSON line per request (credentials redacted)")
    parser.add_argument("--decoded", default=None, help="write the decoded view (JSON) to this file when stopped")
    parser.add_argument(
        "--fail",
        action="append",
        default=[],
        metavar="ROUTE=STATUS[xN]",
        help="answer ROUTE (a route name, a pattern such as 'langfuse.*' or '*', or a /path prefix) with "
        "STATUS, only the first N times with xN; repeatable",
    )
    parser.add_argument(
        "--delay",
        action="append",
        default=[],
        metavar="ROUTE=SECONDS[xN]",
        help="wait SECONDS before answering ROUTE, only the first N times with xN; repeatable",
    )
    parser.add_argument(
        "--no-multipart",
        action="store_true",
        help="tell LangSmith clients to use POST /runs/batch instead of POST /runs/multipart",
    )
    parser.add_argument(
        "--zstd", action="store_true", help="let LangSmith clients send zstd-compressed multipart bodies"
    )


def build_parser(prog: str = "python -m scaffold.traceserver") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Record what the LangSmith and Langfuse SDKs send, offline, with credentials redacted.",
    )
    add_arguments(parser)
    return parser


def _stop(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # SIGTERM (kill, a test's terminate()) stops like Ctrl-C: --decoded is written


def main(argv: Sequence[str] | None = None) -> int:
    """Run until interrupted; prints the base URL (one line, flushed) once listening. Returns the exit code."""
    return serve(build_parser().parse_args(argv))


def serve(args: argparse.Namespace) -> int:
    """Serve with parsed options (:func:`add_arguments`) until SIGINT or SIGTERM; 0, or 2 for a usage error."""

    def run() -> None:
        failures: list[Failure] = [parse_failure(s) for s in args.fail] + [parse_delay(s) for s in args.delay]
        server = TraceServer(
            args.host,
            args.port,
            multipart=not args.no_multipart,
            zstd=args.zstd,
            failures=failures,
            log_path=args.log,
            decoded_path=args.decoded,
        )

        def ready(url: str) -> None:
            print(url, flush=True)

        if threading.current_thread() is not threading.main_thread():  # signals go to the main thread only
            server.serve_forever(ready)
            return
        previous = signal.signal(signal.SIGTERM, _stop)
        try:
            server.serve_forever(ready)
        finally:
            signal.signal(signal.SIGTERM, previous)

    return in_foreground(run, args.host, args.port)


if __name__ == "__main__":
    sys.exit(main())

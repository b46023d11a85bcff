"""``python -m scaffold.modelserver --script FILE [--host H] [--port P] [--log FILE] [--latency S]``: serve in the
foreground."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from scaffold.errors import CometError
from scaffold.modelserver.script import load_script
from scaffold.modelserver.server import ScriptedModelServer
from scaffold.util.httpserve import in_foreground

__all__ = ["build_parser", "main"]


def build_parser(prog: str = "python -m scaffold.modelserver") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Serve the Anthropic Messages and OpenAI Responses APIs from a script, offline.",
    )
    parser.add_argument("--script", required=True, help="YAML script of responses")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port (default 0: any free port)")
    parser.add_argument("--log", default=None, help="append every request as one JSON line to this file")
    parser.add_argument(
        "--latency",
        type=float,
        default=None,
        metavar="SECONDS",
        help="wait this long before answering each model call (overrides the script's latency)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run until interrupted; prints the base URL (one line, flushed) once listening. Returns the exit code."""
    args = build_parser().parse_args(argv)

    def serve() -> None:
        script = load_script(args.script)
        if args.latency is not None:
            if not 0 <= args.latency <= 600:
                raise CometError("--latency must be between 0 and 600 seconds")
            script = script.model_copy(update={"latency": args.latency})
        server = ScriptedModelServer(script, host=args.host, port=args.port, log_path=args.log)
        server.serve_forever(lambda url: print(url, flush=True))

    return in_foreground(serve, args.host, args.port)


if __name__ == "__main__":
    sys.exit(main())

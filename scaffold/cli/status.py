"""``comet status``: where a run stands, read from its folder (from another shell too)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from scaffold.catalog.builtin import project_logs_dir

__all__ = ["add_commands"]


def add_commands(commands: Any) -> None:
    """``comet status EXPERIMENT...``."""
    status = commands.add_parser(
        "status",
        help="where a run stands: trials done, running (phase, turn), queued, elapsed, ETA, spend",
        description="Read an experiment folder while its trials run (or after): the records, the progress "
        "file of each running trial and the session's plan.json. Several folders (CI shards) are added up. "
        "Exit status 0; 2 when an EXPERIMENT is neither a folder nor an experiment under --logs-dir.",
    )
    status.add_argument(
        "experiments",
        nargs="+",
        metavar="EXPERIMENT",
        help="an experiment folder, or an experiment id under --logs-dir",
    )
    status.add_argument(
        "--logs-dir",
        type=Path,
        default=project_logs_dir(Path()),
        help="where experiment ids are looked up (default: local/logs)",
    )
    status.add_argument("--json", action="store_true", help="the figures as JSON, for scripts")
    status.set_defaults(func=_status)


def _status(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from scaffold.errors import SelectionError
    from scaffold.experiment import EXPERIMENT_ID
    from scaffold.experiment.status import read_status, status_json, status_line, status_view

    roots: list[Path] = []
    for given in args.experiments:
        folder = Path(given)
        by_id = args.logs_dir / "experiments" / given
        if folder.is_dir():
            roots.append(folder.absolute())
        elif EXPERIMENT_ID.match(given) and by_id.is_dir():
            roots.append(by_id.absolute())
        else:
            raise SelectionError(
                f"{given}: neither an experiment folder nor an experiment id under {args.logs_dir / 'experiments'} "
                "(pass the folder, or --logs-dir DIR)"
            )
    status = read_status(roots, datetime.now(UTC))
    if args.json:
        print(json.dumps(status_json(status), indent=2))
        return 0
    print(status_line(status))
    for line in status_view(status):
        print(line)
    return 0

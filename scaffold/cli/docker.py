"""``comet engines check`` and ``comet images list|aliases|build-base``: the Docker engines of a pool, the
offline stand-in images and what each task's FROM images map to."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from scaffold.workspaces.stand_ins import STAND_INS, ImageChoice, choose_image, version_text

__all__ = ["add_commands"]

RULE_EXAMPLES = (
    "python:3.9-slim",
    "python:3.11-slim",
    "python:3.12-slim",
    "python:3.13-slim",
    "python:3.14",
    "python:3.13-slim-bookworm",
    "python:3.11-slim-trixie",
    "python:3.10-bullseye",
    "ubuntu:22.04",
    "ubuntu:24.04",
    "ubuntu:25.04",
    "debian:11",
    "debian:12-slim",
    "debian:13.0-slim",
    "debian:stable-slim",
)
"""The images ``comet images aliases --rules`` shows the default rule on."""


def add_commands(commands: Any) -> None:
    """``comet engines check`` and ``comet images list|aliases|build-base``."""
    engines = commands.add_parser("engines", help="the Docker engines of a pool (docs/scale.md)")
    engine_commands = engines.add_subparsers(title="engines commands", metavar="COMMAND")
    check = engine_commands.add_parser(
        "check",
        help="for each engine: reachable, version, bind or copy mode, base and task images, capacity, and the "
        "round trip of one container; exit 1 when one is unreachable",
    )
    check.add_argument(
        "--docker-host",
        action="append",
        default=[],
        metavar="URL[*N]",
        help="an engine of the pool, repeatable (default: $COMET_DOCKER_HOSTS, else the pool file, else DOCKER_HOST)",
    )
    check.add_argument("--docker-pool", type=Path, metavar="FILE", help="a pool file of [[engines]] tables")
    check.add_argument("--json", action="store_true", help="one JSON object per engine, in a list")
    check.set_defaults(func=_engines_check)
    images = commands.add_parser("images", help="Docker images for the docker backend (default: images list)")
    images.set_defaults(func=_images_list, json=False)
    image_commands = images.add_subparsers(title="images commands", metavar="COMMAND")
    listing = image_commands.add_parser(
        "list", help="the stand-in images: Debian release, Python version, and whether the engine has them"
    )
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(func=_images_list)
    aliases = image_commands.add_parser(
        "aliases",
        help="what the docker backend builds each task's FROM images on: the image aliases, else the default "
        "stand-in; a stand-in with another Python than the image is named",
    )
    aliases.add_argument(
        "dirs", nargs="*", type=Path, metavar="DIR", help="tasks folder(s) (default: local/tasks, else the built-ins)"
    )
    aliases.add_argument("--image-alias", action="append", default=[], metavar="REF=LOCAL", help="as a session's")
    aliases.add_argument("--image-alias-file", type=Path, metavar="FILE", help="as a session's")
    aliases.add_argument("--rules", action="store_true", help="also the default rule, on example images")
    aliases.add_argument("--json", action="store_true", help="print JSON")
    aliases.set_defaults(func=_images_aliases)
    base = image_commands.add_parser(
        "build-base", help="build the base image offline from Debian packages (debootstrap + import)"
    )
    base.add_argument(
        "--release",
        default="bookworm",
        choices=[stand_in.release for stand_in in STAND_INS],
        help="Debian release: "
        + " or ".join(f"{s.release} (Python {version_text(s.python)})" for s in STAND_INS)
        + " (default: bookworm, our own tasks' base)",
    )
    base.add_argument("--tag", default=None, help="image tag (default: comet-eval/base:RELEASE)")
    base.add_argument("--mirror", default=None, help="Debian mirror URL (default: the one apt uses)")
    base.add_argument("--force", action="store_true", help="rebuild even when the tag exists")
    base.set_defaults(func=_images_build_base)


def _engines_check(args: argparse.Namespace) -> int:
    from concurrent.futures import ThreadPoolExecutor

    from scaffold.agents.credentials import load_environment
    from scaffold.session import default_workspace_root
    from scaffold.workspaces.docker.pool import check_engine
    from scaffold.workspaces.engines import default_engine, resolve_pool, total_capacity

    environ = load_environment()
    engines = list(resolve_pool(args.docker_host, args.docker_pool, environ)) or [default_engine(environ)]
    root = default_workspace_root().absolute()
    with ThreadPoolExecutor(max_workers=min(16, len(engines))) as pool:
        found = list(pool.map(lambda engine: check_engine(engine, root), engines))
    if args.json:
        print(json.dumps([c.to_json() for c in found], indent=2))
    else:
        for c in found:
            if not c.reachable:
                print(f"{c.engine.describe()}: UNREACHABLE: {c.problem}")
                continue
            base = ", ".join(c.base_images) or "none"
            missing = f" (missing: {', '.join(c.missing_base)})" if c.missing_base else ""
            trip = f"{c.round_trip_ms:.0f} ms" if c.round_trip_ms is not None else "not measured (no base image)"
            swept = f", swept {c.swept} left by dead sessions" if c.swept else ""
            tls = "on" if c.engine.tls else "off"
            print(f"{c.engine.describe()}: docker {c.version}, {c.mode or 'mode unknown'} mode, TLS {tls}")
            print(f"  base images {base}{missing}; {c.task_images} task images; {c.cpus} CPUs, {c.memory_gb:g} GB")
            print(f"  capacity {c.engine.capacity}; one container: {trip}{swept}")
        live = [c.engine for c in found if c.reachable]
        print(
            f"pool: {len(live)} of {len(found)} engines reachable, capacity {total_capacity(live)} "
            f"of {total_capacity(engines)}"
        )
    return 0 if all(c.reachable for c in found) else 1


def _images_build_base(args: argparse.Namespace) -> int:
    from scaffold.workspaces.docker.base_image import base_tag, build_base_image

    release = args.release
    image = build_base_image(args.tag or base_tag(release), mirror=args.mirror, suite=release, force=args.force)
    verb = "built" if image.built else "already present, reused"
    print(f"{image.tag} {verb} ({image.image_id[:19]}, {image.duration_s:.0f} s)")
    return 0


def _images_list(args: argparse.Namespace) -> int:
    from scaffold.errors import WorkspaceError
    from scaffold.workspaces.docker.engine import connect, image_id

    found: dict[str, str | None] = {}
    problem = ""
    try:
        client = connect()
    except WorkspaceError as exc:
        problem = str(exc)
    else:
        try:
            found = {s.tag: image_id(client, s.tag) for s in STAND_INS}
        finally:
            client.close()
    rows = [
        {
            "tag": s.tag,
            "release": s.release,
            "debian": s.debian,
            "python": version_text(s.python),
            "image_id": found.get(s.tag),
            "build": f"comet images build-base --release {s.release}",
        }
        for s in STAND_INS
    ]
    if args.json:
        print(json.dumps({"stand_ins": rows, "engine_problem": problem or None}, indent=2))
        return 0
    print(f"{'stand-in':<26} {'Debian':<14} {'Python':<7} on the engine")
    for row in rows:
        if problem:
            state = "unknown (no engine)"
        elif row["image_id"]:
            state = f"yes ({str(row['image_id'])[:19]})"
        else:
            state = f"missing: {row['build']}"
        debian = f"{row['debian']} ({row['release']})"
        print(f"{row['tag']:<26} {debian:<14} {row['python']:<7} {state}")
    if problem:
        print(f"engine: {problem}")
    pythons = ", ".join(str(row["python"]) for row in rows)
    print(
        f"Pythons served: {pythons}. An image with another Python maps to the nearest (3.12 to 3.11); "
        "`comet images aliases` names each such task."
    )
    return 0


def _images_aliases(args: argparse.Namespace) -> int:
    from scaffold.session import HarnessSession, Options

    options = Options(
        root=Path(),
        tasks_dirs=tuple(args.dirs),
        image_aliases=tuple(args.image_alias),
        image_alias_file=args.image_alias_file,
    )
    session = HarnessSession(options)
    by_task = session.image_choices()
    rows = _rows(by_task)
    rules = [c for c in (choose_image(ref, session.image_aliases()) for ref in RULE_EXAMPLES) if c is not None]
    if args.json:
        data: dict[str, Any] = {"images": rows}
        if args.rules:
            data["rules"] = [_plain(c) for c in rules]
        print(json.dumps(data, indent=2))
        return 0
    if rows:
        _table(rows)
    else:
        tasks, _ = session.catalogs()
        print(
            f"none of the {len(tasks.tasks)} tasks names an image with a stand-in or an alias: they build "
            "FROM ${BASE_IMAGE} (comet-eval/base:bookworm) or as written"
        )
    for row in rows:
        if row["mismatch"]:
            print(f"warning: {row['mismatch']} (tasks: {', '.join(row['tasks'])})")
    if args.rules:
        print("\nthe default rule (scaffold.workspaces.stand_ins), on example images:")
        _table([{**_plain(c), "tasks": []} for c in rules])
    return 0


def _plain(choice: ImageChoice) -> dict[str, Any]:
    return {
        "image": choice.image,
        "local": choice.local,
        "by": choice.by,
        "asks": version_text(choice.asks) if choice.asks else None,
        "serves": version_text(choice.serves) if choice.serves else None,
        "mismatch": choice.mismatch,
    }


def _rows(by_task: Mapping[str, Sequence[ImageChoice]]) -> list[dict[str, Any]]:
    """One row per (image, local image), with the tasks that name it, sorted by image."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for task, choices in sorted(by_task.items()):
        for choice in choices:
            row = rows.setdefault((choice.image, choice.local), {**_plain(choice), "tasks": []})
            row["tasks"].append(task)
    return [rows[key] for key in sorted(rows)]


def _table(rows: Sequence[Mapping[str, Any]]) -> None:
    width = max(len(str(r["image"])) for r in rows) + 2
    print(f"{'image':<{width}}{'builds on':<26}{'by':<10}{'Python':<14}tasks")
    for r in rows:
        python = str(r["asks"] or "?") if r["asks"] == r["serves"] else f"{r['asks'] or '?'} -> {r['serves'] or '?'}"
        tasks = ", ".join(r["tasks"][:4]) + (f" and {len(r['tasks']) - 4} more" if len(r["tasks"]) > 4 else "")
        print(f"{r['image']:<{width}}{r['local']:<26}{r['by']:<10}{python:<14}{tasks}")

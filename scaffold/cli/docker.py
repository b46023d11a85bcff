"""``comet engines check`` and ``comet images build-base``: the Docker engines of a pool, and the offline
base images."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

__all__ = ["add_commands"]


def add_commands(commands: Any) -> None:
    """``comet engines check`` and ``comet images build-base``."""
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
    images = commands.add_parser("images", help="Docker images for the docker backend")
    image_commands = images.add_subparsers(title="images commands", metavar="COMMAND")
    base = image_commands.add_parser(
        "build-base", help="build the base image offline from Debian packages (debootstrap + import)"
    )
    base.add_argument(
        "--release",
        default="bookworm",
        choices=("bookworm", "trixie"),
        help="Debian release: bookworm (Python 3.11, our own tasks' base) or trixie (Python 3.13) (default: bookworm)",
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

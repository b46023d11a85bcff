"""The pure parts of running a compose task (no engine): what the keeper starts beside itself, build
arguments written into a Dockerfile, when a service counts as ready, and what a sidecar is created with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scaffold.catalog.compose import Compose
from scaffold.catalog.compose_model import Build, Dependency, Healthcheck, Service, VolumeMount
from scaffold.workspaces.docker.compose import plan, unmet
from scaffold.workspaces.docker.compose_images import with_build_args
from scaffold.workspaces.docker.compose_main import MainContainer
from scaffold.workspaces.docker.keeper import HARBOR_COMMAND, NO_DNS, START, keeper_entrypoint, service_command


def api() -> Any:
    """A low-level client that never connects: building configs is all these tests ask of it."""
    import docker

    return docker.APIClient(base_url="unix:///nonexistent/docker.sock", version="1.41")


@pytest.mark.parametrize(
    ("entrypoint", "command", "started"),
    [
        ((), None, ()),  # no ENTRYPOINT: Harbor's sleep would only idle
        (("/entrypoint.sh",), None, ("/entrypoint.sh", *HARBOR_COMMAND)),  # Harbor's command after it
        (("/entrypoint.sh",), ("serve", "--port", "80"), ("/entrypoint.sh", "serve", "--port", "80")),
        ((), ("python3", "app.py"), ("python3", "app.py")),  # the compose file's command alone
    ],
)
def test_what_a_harbor_container_starts_beside_its_keeper(
    entrypoint: tuple[str, ...], command: tuple[str, ...] | None, started: tuple[str, ...]
) -> None:
    assert service_command(entrypoint, command) == started


def test_the_keepers_arguments() -> None:
    assert keeper_entrypoint(no_dns=False)[3:] == ["comet-keeper"]
    assert keeper_entrypoint(no_dns=True, start=["/e.sh", "x"])[3:] == ["comet-keeper", NO_DNS, START, "/e.sh", "x"]


def test_build_arguments_become_the_defaults_of_their_arg_lines() -> None:
    dockerfile = 'ARG BASE=python:3.12\nFROM $BASE\nARG PORT\narg  NAME="x y"\nARG A=1 B=2\nARG OTHER=keep\n'
    args = (("BASE", "comet-eval/base:trixie"), ("PORT", "80"), ("NAME", 'say "$hi" \\ bye'), ("A", "9"))
    assert with_build_args(dockerfile, args) == (
        'ARG BASE="comet-eval/base:trixie"\nFROM $BASE\nARG PORT="80"\narg  NAME="say \\"\\$hi\\" \\\\ bye"\n'
        "ARG A=1 B=2\nARG OTHER=keep\n"  # a line of several is left alone, as one not given
    )


@pytest.mark.parametrize(
    ("state", "condition", "why"),
    [
        ({"Status": "created"}, "service_started", ""),
        ({"Status": "running"}, "service_started", None),
        ({"Status": "exited", "ExitCode": 3}, "service_started", None),
        ({"Status": "running"}, "service_completed_successfully", ""),
        ({"Status": "exited", "ExitCode": 0}, "service_completed_successfully", None),
        ({"Status": "exited", "ExitCode": 2}, "service_completed_successfully", "exited with code 2"),
        ({"Status": "running", "Health": {"Status": "starting"}}, "service_healthy", ""),
        ({"Status": "running", "Health": {"Status": "healthy"}}, "service_healthy", None),
        ({"Status": "running", "Health": {"Status": "unhealthy"}}, "service_healthy", "is unhealthy"),
        ({"Status": "running"}, "service_healthy", "has no health check"),
        ({"Status": "running"}, "ready", None),
        ({"Status": "running", "Health": {"Status": "starting"}}, "ready", ""),
        ({"Status": "exited", "ExitCode": 0}, "ready", None),  # a one-shot that is done
        ({"Status": "exited", "ExitCode": 1}, "ready", "exited with code 1"),
        ({"Status": "restarting"}, "ready", ""),
    ],
)
def test_when_a_service_is_ready(state: dict[str, Any], condition: str, why: str | None) -> None:
    """None: met; "": not yet; else why it never will be."""
    found = unmet(state, condition)
    assert found == why if not why else found is not None and found.startswith(why)


def test_a_sidecar_is_created_on_the_trials_network_only_with_its_fields(tmp_path: Path) -> None:
    web = Service(
        "web",
        build=Build("web"),
        command=("python3", "-m", "http.server"),
        environment=(("A", "1"),),
        aliases=("www",),
        healthcheck=Healthcheck(("CMD", "true"), interval=2.0, retries=5),
        volumes=(VolumeMount("data", "/data"),),
        labels=(("comet-eval.session", "forged"), ("team", "x")),
        memory=256 * 1024**2,
        restart="on-failure:3",
        depends_on=(Dependency("db", "service_healthy"),),
    )
    compose = Compose(
        "docker-compose.yaml", Service("main", aliases=("app",)), (Service("db", image="x"), web), ("data",)
    )
    names = iter(["net-1", "vol-1", "db-1", "web-1"])
    project = plan(
        api(),
        compose,
        {"db": "img-db", "web": "img-web"},
        labels={"comet-eval.session": "s1"},
        name=lambda kind: next(names),
        environment_dir=tmp_path,
        pids_limit=512,
        task="t",
    )
    assert (project.network, project.volumes) == ("net-1", {"data": "vol-1"})
    _, sidecar = project.sidecars
    assert (sidecar.name, sidecar.image, sidecar.waits) == ("web-1", "img-web", web.depends_on)
    options = sidecar.options
    assert options["command"] == ["python3", "-m", "http.server"] and options["entrypoint"] is None
    assert options["labels"] == {"team": "x", "comet-eval.session": "s1", "comet-eval.service": "web"}
    assert options["healthcheck"] == {"test": ["CMD", "true"], "interval": 2_000_000_000, "retries": 5}
    assert options["networking_config"]["EndpointsConfig"] == {"net-1": {"Aliases": ["web", "www"]}}
    host = options["host_config"]
    assert host["NetworkMode"] == "net-1" and host["PidsLimit"] == 512 and host["Memory"] == 256 * 1024**2
    assert host["Mounts"][0]["Source"] == "vol-1" and host["Mounts"][0]["Target"] == "/data"
    assert host["RestartPolicy"] == {"Name": "on-failure", "MaximumRetryCount": 3}
    assert host["DnsOptions"] == ["timeout:1", "attempts:1"]

    main = MainContainer(project, compose.main, compose.addresses())
    assert main.networks("comet-eval-host-only") == ("comet-eval-host-only",) and main.networks("none") == ()
    proxied = main.environment({"HTTPS_PROXY": "http://10.0.0.1:3128", "NO_PROXY": "localhost"})
    assert proxied["NO_PROXY"] == proxied["no_proxy"] == "localhost,app,db,main,web,www"
    assert main.environment({"A": "1"}) == {"A": "1"}  # no proxy, nothing to add
    assert main.host_options(way_out=True)["dns_opt"] is None
    created = main.create_options(api())["networking_config"]["EndpointsConfig"]
    assert created == {"net-1": {"Aliases": ["main", "app"]}}

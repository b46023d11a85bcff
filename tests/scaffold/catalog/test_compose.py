"""A Harbor task's docker-compose.yaml read at load: Harbor's variables interpolated as Compose does, the
services read into the model the docker backend runs, and every field that cannot be honoured refused
with its name, before any trial (scaffold.catalog.compose)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scaffold.catalog.compose import Compose, load_compose, main_image_name, variables
from scaffold.catalog.compose_fields import FieldError, duration, size
from scaffold.catalog.compose_model import HOST_LOGS, Build, CopiedPath, Dependency, Healthcheck, VolumeMount
from scaffold.catalog.compose_service import REFUSED
from scaffold.catalog.compose_vars import InterpolationError, escape, interpolate
from scaffold.errors import Problem

NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
VALUES = st.text(st.characters(exclude_categories=("Cs",)), max_size=20)
WORDS = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="}"), max_size=20)
"""A default (or alternative) inside ``${...}``: the first ``}`` ends it, and nothing escapes one (as in Compose)."""


def load(
    tmp_path: Path, text: str, *, dockerfile: bool = True, env: dict[str, str] | None = None
) -> tuple[Compose | None, list[Problem], list[Problem]]:
    folder = tmp_path / "task" / "environment"
    folder.mkdir(parents=True, exist_ok=True)
    if dockerfile:
        (folder / "Dockerfile").write_text("FROM ubuntu:24.04\n")
    path = folder / "docker-compose.yaml"
    path.write_text(text)
    names = variables(task="task", environment_dir=folder, cpus=2, memory_mb=4096, env=env or {})
    return load_compose(path, variables=names, has_dockerfile=dockerfile)


def loaded(tmp_path: Path, text: str, **kwargs: object) -> Compose:
    compose, problems, _ = load(tmp_path, text, **kwargs)  # type: ignore[arg-type]
    assert problems == [] and compose is not None, problems
    return compose


def refused(tmp_path: Path, text: str) -> list[tuple[str, str]]:
    compose, problems, _ = load(tmp_path, text)
    assert compose is None
    return [(p.key, p.message) for p in problems]


# --- the cookbook's recipe ----------------------------------------------------------------------------


def test_harbors_multi_container_recipe(tmp_path: Path) -> None:
    (tmp_path / "task" / "environment" / "api-server").mkdir(parents=True)
    (tmp_path / "task" / "environment" / "api-server" / "Dockerfile").write_text("FROM python:3.12-slim\n")
    compose = loaded(
        tmp_path,
        """\
services:
  main:
    depends_on:
      api-server:
        condition: service_healthy
    volumes:
      - ${HOST_VERIFIER_LOGS_PATH}:${ENV_VERIFIER_LOGS_PATH}
      - ${HOST_AGENT_LOGS_PATH}:${ENV_AGENT_LOGS_PATH}
    deploy:
      resources:
        limits:
          cpus: ${CPUS}
          memory: ${MEMORY}
  api-server:
    build:
      context: ./api-server
    expose:
      - "5000"
    healthcheck:
      test: ["CMD", "python3", "-c", "print(1)"]
      interval: 2s
      timeout: 5s
      retries: 15
      start_period: 5s
""",
    )
    main = compose.main
    assert main.depends_on == (Dependency("api-server", "service_healthy"),)
    assert (main.cpus, main.memory) == (2.0, 4096 * 1024**2)  # Harbor's ${CPUS} and ${MEMORY}
    assert main.volumes == () and main.copies == ()  # the log folders are the backend's own /logs
    (api,) = compose.services
    assert api.build == Build("api-server", "Dockerfile")
    assert api.healthcheck == Healthcheck(("CMD", "python3", "-c", "print(1)"), 2.0, 5.0, 15, 5.0)
    assert compose.addresses() == ("api-server", "main")


def test_the_main_service_defaults_to_harbors_when_the_file_does_not_name_it(tmp_path: Path) -> None:
    compose = loaded(tmp_path, "services:\n  cache:\n    image: redis:7\n")
    assert compose.main.name == "main" and compose.main.build is None and compose.main.command is None
    assert compose.services[0].image == "redis:7"


# --- interpolation --------------------------------------------------------------------------------------


def test_harbors_variables_and_the_tasks_environment(tmp_path: Path) -> None:
    compose = loaded(
        tmp_path,
        """\
services:
  main:
    environment:
      TESTS: ${TEST_DIR}
      IMAGE: $MAIN_IMAGE_NAME
      PORT: ${PORT:-8080}
      TOKEN: ${TOKEN}
      LITERAL: $$HOME
      GIVEN:
""",
        env={"TOKEN": "from-task-toml", "GIVEN": "passed-through"},
    )
    env = dict(compose.main.environment)
    assert env == {
        "TESTS": "/tests",
        "IMAGE": main_image_name("task"),
        "PORT": "8080",
        "TOKEN": "from-task-toml",
        "LITERAL": "$HOME",
        "GIVEN": "passed-through",
    }


def test_an_unset_variable_is_empty_and_a_warning_never_this_machines_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COMET_TEST_SECRET", "s3cret")
    compose, problems, warnings = load(
        tmp_path, "services:\n  main:\n    environment:\n      A: x${COMET_TEST_SECRET}y\n"
    )
    assert problems == [] and compose is not None
    assert dict(compose.main.environment) == {"A": "xy"}
    assert [(w.key, w.message.split(":")[0]) for w in warnings] == [("${COMET_TEST_SECRET}", "not set")]


def test_a_required_variable_and_a_lone_dollar_are_problems_naming_the_field(tmp_path: Path) -> None:
    text = "services:\n  main:\n    command: echo ${NEEDED:?set NEEDED in [environment.env]} $(date)\n"
    problems = refused(tmp_path, text)
    assert problems == [("services.main.command", "${NEEDED} is required: set NEEDED in [environment.env]")]
    problems = refused(tmp_path, "services:\n  main:\n    command: echo $(date)\n")
    assert problems[0][0] == "services.main.command" and "write '$$'" in problems[0][1]


@given(st.text(st.characters(exclude_categories=("Cs",)), max_size=60))
def test_an_escaped_text_interpolates_to_itself(text: str) -> None:
    result = interpolate(escape(text), {})
    assert (result.text, result.unset) == (text, [])


@given(st.text(st.characters(exclude_categories=("Cs",), exclude_characters="$"), max_size=60))
def test_text_without_a_dollar_is_left_as_it_is(text: str) -> None:
    assert interpolate(text, {"A": "x"}).text == text


@given(NAMES, st.one_of(st.none(), VALUES), WORDS, VALUES, VALUES)
def test_each_form_of_a_variable(name: str, value: str | None, default: str, before: str, after: str) -> None:
    env = {} if value is None else {name: value}
    word = escape(default)
    pre, post = escape(before), escape(after)

    def run(template: str) -> str:
        return interpolate(pre + template + post, env).text

    assert run(f"${{{name}}}") == before + (value or "") + after
    assert run(f"${{{name}-{word}}}") == before + (default if value is None else value) + after
    assert run(f"${{{name}:-{word}}}") == before + (value or default) + after
    assert run(f"${{{name}+{word}}}") == before + ("" if value is None else default) + after
    assert run(f"${{{name}:+{word}}}") == before + (default if value else "") + after
    if value:
        assert run(f"${{{name}:?{word}}}") == before + value + after
    else:
        with pytest.raises(InterpolationError):
            interpolate(f"${{{name}:?{word}}}", env)
    assert interpolate(f"${{{name}}}", env).unset == ([name] if value is None else [])


@given(NAMES, WORDS, WORDS)
def test_defaults_nest(name: str, inner: str, outer: str) -> None:
    template = f"${{MISSING_{name}:-${{{name}:-{escape(inner)}}}{escape(outer)}}}"
    assert interpolate(template, {}).text == inner + outer
    assert interpolate(template, {name: "v"}).text == "v" + outer


# --- what is refused, each by its field ----------------------------------------------------------------


@pytest.mark.parametrize("key", sorted(REFUSED))
def test_a_field_that_cannot_be_honoured_is_refused_by_name(tmp_path: Path, key: str) -> None:
    problems = refused(tmp_path, f"services:\n  api:\n    image: redis\n    {key}: x\n")
    assert problems == [(f"services.api.{key}", REFUSED[key])]


@pytest.mark.parametrize(
    ("field", "words"),
    [
        ("healthcheck:\n      test: [CMD, 'true']", "agent's container"),
        ("cap_add: [NET_ADMIN]", "network rules"),
        ("read_only: true", "agent's workspace"),
        ("restart: always", "never restarted"),
    ],
)
def test_the_main_service_keeps_what_the_agents_container_needs(tmp_path: Path, field: str, words: str) -> None:
    ((key, message),) = refused(tmp_path, f"services:\n  main:\n    {field}\n")
    assert key == f"services.main.{field.partition(':')[0]}" and words in message


@pytest.mark.parametrize(
    ("text", "key", "words"),
    [
        ("include: [other.yaml]\nservices:\n  a:\n    image: x\n", "include", "one file"),
        ("secrets: {}\nservices:\n  a:\n    image: x\n", "secrets", "read-only"),
        ("services:\n  a:\n    image: x\n    frobnicate: 1\n", "services.a.frobnicate", "unknown key"),
        ("services:\n  a:\n    image: x\nnetworks:\n  n:\n    external: true\n", "networks.n.external", "external"),
        ("services:\n  a:\n    image: x\nvolumes:\n  v:\n    external: true\n", "volumes.v.external", "external"),
        ("services:\n  a:\n    image: x\nnetworks:\n  n:\n    ipam: {}\n", "networks.n.ipam", "fixed addresses"),
        (
            "services:\n  a:\n    image: x\n    networks:\n      n:\n        ipv4_address: 10.0.0.5\n"
            "networks:\n  n: {}\n",
            "services.a.networks.n.ipv4_address",
            "by name",
        ),
        ("services:\n  a:\n    image: x\n    networks: [other]\n", "services.a.networks.other", "not declared"),
        ("services:\n  a:\n    image: x\n    volumes: [data:/data]\n", "services.a.volumes[0]", "not declared"),
        ("services:\n  a:\n    image: x\n    volumes: [./conf:/conf]\n", "services.a.volumes[0]", "writable"),
        ("services:\n  a:\n    image: x\n    volumes: ['/etc:/host-etc:ro']\n", "services.a.volumes[0]", "outside"),
        ("services:\n  a:\n    image: x\n    volumes: ['../up:/up:ro']\n", "services.a.volumes[0]", "'..'"),
        (
            "services:\n  a:\n    image: x\n    volumes: ['${HOST_VERIFIER_LOGS_PATH}:/logs/verifier']\n",
            "services.a.volumes[0]",
            "main service's",
        ),
        ("services:\n  a:\n    image: x\n    cap_add: [SYS_ADMIN]\n", "services.a.cap_add", "privileged"),
        ("services:\n  a:\n    build: https://example.com/repo.git\n", "services.a.build.context", "remote"),
        ("services:\n  a:\n    build:\n      context: .\n      target: dev\n", "services.a.build.target", "context"),
        ("services:\n  a:\n    build: ./missing\n", "services.a.build.context", "no such folder"),
        ("services:\n  a:\n    image: x\n    deploy:\n      replicas: 3\n", "services.a.deploy.replicas", "one"),
        ("services:\n  a:\n    image: x\n    healthcheck:\n      test: nope-form\n      retries: 0\n", None, None),
    ],
)
def test_each_refusal_names_its_field(tmp_path: Path, text: str, key: str | None, words: str | None) -> None:
    (tmp_path / "task" / "environment" / "conf").mkdir(parents=True)
    problems = refused(tmp_path, text)
    if key is None:  # a value of the wrong shape: a problem too
        assert problems and all(k.startswith("services.a.healthcheck") for k, _ in problems), problems
        return
    assert [k for k, _ in problems] == [key], problems
    assert words is not None and words in problems[0][1]


def test_depends_on_cycles_unknown_services_and_the_main_service_are_refused(tmp_path: Path) -> None:
    problems = refused(
        tmp_path,
        """\
services:
  a:
    image: x
    depends_on: [b]
  b:
    image: x
    depends_on: [c]
  c:
    image: x
    depends_on: [a, nowhere]
  d:
    image: x
    depends_on: [main]
""",
    )
    assert ("services.a.depends_on", "depends_on makes a cycle: a -> b -> c -> a") in problems
    assert any(k == "services.c.depends_on.nowhere" and "no such service" in m for k, m in problems)
    assert any(k == "services.d.depends_on.main" and "starts last" in m for k, m in problems)


def test_sidecars_start_after_what_they_depend_on(tmp_path: Path) -> None:
    compose = loaded(
        tmp_path,
        """\
services:
  web:
    image: x
    depends_on:
      db: {condition: service_healthy}
      cache: {condition: service_started}
  db:
    image: x
    depends_on:
      migrate: {condition: service_completed_successfully}
  migrate:
    image: x
  cache:
    image: x
""",
    )
    assert [s.name for s in compose.services] == ["cache", "migrate", "db", "web"]
    assert compose.waited_for("db") == (Dependency("db", "service_healthy"),)


def test_the_fields_that_are_honoured(tmp_path: Path) -> None:
    folder = tmp_path / "task" / "environment"
    (folder / "web").mkdir(parents=True)
    (folder / "web" / "web.Dockerfile").write_text("ARG PORT=80\nFROM python:3.12-slim\n")
    (folder / "conf.txt").write_text("x\n")
    (folder / "app.env").write_text("# comment\nA=from-file\nB='quoted value'\n")
    compose = loaded(
        tmp_path,
        """\
services:
  main:
    environment: [A=inline]
    env_file: app.env
    working_dir: /srv/app
    user: "1000:1000"
    hostname: box
    volumes:
      - data:/data
      - ./conf.txt:/etc/app/conf.txt:ro
      - type: tmpfs
        target: /scratch
        tmpfs: {size: 64m}
    mem_limit: 1g
    cpus: "0.5"
    ulimits:
      nofile: {soft: 1024, hard: 2048}
      nproc: 512
    labels: {team: evals}
    extra_hosts: ["db.internal=10.1.2.3"]
    networks:
      default:
        aliases: [app]
  web:
    build:
      context: web
      dockerfile: web.Dockerfile
      args: {PORT: "8000"}
    entrypoint: ["python3", "-m"]
    command: http.server 8000
    init: true
    restart: on-failure:3
    shm_size: 128m
    stop_grace_period: 1m30s
    tmpfs: [/run, "/tmp:size=10m"]
    volumes: [data:/srv/data:ro, /cache]
volumes:
  data: {}
""",
    )
    main, (web,) = compose.main, compose.services
    assert dict(main.environment) == {"A": "inline", "B": "quoted value"}  # environment wins over env_file
    assert (main.working_dir, main.user, main.hostname, main.aliases) == ("/srv/app", "1000:1000", "box", ("app",))
    assert main.volumes == (VolumeMount("data", "/data"),)
    assert main.copies == (CopiedPath("conf.txt", "/etc/app/conf.txt"),)
    assert main.tmpfs == (("/scratch", f"size={64 * 1024**2}"),)
    assert (main.memory, main.cpus) == (1024**3, 0.5)
    assert main.ulimits == (("nofile", 1024, 2048), ("nproc", 512, 512))
    assert (main.labels, main.extra_hosts) == ((("team", "evals"),), (("db.internal", "10.1.2.3"),))
    assert web.build == Build("web", "web.Dockerfile", (("PORT", "8000"),))
    assert (web.entrypoint, web.command) == (("python3", "-m"), ("http.server", "8000"))
    assert (web.init, web.restart, web.shm_size) == (True, "on-failure:3", 128 * 1024**2)
    assert web.tmpfs == (("/run", ""), ("/tmp", "size=10m"))
    assert web.volumes == (VolumeMount("data", "/srv/data", read_only=True), VolumeMount(None, "/cache"))
    assert compose.volumes == ("data",)


def test_a_build_context_given_as_harbors_context_dir(tmp_path: Path) -> None:
    compose = loaded(tmp_path, "services:\n  main:\n    build:\n      context: ${CONTEXT_DIR}\n")
    assert compose.main.build == Build(".", "Dockerfile") and compose.main.build.default


def test_a_file_that_is_not_yaml_or_has_no_services(tmp_path: Path) -> None:
    assert refused(tmp_path, "services: [\n")[0][1].startswith("not valid YAML")
    assert refused(tmp_path, "version: '3'\n") == [("services", "expected a mapping of service names to services")]


@pytest.mark.parametrize(("text", "seconds"), [("2s", 2.0), ("1m30s", 90.0), ("500ms", 0.5), ("1h", 3600.0), (3, 3.0)])
def test_durations(text: object, seconds: float) -> None:
    assert duration(text) == seconds


@pytest.mark.parametrize(
    ("text", "bytes_"), [("64m", 64 * 1024**2), ("1g", 1024**3), ("512mb", 512 * 1024**2), (4096, 4096)]
)
def test_sizes(text: object, bytes_: int) -> None:
    assert size(text) == bytes_


@pytest.mark.parametrize("bad", ["2 seconds", "-1s", "", True])
def test_a_bad_duration(bad: object) -> None:
    with pytest.raises(FieldError):
        duration(bad)


def test_host_logs_stand_for_the_trials_folders() -> None:
    names = variables(task="t", environment_dir=Path("/x"), cpus=1, memory_mb=2048, env={})
    assert names["HOST_VERIFIER_LOGS_PATH"] == f"{HOST_LOGS}/verifier"
    assert names["ENV_VERIFIER_LOGS_PATH"] == "/logs/verifier"
    assert names["ENV_ARTIFACTS_PATH"] == "/logs/artifacts"
    assert (names["CPUS"], names["MEMORY"]) == ("1", "2048M")

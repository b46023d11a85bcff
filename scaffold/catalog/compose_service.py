"""One service of a compose file: its fields read and checked into a :class:`~.compose_model.Service`.

Honoured: ``build`` (a folder, or ``context``/``dockerfile``/``args``), ``image``, ``command``,
``entrypoint``, ``environment``, ``env_file``, ``working_dir``, ``user``, ``hostname``, ``depends_on``
(``service_started``, ``service_healthy``, ``service_completed_successfully``), ``healthcheck``, ``volumes``
(named volumes; read-only files of the environment folder, copied in; the trial's log folders), ``tmpfs``,
``shm_size``, ``cap_add``/``cap_drop``, ``init``, ``ulimits``, ``labels``, ``extra_hosts``, ``read_only``,
``restart``, the limits (``deploy.resources.limits``, ``mem_limit``, ``cpus``, ``pids_limit``), ``networks``
(every network is the trial's one; ``aliases``). Accepted with no effect: ``expose`` (every port of a
service is reachable on the trial's network), ``stop_grace_period`` (a trial's containers are killed, not
stopped), ``pull_policy`` (nothing is pulled but a missing base image, as for a Dockerfile), ``platform``
(checked against the engine's), ``tty``/``stdin_open``, ``deploy.resources.reservations``, ``x-*``.

Refused, with why (:data:`REFUSED`): what would reach beyond the trial (published ports, the host's
namespaces or devices, privileged mode, fixed names, external objects, writable folders of this
machine) or what this runner does not do (extends, profiles, secrets, configs). Unknown keys too.
On the main service (the agent's container) also: ``healthcheck``, ``cap_add``, ``read_only``, ``restart``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from scaffold.catalog.compose_fields import (
    FieldError,
    absolute,
    argv,
    cpus,
    duration,
    mapping,
    pairs,
    scalar,
    size,
    strings,
    text,
)
from scaffold.catalog.compose_files import Files
from scaffold.catalog.compose_model import Dependency, Healthcheck, Service
from scaffold.errors import Problem

__all__ = ["REFUSED", "Reader"]

REFUSED: Final = {
    "ports": "publishing a port on this machine breaks the trial's isolation: services reach each other on the "
    "trial's network without it (expose, or nothing)",
    "privileged": "a privileged container controls the engine's host",
    "network_mode": "the services share the trial's network and the main service has the agent's: another "
    "network mode cannot be honoured",
    "pid": "sharing another process namespace breaks the trial's isolation",
    "ipc": "sharing another IPC namespace breaks the trial's isolation",
    "userns_mode": "sharing the host's user namespace breaks the trial's isolation",
    "uts": "sharing the host's UTS namespace breaks the trial's isolation",
    "cgroup": "sharing the host's cgroup namespace breaks the trial's isolation",
    "cgroup_parent": "a trial's containers stay in the engine's own cgroup",
    "devices": "the host's devices are not given to a trial",
    "device_cgroup_rules": "the host's devices are not given to a trial",
    "gpus": "GPUs are not supported",
    "security_opt": "security options are not supported (they loosen the container's confinement)",
    "sysctls": "sysctls are not supported",
    "extends": "not supported: write the service out in full",
    "profiles": "not supported: every service of the file runs",
    "secrets": "not supported: put the file in the environment folder and mount it read-only",
    "configs": "not supported: put the file in the environment folder and mount it read-only",
    "container_name": "a fixed name would be shared by every trial: the service's name is its address",
    "links": "not needed: every service reaches the others by name",
    "external_links": "containers outside the trial are not reachable",
    "volumes_from": "not supported: share a named volume instead",
    "dns": "the trial's network has its own resolver: custom DNS servers are not supported",
    "dns_search": "not supported",
    "dns_opt": "not supported",
    "domainname": "not supported",
    "mac_address": "not supported",
    "scale": "one container per service",
    "runtime": "the engine's default runtime only",
    "isolation": "not supported",
    "storage_opt": "not supported",
    "oom_kill_disable": "not supported",
    "oom_score_adj": "not supported",
    "group_add": "not supported",
}
_MAIN_REFUSED: Final = {
    "healthcheck": "the main service is the agent's container and is ready when its keeper is: put the "
    "healthcheck on the service it waits for",
    "cap_add": "the main service is the agent's container: a capability added there could undo its network rules",
    "read_only": "the main service is the agent's container: its file system is the agent's workspace",
}
_ACCEPTED: Final = {"expose", "stop_grace_period", "pull_policy", "platform", "tty", "stdin_open"}
_CONDITIONS: Final = ("service_started", "service_healthy", "service_completed_successfully")
_NO_CAPABILITIES: Final = ("ALL", "SYS_ADMIN", "CAP_SYS_ADMIN")


class Reader:
    """Reads the services of the compose file *path*: *variables* give a value to names listed without
    one (``environment: [NAME]``, build ``args``); *networks* and *volumes* are the top-level declared ones.
    Problems collect in :attr:`problems`, each naming its field."""

    def __init__(self, path: Path, variables: Mapping[str, str], *, networks: set[str], volumes: set[str]) -> None:
        self.path = path
        self.variables = variables
        self.networks = networks
        self.problems: list[Problem] = []
        self.files = Files(path.parent, self.problem, variables, volumes)
        self._readers: dict[str, Callable[[object, str, dict[str, Any]], None]] = {
            "build": self.files.build,
            "image": self._image,
            "command": self._command,
            "entrypoint": self._entrypoint,
            "environment": self._environment,
            "env_file": self.files.env_file,
            "working_dir": self._working_dir,
            "user": self._user,
            "hostname": self._hostname,
            "depends_on": self._depends_on,
            "healthcheck": self._healthcheck,
            "networks": self._networks,
            "volumes": self.files.volumes,
            "tmpfs": self._tmpfs,
            "shm_size": self._shm_size,
            "cap_add": self._cap_add,
            "cap_drop": self._cap_drop,
            "init": self._init,
            "read_only": self._read_only,
            "restart": self._restart,
            "mem_limit": self._mem_limit,
            "cpus": self._cpus,
            "pids_limit": self._pids_limit,
            "deploy": self._deploy,
            "ulimits": self._ulimits,
            "labels": self._labels,
            "extra_hosts": self._extra_hosts,
        }

    def problem(self, key: str, message: str, value: object = None) -> None:
        self.problems.append(
            Problem(self.path, message, key) if value is None else Problem(self.path, message, key, value)
        )

    def service(self, name: str, body: object) -> Service | None:
        """The service *name*, or None when its body is not a mapping (a problem then)."""
        where = f"services.{name}"
        if body is None:
            body = {}
        if not isinstance(body, Mapping):
            self.problem(where, "expected a mapping", body)
            return None
        main = self.files.main = name == "main"
        fields: dict[str, Any] = {}
        for key, value in body.items():
            key = str(key)
            at = f"{where}.{key}"
            if key.startswith("x-") or key in _ACCEPTED:
                self._accepted(key, value, at, fields)
                continue
            refused = (_MAIN_REFUSED.get(key) if main else None) or REFUSED.get(key)
            if refused is not None:
                self.problem(at, refused)
                continue
            reader = self._readers.get(key)
            if reader is None:
                self.problem(at, "unknown key (or one this runner does not support)")
                continue
            try:
                reader(value, at, fields)
            except FieldError as exc:
                self.problem(at, str(exc), value)
        if main and fields.get("restart", "no") != "no":
            self.problem(f"{where}.restart", "the main service is the agent's container: it is never restarted")
        return Service(name, **fields)

    # -- accepted with no effect, or checked later

    def _accepted(self, key: str, value: object, at: str, fields: dict[str, Any]) -> None:
        try:
            if key == "platform":
                fields["platform"] = scalar(value)
            elif key in ("tty", "stdin_open"):
                fields[key] = bool(value)
            elif key == "stop_grace_period":
                duration(value)
            elif key == "expose":
                strings(value)
        except FieldError as exc:
            self.problem(at, str(exc), value)

    # -- each honoured key: (value, its field, the fields so far) -> into the fields; the file fields: Files

    def _image(self, value: object, at: str, fields: dict[str, Any]) -> None:
        fields["image"] = text(value, "expected an image reference")

    def _command(self, value: object, at: str, fields: dict[str, Any]) -> None:
        fields["command"] = argv(value)

    def _entrypoint(self, value: object, at: str, fields: dict[str, Any]) -> None:
        fields["entrypoint"] = argv(value)

    def _environment(self, value: object, at: str, fields: dict[str, Any]) -> None:
        env = dict(fields.get("environment", ()))  # env_file's, when it came first: these win
        for name, item in pairs(value):
            item = item if item is not None else self.variables.get(name)
            if item is not None:
                env[name] = item
        fields["environment"] = tuple(env.items())

    def _working_dir(self, value: object, at: str, fields: dict[str, Any]) -> None:
        fields["working_dir"] = absolute(value)

    def _user(self, value: object, at: str, fields: dict[str, Any]) -> None:
        fields["user"] = scalar(value)

    def _hostname(self, value: object, at: str, fields: dict[str, Any]) -> None:
        fields["hostname"] = text(value, "expected a host name")

    def _depends_on(self, value: object, at: str, fields: dict[str, Any]) -> None:
        deps: list[Dependency] = []
        if isinstance(value, list):
            deps = [Dependency(text(v, "expected service names")) for v in value]
        else:
            for name, body in mapping(value).items():
                body = mapping(body or {})
                condition = body.get("condition", "service_started")
                if condition not in _CONDITIONS:
                    self.problem(f"{at}.{name}.condition", f"expected one of {', '.join(_CONDITIONS)}", condition)
                    continue
                for key in sorted(set(map(str, body)) - {"condition", "required", "restart"}):
                    self.problem(f"{at}.{name}.{key}", "not supported; allowed: condition, required, restart")
                deps.append(Dependency(str(name), str(condition), body.get("required", True) is not False))
        fields["depends_on"] = tuple(deps)

    def _healthcheck(self, value: object, at: str, fields: dict[str, Any]) -> None:
        body = mapping(value)
        if body.get("disable") is True:
            fields["healthcheck"] = Healthcheck(("NONE",))
            return
        test: tuple[str, ...] | None = None
        if "test" in body:
            raw = body["test"]
            test = ("CMD-SHELL", raw) if isinstance(raw, str) else argv(raw)
            if not test or test[0] not in ("CMD", "CMD-SHELL", "NONE"):
                raise FieldError("test: expected a string, or a list starting with CMD, CMD-SHELL or NONE")
        for key in sorted(set(map(str, body)) - {"test", "interval", "timeout", "retries", "start_period", "disable"}):
            self.problem(
                f"{at}.{key}", "not supported; allowed: test, interval, timeout, retries, start_period, disable"
            )
        retries = body.get("retries")
        if retries is not None and (not isinstance(retries, int) or isinstance(retries, bool) or retries < 1):
            raise FieldError("retries: expected a whole number of at least 1")
        times = {k: duration(body[k]) for k in ("interval", "timeout", "start_period") if body.get(k) is not None}
        fields["healthcheck"] = Healthcheck(test, retries=retries, **times)

    def _networks(self, value: object, at: str, fields: dict[str, Any]) -> None:
        entries = dict.fromkeys(map(str, value)) if isinstance(value, list) else mapping(value)
        aliases: list[str] = []
        for name, body in entries.items():
            if name != "default" and name not in self.networks:
                self.problem(f"{at}.{name}", "not declared under the top-level networks")
            for key, item in mapping(body or {}).items():
                if key == "aliases":
                    aliases.extend(strings(item))
                elif key != "priority":
                    self.problem(
                        f"{at}.{name}.{key}", "not supported (fixed addresses): services reach each other by name"
                    )
        fields["aliases"] = tuple(dict.fromkeys(aliases))

    def _tmpfs(self, value: object, at: str, fields: dict[str, Any]) -> None:
        entries = [e.partition(":") for e in strings(value)]
        fields["tmpfs"] = (*fields.get("tmpfs", ()), *((absolute(p), o) for p, _, o in entries))

    def _shm_size(self, value: object, at: str, fields: dict[str, Any]) -> None:
        fields["shm_size"] = size(value)

    def _cap_add(self, value: object, at: str, fields: dict[str, Any]) -> None:
        caps = strings(value)
        if any(c.upper() in _NO_CAPABILITIES for c in caps):
            raise FieldError("ALL and SYS_ADMIN make the container as good as privileged: not supported")
        fields["cap_add"] = caps

    def _cap_drop(self, value: object, at: str, fields: dict[str, Any]) -> None:
        fields["cap_drop"] = strings(value)

    def _init(self, value: object, at: str, fields: dict[str, Any]) -> None:
        if not isinstance(value, bool):
            raise FieldError("expected true or false")
        fields["init"] = value

    def _read_only(self, value: object, at: str, fields: dict[str, Any]) -> None:
        if not isinstance(value, bool):
            raise FieldError("expected true or false")
        fields["read_only"] = value

    def _restart(self, value: object, at: str, fields: dict[str, Any]) -> None:
        text = scalar(value)
        if text not in ("no", "always", "unless-stopped", "on-failure") and not text.startswith("on-failure:"):
            raise FieldError("expected no, always, unless-stopped, on-failure or on-failure:N")
        fields["restart"] = text

    def _mem_limit(self, value: object, at: str, fields: dict[str, Any]) -> None:
        fields["memory"] = min(size(value), fields.get("memory") or size(value))

    def _cpus(self, value: object, at: str, fields: dict[str, Any]) -> None:
        fields["cpus"] = cpus(value)

    def _pids_limit(self, value: object, at: str, fields: dict[str, Any]) -> None:
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise FieldError("expected a whole number of at least 1")
        fields["pids"] = value

    def _deploy(self, value: object, at: str, fields: dict[str, Any]) -> None:
        body = mapping(value)
        for key in sorted(set(map(str, body)) - {"resources", "replicas"}):
            self.problem(f"{at}.{key}", "not supported; deploy takes resources (and replicas: 1)")
        if body.get("replicas", 1) != 1:
            self.problem(f"{at}.replicas", "one container per service", body.get("replicas"))
        resources = mapping(body.get("resources") or {})
        for key in sorted(set(map(str, resources)) - {"limits", "reservations"}):
            self.problem(f"{at}.resources.{key}", "not supported; resources take limits and reservations")
        limits = mapping(resources.get("limits") or {})
        for key, item in limits.items():
            if key == "cpus":
                fields["cpus"] = cpus(item)
            elif key == "memory":
                self._mem_limit(item, f"{at}.resources.limits.memory", fields)
            elif key == "pids":
                self._pids_limit(item, f"{at}.resources.limits.pids", fields)
            else:
                self.problem(f"{at}.resources.limits.{key}", "not supported; limits take cpus, memory and pids")

    def _ulimits(self, value: object, at: str, fields: dict[str, Any]) -> None:
        out: list[tuple[str, int, int]] = []
        for name, item in mapping(value).items():
            if isinstance(item, int) and not isinstance(item, bool):
                out.append((str(name), item, item))
                continue
            body = mapping(item)
            soft, hard = body.get("soft"), body.get("hard")
            if (
                not isinstance(soft, int)
                or not isinstance(hard, int)
                or isinstance(soft, bool)
                or isinstance(hard, bool)
            ):
                raise FieldError(f"{name}: expected a number, or soft and hard numbers")
            out.append((str(name), soft, hard))
        fields["ulimits"] = tuple(out)

    def _labels(self, value: object, at: str, fields: dict[str, Any]) -> None:
        fields["labels"] = tuple((k, v or "") for k, v in pairs(value))

    def _extra_hosts(self, value: object, at: str, fields: dict[str, Any]) -> None:
        hosts = pairs(value, separators="=:")
        if any(v is None for _, v in hosts):
            raise FieldError("expected HOST=ADDRESS (or HOST:ADDRESS) entries")
        fields["extra_hosts"] = tuple((k, str(v)) for k, v in hosts)

    # -- paths

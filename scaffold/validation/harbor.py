"""A Harbor-format task's verifier: ``tests/`` at ``/tests``, ``bash /tests/test.sh``, then its reward.

Harbor's runtime contract (HARBOR_FORMAT.md), in the agent's container once the agent is done (the
trial runner began validation with the ``shared`` policy: what the agent started still runs):

1. ``/logs/verifier`` is emptied and made (whatever the agent left there is not a verdict), beside
   ``/logs/agent`` and ``/logs/artifacts``;
2. where the verifier bootstraps ``uv`` from the internet, a local stand-in is put in place first
   (:func:`uv_shim_needed`): this project's machines reach the package registries, not astral.sh;
3. ``tests/`` goes to ``/tests`` only now, and ``bash /tests/test.sh`` runs from the working directory
   with ``[verifier.env]`` and ``[verifier] timeout_sec``;
4. the reward: ``/logs/verifier/reward.txt`` first, else ``reward.json``; the tests of every CTRF
   report it wrote (``ctrf.json``, and a second one such as ``ctrf_performance.json``) become named
   checks (:func:`ctrf_checks`). No reward file, or an empty one, after a verifier that ran to its end is a harness
   error (:class:`~scaffold.errors.VerifierError`), never a failure; a verifier that ran out of time
   without a reward is a failed check, as a script of ours would be.

Pure: everything goes through the Workspace contract; the files are read from the trial's folder.
"""

from __future__ import annotations

import io
import json
import math
import tarfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import msgspec

from scaffold.catalog.tasks import Task
from scaffold.errors import VerifierError
from scaffold.validation.results import CheckStatus, ValidationCheck, ValidationOutcome
from scaffold.workspaces.base import Workspace

__all__ = [
    "CTRF_FILE",
    "LOGS_SCRIPT",
    "UVX_NOTES",
    "UV_DIR",
    "UV_SETUP",
    "ctrf_checks",
    "is_ctrf_file",
    "parse_ctrf",
    "parse_reward",
    "reward_of",
    "uv_shim_needed",
    "uvx_checks",
    "verify",
]

UV_DIR: Final = "/opt/comet-uv"
"""Where the stand-in's ``uv`` and ``uvx`` binaries go in the container."""
UVX_NOTES: Final = "comet-uvx-python.txt"
"""The file of ``/logs/verifier`` where the stand-in's uvx notes each Python it served instead of the one
asked for (the path is also written out in UV_SETUP)."""
LOGS_SCRIPT: Final = "rm -rf /logs/verifier && mkdir -p /logs/verifier /logs/agent /logs/artifacts"
_COLLECT: Final = "cd /logs/verifier && tar cf - --exclude=./.. . 2>/dev/null"
_LOG_LIMIT: Final = 32 * 1024 * 1024
"""What the verifier's folder may hold for the trial's record folder; more is cut (named in a check)."""

# The stand-in, as the uv installer leaves things: uv and uvx in ~/.local/bin and an env file that puts
# it on PATH (``source $HOME/.local/bin/env``). uvx's ``-p/--python VERSION`` names an interpreter that
# uv would download (python-build-standalone, from GitHub) when the image lacks it: the wrapper keeps
# the request when such a Python is installed and otherwise uses the image's python3, which is what an
# offline run can do. That drift is written to UVX_NOTES ("uvx asked for Python 3.13, got 3.11.2"), which
# the trial's record keeps as a skipped check (:func:`uvx_checks`). The installer's own line,
# ``curl -LsSf https://astral.sh/uv/0.9.x/install.sh | sh``, would fail offline and end a verifier that
# runs under ``set -euo pipefail`` (SkillsBench's manufacturing tasks) before it wrote a reward: a
# ``curl`` in /usr/local/bin (ahead of the real one on PATH; only where the image has none there) answers
# astral.sh's URL with an installer that does nothing, online too, so the verifier gets one uv either way.
UV_SETUP: Final = r"""set -e
bin="$HOME/.local/bin"
mkdir -p "$bin"
ln -sf /opt/comet-uv/uv "$bin/uv"
cat > "$bin/uvx" <<'EOF'
#!/bin/sh
# comet-eval's offline stand-in for uvx: before the command, -p/--python VERSION becomes the image's
# python VERSION when it has one, else its python3 (a numbered VERSION it is not is noted for the trial's
# record); everything else is passed on in order.
note() {
  case "$1" in ''|*[!0-9.]*) return 0 ;; esac
  got=$("$2" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null) || return 0
  case "$got" in "$1"|"$1".*) return 0 ;; esac
  notes=/logs/verifier/comet-uvx-python.txt
  { mkdir -p "${notes%/*}" && echo "uvx asked for Python $1, got $got" >> "$notes"; } 2>/dev/null
  return 0
}
pick() {
  if command -v "python$1" >/dev/null 2>&1; then py=$(command -v "python$1"); else py=$(command -v python3); fi
  note "$1" "$py"
  echo "$py"
}
n=$#; i=0; before=1
while [ "$i" -lt "$n" ]; do
  a="$1"; shift; i=$((i + 1))
  if [ "$before" = 1 ]; then
    case "$a" in
      -p|--python) v="$1"; shift; i=$((i + 1)); set -- "$@" --python "$(pick "$v")"; continue ;;
      --python=*) set -- "$@" --python "$(pick "${a#--python=}")"; continue ;;
      -w|--with|--from|--with-editable|--with-requirements|--index|--index-url|--extra-index-url|-c|--constraints)
        set -- "$@" "$a" "$1"; shift; i=$((i + 1)); continue ;;
      -*) ;;
      *) before=0 ;;
    esac
  fi
  set -- "$@" "$a"
done
exec /opt/comet-uv/uv tool run "$@"
EOF
chmod +x "$bin/uvx"
printf '%s\n' 'export PATH="$HOME/.local/bin:$PATH"' > "$bin/env"
[ -e /usr/local/bin/curl ] ||
  { mkdir -p /usr/local/bin && cat > /usr/local/bin/curl <<'CURL' && chmod +x /usr/local/bin/curl; } || true
#!/bin/sh
# comet-eval's uv stand-in is in place: the astral.sh installer's URL is answered with an installer that
# does nothing (to stdout, or to -o FILE), so `curl ... | sh` succeeds under `set -o pipefail` too;
# every other request goes to the real curl.
out=; prev=
for a in "$@"; do
  case "$prev" in -o|--output) out="$a" ;; esac
  case "$a" in --output=*) out="${a#--output=}" ;; esac
  prev="$a"
done
for a in "$@"; do
  case "$a" in
    *astral.sh/uv/*)
      stub='echo "comet-eval: uv and uvx are the local stand-in (~/.local/bin)"'
      if [ -n "$out" ] && [ "$out" != - ]; then printf '%s\n' "$stub" > "$out"; else printf '%s\n' "$stub"; fi
      exit 0 ;;
  esac
done
for c in /usr/bin/curl /bin/curl; do [ -x "$c" ] && exec "$c" "$@"; done
echo "curl: command not found" >&2
exit 127
CURL
"""


def uv_shim_needed(task: Task) -> bool:
    """Whether the verifier gets the uv stand-in: ``[comet] uv_shim`` says always or never; ``auto`` (the
    default) when ``tests/test.sh`` bootstraps uv from astral.sh. Harmless where the internet is reachable:
    the script's own installer then replaces the stand-in."""
    settings = task.harbor
    if settings is None or settings.uv_shim == "never":
        return False
    if settings.uv_shim == "always":
        return True
    try:
        script = (task.tests_dir / "test.sh").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return "astral.sh/uv" in script


def verify(
    task: Task,
    workspace: Workspace,
    log_dir: Path,
    *,
    env: Mapping[str, str] | None = None,
    uv_binaries: Path | None = None,
) -> ValidationOutcome:
    """Run the task's verifier in *workspace* and read its reward (see the module docstring).

    *env*: variables every verifier command gets besides ``[verifier.env]`` (the host's CA bundle
    settings); *uv_binaries*: a host folder holding ``uv`` and ``uvx`` for the stand-in, when needed.
    """
    settings = task.harbor
    if settings is None:
        raise VerifierError(f"task {task.name}: not a Harbor-format task")
    out = log_dir / "verifier"
    out.mkdir(parents=True, exist_ok=True)
    base_env = dict(env or {})
    _run(workspace, ["sh", "-c", LOGS_SCRIPT], out / "setup", base_env, 60.0, "cannot make /logs/verifier")
    if uv_binaries is not None:
        workspace.put_at(uv_binaries, UV_DIR)
        _run(workspace, ["sh", "-c", UV_SETUP], out / "uv-setup", base_env, 60.0, "cannot set up the uv stand-in")
    workspace.put_at(task.tests_dir, "/tests")
    timeout = task.spec.validation.timeout
    result = workspace.exec(
        ["bash", "/tests/test.sh"],
        timeout=timeout,
        env={**base_env, **dict(settings.verifier_env)},
        stdout_path=out / "test-stdout.txt",
        stderr_path=out / "test-stderr.txt",
    )
    collected = workspace.exec(
        ["sh", "-c", _COLLECT],
        timeout=60.0,
        env=base_env,
        stdout_path=out / ".logs.tar",
        stderr_path=out / ".logs.stderr",
    )
    files = _extract(out / ".logs.tar", out) if collected.exit_code == 0 else {}
    for name in (".logs.tar", ".logs.stderr", "setup.stdout", "setup.stderr"):
        (out / name).unlink(missing_ok=True)

    checks = ctrf_checks(files) + uvx_checks(files.get(UVX_NOTES))
    if result.timed_out and "reward.txt" not in files and "reward.json" not in files:
        checks.append(ValidationCheck("test.sh", "failed", "verifier", f"timed out after {timeout:g}s"))
        return ValidationOutcome(tuple(checks), reward=0.0)
    reward, source = parse_reward(files.get("reward.txt"), files.get("reward.json"))
    if reward is None:
        tail = result.stderr(600).strip() or result.stdout(600).strip()
        raise VerifierError(
            f"task {task.name}: the verifier wrote no reward ({source}); test.sh exited with code "
            f"{result.exit_code}" + (f": {tail.splitlines()[-1]}" if tail else "") + f"; its output: {out}"
        )
    checks.append(
        ValidationCheck("reward", "passed" if reward >= 1.0 else "failed", "verifier", f"{reward:g} from {source}")
    )
    return ValidationOutcome(tuple(checks), reward=reward)


def _run(workspace: Workspace, argv: list[str], stem: Path, env: Mapping[str, str], timeout: float, what: str) -> None:
    result = workspace.exec(
        argv,
        timeout=timeout,
        env=env,
        stdout_path=stem.with_name(stem.name + ".stdout"),
        stderr_path=stem.with_name(stem.name + ".stderr"),
    )
    if result.exit_code != 0:
        raise VerifierError(f"{what}: exited with code {result.exit_code}: {result.stderr(400).strip()}")


def _extract(archive: Path, dest: Path) -> dict[str, bytes]:
    """The verifier's files: regular files of the archive, written under *dest* (names kept inside it) and
    returned by relative name; bounded in total size."""
    found: dict[str, bytes] = {}
    try:
        data = archive.read_bytes()
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            total = 0
            for member in tar:
                name = member.name.removeprefix("./")
                if not member.isreg() or not name or name.startswith("/") or ".." in name.split("/"):
                    continue
                total += member.size
                if total > _LOG_LIMIT:
                    break
                handle = tar.extractfile(member)
                if handle is None:
                    continue
                content = handle.read()
                found[name] = content
                target = dest / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content)
    except (OSError, tarfile.TarError):
        return found
    return found


def uvx_checks(notes: bytes | None) -> list[ValidationCheck]:
    """The stand-in's notes of a Python served instead of the one asked for (``uvx -p 3.13`` run on an
    image with 3.11) as one skipped check: kept in the record and shown in the transcript, never counted."""
    lines = dict.fromkeys(line.strip() for line in (notes or b"").decode("utf-8", "replace").splitlines())
    lines.pop("", None)
    if not lines:
        return []
    return [ValidationCheck("uvx python", "skipped", "uv-shim", "; ".join(lines))]


def parse_reward(text: bytes | None, json_text: bytes | None) -> tuple[float | None, str]:
    """(reward, where it came from) from ``reward.txt`` first, else ``reward.json``; (None, why) when
    neither gives a number. ``reward.json`` maps names to numbers: its ``reward`` entry, else its only
    one, else the mean of them all (Harbor keeps them all; one number decides here)."""
    if text is not None:
        stripped = text.decode("utf-8", errors="replace").strip()
        if not stripped:
            return None, "reward.txt is empty"
        value = _number(stripped)
        if value is None:
            return None, f"reward.txt holds {stripped[:40]!r}, not a number"
        return value, "reward.txt"
    if json_text is None:
        return None, "neither /logs/verifier/reward.txt nor reward.json exists"
    if not json_text.strip():
        return None, "reward.json is empty"
    try:
        data = json.loads(json_text)
    except ValueError:
        return None, "reward.json is not JSON"
    if isinstance(data, bool) or not isinstance(data, dict | int | float):
        return None, "reward.json is not an object of numbers"
    if not isinstance(data, dict):
        value = _number(str(data))
        return (value, "reward.json") if value is not None else (None, "reward.json is not a number")
    numbers = {k: v for k, v in data.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    numbers = {k: float(v) for k, v in numbers.items() if math.isfinite(v)}
    if not numbers:
        return None, "reward.json holds no number"
    return reward_of(numbers, "reward.json")


def reward_of(numbers: Mapping[str, float], where: str) -> tuple[float, str]:
    """The one reward of Harbor's named rewards (non-empty): the ``reward`` entry, else the only one, else
    the mean of them all; and where it came from, *where* and the names (``reward.json (accuracy)``).
    Also the rule for the rewards of an imported Harbor trial (scaffold.imports.harbor)."""
    if "reward" in numbers:
        return numbers["reward"], f"{where} (reward)"
    if len(numbers) == 1:
        name, value = next(iter(numbers.items()))
        return value, f"{where} ({name})"
    return sum(numbers.values()) / len(numbers), f"{where} (mean of {', '.join(sorted(numbers))})"


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


_CTRF_STATUS: Final[dict[str, CheckStatus]] = {"passed": "passed", "failed": "failed"}
CTRF_FILE: Final = "ctrf.json"


def is_ctrf_file(name: str) -> bool:
    """Whether the verifier's file *name* (relative to ``/logs/verifier``) is a CTRF report to read: a
    top-level ``*ctrf*.json`` (``ctrf.json``, ``ctrf_performance.json``, ``original-repo-ctrf.json``)."""
    return "/" not in name and name.endswith(".json") and "ctrf" in name.lower()


def ctrf_checks(files: Mapping[str, bytes]) -> list[ValidationCheck]:
    """The tests of every CTRF report among the verifier's *files* (name -> content) as named checks:
    ``ctrf.json``'s first, under their own names (source ``ctrf``), then each other report's in name
    order, named ``<stem>: <test>`` (source ``ctrf:<file>``). The prefix is there whichever files a
    trial wrote, so a test keeps one name across trials; a name met twice gets `` (2)``, `` (3)``, ...
    so that every check of a trial has a name of its own."""
    checks = parse_ctrf(files.get(CTRF_FILE))
    for name in sorted(n for n in files if is_ctrf_file(n) and n != CTRF_FILE):
        stem = name.removesuffix(".json")
        checks += [
            ValidationCheck(f"{stem}: {c.name}", c.status, f"ctrf:{name}", c.reason) for c in parse_ctrf(files[name])
        ]
    used: set[str] = set()
    unique = []
    for check in checks:
        name, n = check.name, 1
        while name in used:
            n += 1
            name = f"{check.name} ({n})"
        used.add(name)
        unique.append(check if name == check.name else msgspec.structs.replace(check, name=name))
    return unique


def parse_ctrf(data: bytes | None) -> list[ValidationCheck]:
    """The tests of a CTRF report (pytest-json-ctrf's ``ctrf.json``) as named checks: ``passed`` and
    ``failed`` as they are, every other status (skipped, pending, other) skipped. Not JSON, or not the
    shape: no checks (the reward still decides)."""
    if not data:
        return []
    try:
        report: Any = json.loads(data)
    except ValueError:
        return []
    tests = report.get("results", {}).get("tests") if isinstance(report, dict) else None
    if not isinstance(tests, list):
        return []
    checks = []
    for i, test in enumerate(tests):
        if not isinstance(test, dict):
            continue
        name = str(test.get("name") or f"test {i + 1}")
        status = _CTRF_STATUS.get(str(test.get("status", "")).lower(), "skipped")
        message = test.get("message") or test.get("trace") or ""
        checks.append(ValidationCheck(name, status, "ctrf", str(message)[:500]))
    return checks

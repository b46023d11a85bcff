"""The oracle and nop over folders of Harbor-format tasks: does every task build, pass when solved, fail when not?

Each folder given is a corpus (a folder of task folders: Terminal-Bench 2's, SkillsBench's, our own
``tests/data/harbor-tasks``). Every task runs one trial with the oracle, then one with nop, under its
reference treatment: TASK_SKILLS where its ``environment/skills`` holds a skill (the image as published,
skills included: some oracles read them), else CONTROL. The real path, in a fresh process per agent and
treatment:

    pytest local/tests --tasks-dir CORPUS --task A,B --treatment T --agent oracle|nop --backend docker \\
        [--image-alias REF=LOCAL ...] [-n N]

then the trial records are read. Per task: the oracle's verdict and reward, nop's, each trial's seconds to
make its container ("ready": the workspace phase, the image built, or reused when an earlier run built it,
and the container started) and its seconds after that ("trial": agent, verifier, scoring), oracle / nop, and
why anything failed (the harness error, the verifier's failed tests, the last line of its output). It ends
with one line per corpus:

    skillsbench: oracle 8/10, nop 0/10, errors 0, 1312 s

A sound task gives oracle 1 and nop 0; "errors" are trials the harness could not score (an image that does
not build, a verifier that wrote no reward), counted apart from failures, as the reports count them.

The images. The engine has no registry to pull ``python:3.13-slim-bookworm`` or ``ubuntu:24.04`` from; the
docker backend builds each on its default stand-in (scaffold.workspaces.stand_ins: the Debian release a
tag names, else the nearest Python; ``comet images aliases`` prints it), so no alias is passed. The
mapping is printed per corpus, with every image whose stand-in has another Python. ``--image-alias``
overrides one (``REF=REF`` builds it as written). The stand-ins must exist (``comet images build-base
--release bookworm|trixie``).

    .venv/bin/python benchmarks/corpora.py                                   # tests/data/harbor-tasks
    .venv/bin/python benchmarks/corpora.py ../shared/corpora/terminal-bench-2 ../shared/corpora/skillsbench -n 2
    .venv/bin/python benchmarks/corpora.py ../shared/corpora/skillsbench --task azure-bgp*,jax-computing-basics

Options: ``--task PATTERN`` (repeatable, comma lists; exact names or a prefix with ``*``, in every corpus),
``-n N`` (pytest-xdist workers of each run), ``--agents oracle,nop``, ``--image-alias REF=LOCAL``,
``--dir FOLDER`` (where the runs' files go; kept, default a temporary folder that is
removed), ``--timeout SECONDS`` (each pytest run). Exits non-zero only when a run could not be made (no
engine, a missing stand-in, a pytest run that wrote no record for a task it was given), never because a
task failed.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.collection import clean_env  # noqa: E402  (the same environment as collection's runs)
from scaffold.catalog.tasks import load_catalog  # noqa: E402
from scaffold.catalog.treatments import CONTROL, TASK_SKILLS  # noqa: E402
from scaffold.errors import WorkspaceError  # noqa: E402
from scaffold.experiment.cases import has_own_skills, parse_list  # noqa: E402
from scaffold.records import TrialRecord  # noqa: E402
from scaffold.records.files import read_record  # noqa: E402
from scaffold.session import HarnessSession, Options  # noqa: E402
from scaffold.workspaces.docker.engine import connect, image_id  # noqa: E402
from scaffold.workspaces.stand_ins import ImageChoice  # noqa: E402

DEFAULT_CORPUS = ROOT / "tests" / "data" / "harbor-tasks"
AGENTS = ("oracle", "nop")


@dataclass
class Trial:
    """What one record says, as this benchmark shows it."""

    verdict: str
    kind: str
    """What ended a trial in error: its noise reason (``build_failed``, ``missing_reward``), else the
    error's type; empty for a scored trial."""
    reward: float | None
    """The completion score (a Harbor task's reward, within 0..1); None when unscored."""
    ready_s: float
    trial_s: float
    why: str


@dataclass
class Row:
    task: str
    treatment: str
    trials: dict[str, Trial] = field(default_factory=dict)


def read_trial(record: TrialRecord, folder: Path) -> Trial:
    ready = record.phases.get("workspace_s", record.duration_s if record.verdict == "error" else 0.0)
    # The reward as the rubric scored it: the completion dimension (the reward, within 0..1).
    completion = next((d.score for d in record.dimensions if d.name == "completion"), None)
    kind = (record.noise.reason or record.errors[0].type) if record.errors else ""
    spent = max(record.duration_s - ready, 0.0)
    return Trial(record.verdict, kind, completion, ready, spent, why_failed(record, folder))


def why_failed(record: TrialRecord, folder: Path) -> str:
    """Why the trial did not pass, in one line: the harness error, else the verifier's failed tests and the
    last line of its output (its own words, when no test names the fault)."""
    if record.errors:
        error = record.errors[0]
        lines = [line.strip() for line in error.message.strip().splitlines() if line.strip()]
        noise = f" [{record.noise.reason}]" if record.noise.category == "excluded" and record.noise.reason else ""
        first = lines[0].split(": The command '", 1)[0][:200] if lines else ""  # the builder's words follow
        cause = _cause(lines[1:])
        return f"{error.type}{noise}: {first}" + (f" ... {cause[:200]}" if cause else "")
    if record.verdict == "passed":
        return ""
    failed = [c for c in record.checks if c.status == "failed" and c.source != "verifier"]
    parts = []
    if failed:
        names = ", ".join(c.name for c in failed[:3]) + (f" and {len(failed) - 3} more" if len(failed) > 3 else "")
        parts.append(f"failed: {names}")
    reward = next((c for c in record.checks if c.name == "reward"), None)
    if reward is not None and not failed:
        parts.append(reward.reason)
        last = _last_line(folder / "verifier" / "test-stdout.txt")
        if last:
            parts.append(f"verifier: {last[:160]}")
    traj = record.trajectory
    if traj is not None and traj.exit_code not in (None, 0):
        parts.append(f"solve.sh exited {traj.exit_code}" if record.agent.name == "oracle" else f"exit {traj.exit_code}")
    return "; ".join(parts)


_CAUSES = (
    re.compile(r"fatal error:|: error:|^fatal:|^ERROR: (?!The command)"),  # a compiler's, git's, pip's own words
    re.compile(r"\berror\b|not found|no matching|could not", re.IGNORECASE),
)


def _cause(lines: Sequence[str]) -> str:
    """The line of an error's log tail that names a cause (a compiler's ``error:``, git's ``fatal:``, pip's
    ``ERROR:``, else any line that says error), not the builder's closing "The command ... returned a
    non-zero code". The tail's first line is skipped: it starts mid-line."""
    texts = [re.sub(r"\x1b\[[0-9;]*m", "", line).strip() for line in lines[1:]]
    texts = [t for t in texts if t and "returned a non-zero code" not in t]
    for pattern in _CAUSES:
        found = next((t for t in texts if pattern.search(t)), None)
        if found:
            return found
    return ""


def _last_line(path: Path) -> str:
    try:
        lines = [line.strip() for line in path.read_text(encoding="utf-8", errors="replace").splitlines()]
    except OSError:
        return ""
    return next((line for line in reversed(lines) if line), "")


def run_group(
    corpus: Path,
    names: Sequence[str],
    treatment: str,
    agent: str,
    out: Path,
    args: argparse.Namespace,
) -> tuple[dict[str, Trial], float, str]:
    """One pytest run of *names* under *treatment* with *agent*: its trials by task, its wall time, and
    the tail of its output (for a task that left no record)."""
    out.mkdir(parents=True)
    argv = [sys.executable, "-m", "pytest", str(ROOT / "local" / "tests"), f"--tasks-dir={corpus}"]
    argv += [f"--task={','.join(names)}", f"--treatment={treatment}", f"--agent={agent}", "--backend=docker"]
    argv += ["-p", "no:cacheprovider", "-q", f"--logs-dir={out / 'logs'}", f"--workspace-root={out / 'ws'}"]
    argv += [f"--image-alias={alias}" for alias in args.image_alias]
    if args.workers > 1:
        argv += ["-n", str(args.workers)]
    start = time.monotonic()
    done = subprocess.run(
        argv, cwd=out, env=clean_env(), capture_output=True, text=True, timeout=args.timeout, check=False
    )
    wall = time.monotonic() - start
    (out / "pytest.out").write_text(done.stdout + done.stderr)
    found: dict[str, Trial] = {}
    for record_file in sorted((out / "logs" / "experiments").glob("*/trials/*/record.json")):
        record = read_record(record_file)
        found[record.task] = read_trial(record, record_file.parent)
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-8:])
    return found, wall, tail


def image_choices(corpus: Path, names: Sequence[str], args: argparse.Namespace) -> list[ImageChoice]:
    """What the runs' sessions build *names*' FROM images on (the same session rule), once per image."""
    options = Options(root=ROOT, tasks_dirs=(corpus,), image_aliases=tuple(args.image_alias))
    found: dict[tuple[str, str], ImageChoice] = {}
    for choices in HarnessSession(options).image_choices(names).values():
        for choice in choices:
            found.setdefault((choice.image, choice.local), choice)
    return [found[key] for key in sorted(found)]


def require_stand_ins(choices: Sequence[ImageChoice]) -> None:
    needed = sorted({c.local for c in choices})
    if not needed:
        return
    try:
        client = connect()
    except WorkspaceError as exc:
        raise SystemExit(f"corpora.py needs a Docker engine (DOCKER_HOST): {exc}") from None
    try:
        missing = [tag for tag in needed if image_id(client, tag) is None]
    finally:
        client.close()
    if missing:
        releases = " and ".join(tag.rpartition(":")[2] for tag in missing)
        raise SystemExit(
            f"the images {', '.join(missing)} are missing: comet images build-base --release {releases} (one "
            "at a time), or pass --image-alias REF=LOCAL"
        )


def select(names: Sequence[str], patterns: Sequence[str]) -> list[str]:
    """*names* matching any of *patterns* (exact, or a prefix with a trailing ``*``); all without any."""
    if not patterns:
        return sorted(names)
    return sorted({n for p in patterns for n in names if (n.startswith(p[:-1]) if p.endswith("*") else n == p)})


def fmt_trial(trial: Trial | None) -> str:
    if trial is None:
        return "no record"
    reward = f" {trial.reward:g}" if trial.reward is not None else ""
    return f"{trial.verdict}{reward}"


def run_corpus(corpus: Path, args: argparse.Namespace, folder: Path) -> tuple[str, bool]:
    """Run one corpus and print its table; (its summary line, whether every run left its records)."""
    catalog = load_catalog([corpus])
    names = select(list(catalog.tasks), args.patterns)
    broken = select(list(catalog.broken), args.patterns)
    label = corpus.name
    print(f"\n== {label} ({corpus}): {len(names)} tasks" + (f", {len(broken)} that do not load" if broken else ""))
    for name in broken:
        print(f"  {name}: does not load: {catalog.broken[name][0]}")
    if not names:
        return f"{label}: no task selected", True
    tasks = [catalog.tasks[n] for n in names]
    choices = image_choices(corpus, names, args)
    require_stand_ins(choices)
    for choice in choices:
        print(f"  {choice.image} builds on {choice.local} ({choice.by})")
        if choice.mismatch:
            print(f"    {choice.mismatch}")
    groups: dict[str, list[str]] = {}
    for task in tasks:
        groups.setdefault(TASK_SKILLS if has_own_skills(task) else CONTROL, []).append(task.name)
    rows = {t.name: Row(t.name, TASK_SKILLS if has_own_skills(t) else CONTROL) for t in tasks}
    complete, walls = True, 0.0
    for agent in args.agents:
        for treatment, members in sorted(groups.items()):
            out = folder / label / f"{agent}-{treatment}"
            found, wall, tail = run_group(corpus, members, treatment, agent, out, args)
            walls += wall
            where = f" ({out})" if args.dir else ""
            print(f"  {agent} under {treatment}: {len(found)}/{len(members)} records in {wall:.0f} s{where}")
            for name in members:
                if name in found:
                    rows[name].trials[agent] = found[name]
                else:
                    complete = False
                    print(f"    {name}: no record; the run's last lines:\n      " + tail.replace("\n", "\n      "))
    print(f"  {'task':<34} {'treatment':<11} {'oracle':<12} {'nop':<12} {'ready s':>13} {'trial s':>13}")
    for row in rows.values():
        oracle, nop = row.trials.get("oracle"), row.trials.get("nop")
        ready = " / ".join(f"{t.ready_s:5.1f}" if t else "    -" for t in (oracle, nop))
        spent = " / ".join(f"{t.trial_s:5.1f}" if t else "    -" for t in (oracle, nop))
        results = f"{fmt_trial(oracle):<12} {fmt_trial(nop):<12}"
        print(f"  {row.task:<34} {row.treatment:<11} {results} {ready:>13} {spent:>13}")
        for agent, trial in row.trials.items():
            bad = trial.verdict != ("failed" if agent == "nop" else "passed")
            if bad and trial.why:
                print(f"      {agent}: {trial.why}")
            elif agent == "nop" and trial.verdict == "passed":
                print("      nop: passed: the verifier accepts the task as it starts")
    return summary_line(label, list(rows.values()), args.agents, walls), complete


def summary_line(label: str, rows: Sequence[Row], agents: Sequence[str], wall: float) -> str:
    parts = []
    errors: Counter[str] = Counter()
    for agent in agents:
        trials = [r.trials[agent] for r in rows if agent in r.trials]
        parts.append(f"{agent} {sum(t.verdict == 'passed' for t in trials)}/{len(rows)}")
        for trial in trials:
            if trial.verdict == "error":
                errors[trial.kind] += 1
    detail = ", ".join(f"{kind} {n}" for kind, n in sorted(errors.items()))
    parts.append(f"errors {sum(errors.values())}" + (f" ({detail})" if detail else ""))
    return f"{label}: {', '.join(parts)}, {wall:.0f} s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpora", nargs="*", type=Path, help=f"folders of Harbor tasks (default {DEFAULT_CORPUS})")
    parser.add_argument("--task", action="append", default=[], help="task names or prefixes with * (repeatable)")
    parser.add_argument("-n", "--workers", type=int, default=1, help="pytest-xdist workers of each run (default 1)")
    parser.add_argument("--agents", default=",".join(AGENTS), help="agents, in order (default oracle,nop)")
    parser.add_argument("--image-alias", action="append", default=[], help="REF=LOCAL, over the default stand-ins")
    parser.add_argument("--dir", type=Path, help="where the runs' files go, kept (default: a temporary folder)")
    parser.add_argument("--timeout", type=float, default=4 * 3600.0, help="seconds per pytest run (default 4 h)")
    args = parser.parse_args()
    args.patterns = parse_list(args.task)
    args.agents = parse_list([args.agents])
    for alias in args.image_alias:
        if "=" not in alias:
            parser.error(f"--image-alias {alias!r}: expected REF=LOCAL")
    folder = args.dir.absolute() if args.dir else Path(tempfile.mkdtemp(prefix="comet-corpora-"))
    folder.mkdir(parents=True, exist_ok=True)
    lines, complete = [], True
    try:
        for corpus in args.corpora or [DEFAULT_CORPUS]:
            line, whole = run_corpus(corpus.resolve(), args, folder)
            lines.append(line)
            complete = complete and whole
    finally:
        if args.dir is None:
            shutil.rmtree(folder, ignore_errors=True)
    print()
    for line in lines:
        print(line)
    return 0 if complete else 1


if __name__ == "__main__":
    raise SystemExit(main())

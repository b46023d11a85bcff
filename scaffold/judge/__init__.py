"""The LLM judge: scores beside the rule rubric, never instead of it (docs/judge.md).

config (pure) decides whether and how it runs, prompts (pure) asks and reads; :func:`judge_trial`
(pure: the model is reached through the *ask* it is given) scores one trial. scaffold.judge.transport
(I/O) talks to the model and gives the trial runner a :class:`Judge`.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from msgspec.structs import replace

from scaffold.errors import CometError
from scaffold.judge.config import JudgeConfig
from scaffold.judge.prompts import COMET_DIMENSIONS, comet_prompt, generic_dimensions, generic_prompt, parse_answer
from scaffold.records import JudgeInfo
from scaffold.rubrics import JUDGE_SOURCE, Dimension, WorkspaceFiles
from scaffold.validation.results import ValidationOutcome

__all__ = [
    "Judge",
    "JudgeAnswer",
    "JudgeFailure",
    "JudgeRequest",
    "judge_trial",
]

JUDGE_WEIGHT = 1.0
"""Judge dimensions carry weight 1.0: they never enter the weighted score (scaffold.rubrics.weighted_score
leaves them out), so the weight only matters to a report that averages judge dimensions on their own."""


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    """What the judge sees of one trial."""

    instruction: str
    criteria: Sequence[str]
    outcome: ValidationOutcome
    files: WorkspaceFiles
    comet: bool = False
    """The comet-workflow profile: the comet judge re-scores the change's documents too."""
    changes: str = ""
    """What the agent changed, as diffs (scaffold.trial.changes.diff_text, bounded); empty when nothing did or
    it could not be captured."""
    redact: Callable[[str], str] = str
    """The subject agent's redaction (scaffold.agents.base.Agent.redact): every prompt goes through it before
    it leaves the harness, since the workspace it shows is the agent's and may hold its credentials."""


class JudgeFailure(CometError):
    """The judge gave no usable answer; the message is the record's reason (HTTP status, timeout...)."""


@dataclass(frozen=True, slots=True)
class JudgeAnswer:
    """One answer of the judge's model, with what it cost (None: not reported)."""

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    session_id: str | None = None
    latency_s: float = 0.0


class Judge(Protocol):
    """What the trial runner holds when the judge is on (scaffold.judge.transport.JudgeRun)."""

    def judge(self, request: JudgeRequest) -> tuple[tuple[Dimension, ...], JudgeInfo]:
        """The judge's dimensions and record entry; never raises for a judge problem."""
        ...


def judge_trial(
    config: JudgeConfig, request: JudgeRequest, ask: Callable[[str], JudgeAnswer]
) -> tuple[tuple[Dimension, ...], JudgeInfo]:
    """The judge's dimensions and its record entry for one trial. Never raises for a judge problem:
    a skipped or failed judge is a status with a reason, and no dimensions."""
    info = JudgeInfo("skipped", agent=config.agent, model=config.model)
    if config.skip_reason:
        return (), replace(info, reason=config.skip_reason)
    info = replace(info, transport=config.transport)
    prompts = [
        (
            generic_prompt(request.instruction, request.criteria, request.outcome, request.files, request.changes),
            generic_dimensions(request.criteria),
        )
    ]
    if request.comet and (comet := comet_prompt(request.files)) is not None:
        prompts.append((comet, COMET_DIMENSIONS))
    scores: dict[str, list[float]] = {}
    reasons: dict[str, str] = {}
    answers: list[JudgeAnswer] = []
    try:
        for _ in range(config.samples):
            for prompt, dims in prompts:
                answer = ask(request.redact(prompt))
                answers.append(answer)
                parsed = parse_answer(answer.text, dims)
                if not parsed:
                    raise JudgeFailure("unparseable answer: no [RUBRIC-JUDGE] line for a known dimension")
                for name, score in parsed.items():
                    scores.setdefault(name, []).append(score.score)
                    reasons.setdefault(name, score.reason)
    except JudgeFailure as exc:
        return (), _with_usage(replace(info, status="failed", reason=str(exc)), answers)
    except Exception as exc:  # a judge bug must not cost the trial its rule scores
        return (), _with_usage(replace(info, status="failed", reason=f"unexpected: {exc!r}"), answers)
    order = [d for _, dims in prompts for d in dims if d in scores]
    dimensions = tuple(
        Dimension(name, JUDGE_WEIGHT, round(statistics.fmean(scores[name]), 6), reasons[name], source=JUDGE_SOURCE)
        for name in order
    )
    # With --judge-samples N the score is the mean of N answers and spread their population deviation.
    spread = {n: round(statistics.pstdev(v), 6) for n, v in scores.items() if len(v) > 1}
    done = replace(info, status="enabled_and_successful", samples=config.samples, spread=spread)
    return dimensions, _with_usage(done, answers)


def _with_usage(info: JudgeInfo, answers: Sequence[JudgeAnswer]) -> JudgeInfo:
    """*info* with the judge's own tokens, cost and latency summed over its calls (never the subject's)."""
    if not answers:
        return info

    def total(values: Sequence[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return sum(known) if known else None

    tokens_in = total([a.input_tokens for a in answers])
    tokens_out = total([a.output_tokens for a in answers])
    sessions = [a.session_id for a in answers if a.session_id]
    return replace(
        info,
        input_tokens=int(tokens_in) if tokens_in is not None else None,
        output_tokens=int(tokens_out) if tokens_out is not None else None,
        cost_usd=total([a.cost_usd for a in answers]),
        latency_s=round(sum(a.latency_s for a in answers), 6),
        session_id=sessions[-1] if sessions else None,
    )

"""``transcript.html``: one trial as a page a person reads, from its record and the files of its folder.

The page: the trial's figures, the task's instruction and the treatment's skills, every conversation turn
(its prompt or simulated reply with the reply's source, the agent's text, each tool call with its input
and result, commands with exit codes, skill calls and failed attempts, permission denials, API failures,
tokens, cost and time), the files the agent changed as a coloured diff, the validation checks with their
output, every rubric dimension with its reason, the judge, the noise class with its evidence, and links to
the raw files. Inline CSS, no JavaScript, nothing fetched; long parts in ``<details>``.

Bounded by construction: every text that reaches the page is escaped here and charged, as bytes of its
escaped UTF-8 form, to the budget of its section (``BUDGETS``), and every event, row and diff line is also
charged the markup around it; what no longer fits is cut with the count of what is left and the file it
is in. The budgets add up to less than ``PAGE_LIMIT``, so a trial of any length (200 turns, megabytes of
tool output) makes a page under 2 MB. Main elements carry stable ids and classes (``#turns``,
``.turn``, ``.tool-call``, ``#changes``, ``.diff``, ``#dimensions``, ...) for tests and for people.

The markup is the jinja2 template ``templates/transcript.html.j2``, rendered with autoescape on: the
texts arrive as Markup this module made, anything else is escaped by the template.

Pure: the caller reads the folder (scaffold.reports.transcripts) and writes the text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape

from scaffold.agents.streams.timeline import Event, Text, Timeline, TokenCounts
from scaffold.records import TrialRecord
from scaffold.reports.format import money, number
from scaffold.reports.jinja import bytecode_cache

__all__ = ["BUDGETS", "PAGE_LIMIT", "FileText", "TrialFolder", "TurnStream", "render_transcript"]

PAGE_LIMIT: Final = 2_000_000
"""Bytes a page may take: the section budgets below, the fixed markup and the CSS stay under it."""
BUDGETS: Final = {
    "header": 30_000,
    "instruction": 60_000,
    "turns": 1_320_000,
    "changes": 350_000,
    "checks": 100_000,
    "scores": 60_000,
    "files": 30_000,
}
HEAD: Final = 2_000
"""Characters of a long text shown at once; the rest (to ``FULL``) is one click away."""
FULL: Final = 65_536
EVENT_COST: Final = 150
"""Bytes charged per event or row for its own markup; a tool call's is ``TOOL_COST``."""
TOOL_COST: Final = 400
PRE_COST: Final = 40
"""Bytes charged per shown text for its ``<pre>``; ``DETAILS_COST`` more for the ``<details>`` of its full
text, and again (with its file's name) for the line that counts the rest."""
DETAILS_COST: Final = 140
TURN_COST: Final = 800
"""Bytes charged per turn for its frame: heading, figures, stream link."""
LINE_COST: Final = 40
"""Bytes charged per diff line for its ``<span>``."""
NAME: Final = 300
"""Characters shown of a name, label or other short text."""


@dataclass(frozen=True, slots=True)
class FileText:
    """A file of the trial folder: its name relative to the folder, its text (cut when read) and its size
    in bytes."""

    name: str
    text: str
    size: int


@dataclass(frozen=True, slots=True)
class TurnStream:
    """One conversation turn's stream file, read."""

    index: int
    name: str
    timeline: Timeline
    stderr: FileText | None = None


@dataclass(frozen=True, slots=True)
class TrialFolder:
    """What a transcript is built from. None: the trial folder does not hold the file (an older trial)."""

    record: TrialRecord
    instruction: str | None = None
    turns: tuple[TurnStream, ...] = ()
    changes: Mapping[str, Any] | None = None
    changes_problem: str = ""
    """Why changes.json could not be read (it exists, but is not the agreed shape)."""
    validation: tuple[FileText, ...] = ()
    outputs: tuple[FileText, ...] = ()
    """The agent's other output files (an oracle's or custom agent's stdout and stderr)."""
    files: tuple[str, ...] = ()
    """Other files of the folder worth a link (changes.json, validation/...)."""


@dataclass(slots=True)
class Budget:
    """Bytes left for one section. Charges are the escaped UTF-8 bytes of what is shown."""

    left: int
    skipped: int = 0
    """Events or rows not shown because the budget was spent."""

    def room(self, cost: int = EVENT_COST) -> bool:
        """Take *cost* for one more element when it fits; else count the element as skipped."""
        if self.left < cost:
            self.skipped += 1
            return False
        self.left -= cost
        return True

    def short(self, value: Any, limit: int = NAME) -> Markup:
        """A short text, cut at *limit* characters, escaped and charged."""
        text = value if isinstance(value, str) else ("" if value is None else str(value))
        shown = escape(text[:limit] + ("…" if len(text) > limit else ""))
        return self._charge(shown)

    def clip(self, text: str | Text, file: str = "", *, head: int = HEAD, full: int = FULL) -> Clip:
        """*text* cut to what fits: a head, the full text (to *full*) behind a click, the count of the rest.

        The markup around it is charged too: its ``<pre>``, the ``<details>`` of the full text, and the line
        that counts the rest and names the file."""
        value, size = (text.text, text.size) if isinstance(text, Text) else (text, len(text))
        self.left -= PRE_COST
        shown = max(0, min(len(value), head))
        shown_head = escape(value[:shown])
        cost = _utf8_len(shown_head)
        while cost > max(self.left, 0) and shown > 0:
            # Shrink in proportion (escaping and UTF-8 make a character 1 to 6 bytes), then by a tenth.
            shown = max(0, min(shown - max(1, shown // 10), shown * max(self.left, 0) // cost))
            shown_head = escape(value[:shown])
            cost = _utf8_len(shown_head)
        clip = Clip(self._charge(shown_head), file=file, size=size)
        if len(value) > head and shown == head:
            body = escape(value[:full])
            if _utf8_len(body) + DETAILS_COST <= self.left:
                clip.full = self._charge(body)
                self.left -= DETAILS_COST
                shown = min(len(value), full)
        clip.missing = max(0, size - shown)
        if clip.missing:
            self.left -= DETAILS_COST + 4 * len(file)
        return clip

    def share(self, parts: int, least: int = 0) -> Budget:
        """A budget for the next of *parts* parts: an equal share of what is left (at least *least* while
        that much is left). Charge what it spent back with :meth:`spent`."""
        return Budget(max(self.left // max(parts, 1), min(least, self.left)))

    def spent(self, part: Budget, given: int) -> None:
        self.left -= given - part.left
        self.skipped += part.skipped

    def _charge(self, shown: Markup) -> Markup:
        self.left -= _utf8_len(shown)
        return shown


@dataclass(slots=True)
class Clip:
    """A text as the page shows it: ``head`` at once, ``full`` (when longer) one click away, ``missing``
    characters not on the page at all (in ``file``)."""

    head: Markup
    full: Markup | None = None
    missing: int = 0
    file: str = ""
    size: int = 0


def href(name: str) -> str:
    """A relative link to a file of the trial folder: percent-quoted, so no name can become a scheme
    (``a:b``), a network path or a query."""
    return "./" + quote(name.lstrip("/"), safe="/")


def clip_html(c: Clip, cls: str = "") -> Markup:
    """A clip as the page shows it: its head, the full text behind a click, the count of what is left out
    (and where it is): the template's ``clip(c, cls)``."""
    css = escape(cls)
    out = f'<pre class="text {css}">{c.head}</pre>\n'
    if c.full is not None:
        out += (
            f'<details class="more"><summary>full text ({c.size:,} characters)</summary>'
            f'<pre class="text {css}">{c.full}</pre></details>\n'
        )
    if c.missing:
        where = f' in <a href="{escape(href(c.file))}">{escape(c.file)}</a>' if c.file else ""
        out += f'<p class="cut">… {c.missing:,} more characters{where}</p>\n'
    return Markup(out)  # every part above is escaped, or a Markup that Budget made


def _utf8_len(text: str) -> int:
    """The bytes of *text* as UTF-8; an ASCII text (most of a page) is not encoded to count them."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


@dataclass(slots=True)
class _Budgets:
    parts: dict[str, Budget] = field(default_factory=dict)

    @classmethod
    def scaled(cls, scale: float) -> _Budgets:
        return cls({name: Budget(int(size * scale)) for name, size in BUDGETS.items()})

    def __getitem__(self, name: str) -> Budget:
        return self.parts[name]


def render_transcript(folder: TrialFolder) -> str:
    """The complete transcript.html of one trial (see the module docstring)."""
    scale = 1.0
    while True:
        page = _render(folder, _Budgets.scaled(scale))
        # The budgets already keep the page under the limit; this guards the fixed markup's estimate.
        if _utf8_len(page) <= PAGE_LIMIT or scale < 0.1:
            return page
        scale /= 2


def _render(folder: TrialFolder, budgets: _Budgets) -> str:
    record = folder.record
    return _ENV.get_template("transcript.html.j2").render(
        title=budgets["header"].short(f"{record.task} · {record.treatment} · trial {record.trial}"),
        header=_header(folder, budgets["header"]),
        verdict_note=_verdict_note(record, budgets["header"]),
        instruction=None
        if folder.instruction is None
        else budgets["instruction"].clip(folder.instruction, "instruction.md", head=20_000),
        skills=_skills(record, budgets["header"]),
        turns=_turns(folder, budgets["turns"]),
        turns_skipped=budgets["turns"].skipped,
        outputs=[_file(f, budgets["turns"]) for f in folder.outputs if f.size],
        # Without turn streams (an oracle, an old trial), what the record kept of the agent's commands.
        commands=[]
        if folder.turns or record.trajectory is None
        else [budgets["turns"].clip(c, head=1_000, full=4_000) for c in record.trajectory.commands[:200]],
        changes=_changes(folder, budgets["changes"]),
        changes_problem=budgets["changes"].short(folder.changes_problem, 2_000),
        checks=_checks(folder, budgets["checks"]),
        scores=_scores(record, budgets["scores"]),
        links=_links(record, folder, budgets["files"]),
    )


def _header(folder: TrialFolder, budget: Budget) -> list[tuple[str, Markup]]:
    record = folder.record
    traj = record.trajectory
    tokens = traj.tokens if traj else None
    # An excluded trial counts in no figure: its badge says so, not the verdict it was recorded with.
    excluded = record.noise.category == "excluded"
    rows: list[tuple[str, Any]] = [
        ("verdict", "excluded" if excluded else record.verdict),
        ("experiment", record.experiment_id),
        ("case", record.case_id),
        ("profile", record.profile or "N/A"),
        ("agent", " ".join(p for p in (record.agent.name, record.agent.version and f"({record.agent.version})") if p)),
        ("model", _model(folder)),
        ("endpoint", record.agent.endpoint or "N/A"),
        ("backend", record.workspace.backend or "N/A"),
        ("weighted score", number(record.weighted_score, ".3f")),
        # Three clocks, each named: this one, the whole trial (the live line's, summary.md's); the agent
        # phase within it; each turn's own time as the agent reports it (under Conversation turns).
        ("trial time", f"{record.duration_s:.1f} s, workspace setup to scoring"),
        ("phases", ", ".join(f"{k.removesuffix('_s')} {v:.1f} s" for k, v in record.phases.items()) or "N/A"),
        ("model turns", "N/A" if traj is None or traj.turns is None else traj.turns),
        ("conversation turns", "N/A" if traj is None else traj.conversation_turns),
        ("tool calls", "N/A" if traj is None else len(traj.tool_calls)),
        ("tokens", _tokens(tokens) if tokens else "N/A"),
        ("cost", money(traj.cost_usd if traj else None)),
        ("skills invoked", ", ".join(traj.skills_invoked) if traj and traj.skills_invoked else "none"),
        ("skills attempted", ", ".join(traj.skills_attempted) if traj and traj.skills_attempted else "none"),
        ("started", record.started_at or "N/A"),
        ("finished", record.finished_at or "N/A"),
        ("harness", record.harness_version or "N/A"),
    ]
    if record.attempts:
        earlier = "; ".join(f"{a.folder}/ ({a.noise_reason or 'noise'}, {a.duration_s:.1f} s)" for a in record.attempts)
        rows.append(("attempts", f"this is attempt {len(record.attempts) + 1}; earlier, excluded as noise: {earlier}"))
    if record.workspace.kept and record.workspace.path:
        rows.append(("workspace kept at", record.workspace.path))
    return [(name, budget.short(value, 1000)) for name, value in rows if budget.room(100)]


def _model(folder: TrialFolder) -> str:
    """The model asked for; else the models the turns' streams name (none was asked for: the agent's
    default answered, and its turns say which); N/A when neither says."""
    if folder.record.agent.model:
        return folder.record.agent.model
    named = list(dict.fromkeys(m for turn in folder.turns for m in turn.timeline.models))
    if not named:
        return "N/A"
    return f"{', '.join(named)} (as the turns name {'it' if len(named) == 1 else 'them'}; none was asked for)"


def _verdict_note(record: TrialRecord, budget: Budget) -> Markup:
    """Beside an excluded trial's badge: why, and the verdict it was recorded with."""
    if record.noise.category != "excluded":
        return Markup("")
    return budget.short(f"{record.noise.reason or 'noise'}: left out of every figure (recorded as {record.verdict})")


def _tokens(tokens: TokenCounts | Any) -> str:
    parts = [f"{tokens.input:,} in", f"{tokens.output:,} out"]
    if tokens.cache_read:
        parts.append(f"{tokens.cache_read:,} cache read")
    if tokens.cache_write:
        parts.append(f"{tokens.cache_write:,} cache write")
    return ", ".join(parts)


def _skills(record: TrialRecord, budget: Budget) -> list[dict[str, Markup]]:
    treatment = record.config.get("treatment")
    listed = treatment.get("skills") if isinstance(treatment, Mapping) else None
    out = []
    for skill in listed if isinstance(listed, list) else []:
        if not budget.room(200):
            break
        if isinstance(skill, Mapping):
            out.append(
                {
                    "name": budget.short(skill.get("name")),
                    "variant": budget.short(skill.get("variant") or ""),
                    "hash": budget.short(str(skill.get("content_hash") or "")[:23]),
                }
            )
        else:
            out.append({"name": budget.short(skill), "variant": Markup(""), "hash": Markup("")})
    return out


def _turns(folder: TrialFolder, budget: Budget) -> list[dict[str, Any]]:
    """Every turn, each given an equal share of what the earlier ones left: a long first turn cannot
    crowd out the others."""
    traj = folder.record.trajectory
    log = {int(e["turn"]): e for e in (traj.interaction_log if traj else ()) if isinstance(e.get("turn"), int)}
    streams = {t.index: t for t in folder.turns}
    indexes = sorted(set(log) | set(streams))
    out = []
    previous: Mapping[str, Any] = {}
    for n, index in enumerate(indexes):
        part = budget.share(len(indexes) - n, least=TURN_COST * 3)
        given = part.left
        if part.room(TURN_COST):
            out.append(_turn(index, log.get(index, {}), previous, streams.get(index), part))
        budget.spent(part, given)
        previous = log.get(index, {})
    return out


def _turn(
    index: int, entry: Mapping[str, Any], previous: Mapping[str, Any], stream: TurnStream | None, budget: Budget
) -> dict[str, Any]:
    kind = str(entry.get("prompt_kind") or ("instruction" if index == 1 else "prompt"))
    source = {"instruction": "the task's instruction", "nudge": "continue_prompt"}.get(
        kind, str(previous.get("reply_source") or "")
    )
    timeline = stream.timeline if stream else None
    stats: list[tuple[str, Markup]] = []
    if timeline is not None:
        for name, value in (
            ("model messages", timeline.model_messages),
            ("tokens", _tokens(timeline.tokens) if timeline.tokens else None),
            ("cost", money(timeline.cost_usd) if timeline.cost_usd is not None else None),
            ("time (agent-reported)", None if timeline.duration_s is None else f"{timeline.duration_s:.1f} s"),
            ("API time", None if timeline.api_duration_s is None else f"{timeline.api_duration_s:.1f} s"),
            ("ended", timeline.outcome + (" (error)" if timeline.is_error else "") if timeline.outcome else None),
            ("lines", timeline.lines),
            ("not JSON", timeline.malformed or None),
        ):
            if value is not None:
                stats.append((name, budget.short(value)))
    # The prompt and the reply that ends the turn first, each at most an eighth of the turn's share.
    prompt = None
    if kind != "instruction":
        prompt = budget.clip(str(entry.get("prompt") or ""), head=min(4_000, budget.left // 8), full=FULL // 4)
    decision = None
    if entry.get("decision"):
        decision = {
            "pattern": budget.short(entry.get("pattern")),
            "reply": budget.clip(str(entry.get("reply") or ""), head=min(4_000, budget.left // 8), full=FULL // 4),
            "source": budget.short(entry.get("reply_source")),
        }
    stderr = None
    if stream and stream.stderr and stream.stderr.text.strip():
        stderr = _file(stream.stderr, budget, head=min(4_000, budget.left // 8))
    events = []
    skipped = 0
    listed = timeline.events if timeline else []
    weights = [_WEIGHT.get(e.kind, 1) for e in listed]
    left_weight = sum(weights)
    for n, event in enumerate(listed):
        # Each event a share of what is left of the turn's, by its weight (a tool call's output matters
        # most); when that is too little for the next one, the rest are counted, in order.
        least = _LEAST_TOOL if event.call else _LEAST if event.text else EVENT_COST + 100
        part = Budget(max(budget.left * weights[n] // max(left_weight, 1), min(budget.left, least)))
        left_weight -= weights[n]
        given = part.left
        shown = _event(event, stream.name if stream else "", part)
        budget.spent(part, given)
        if shown is None:
            skipped = len(listed) - n
            break
        events.append(shown)
    notes = []
    if entry.get("nudged"):
        notes.append("the turn ended unfinished: the next prompt is the continue prompt")
    if entry.get("fresh_session_next"):
        notes.append("the next turn starts a fresh session")
    return {
        "index": index,
        "kind": budget.short(kind),
        "source": budget.short(source),
        "prompt": prompt,
        "events": events,
        "skipped": skipped + (timeline.dropped if timeline else 0),
        "stream": stream.name if stream else "",
        "stream_href": href(stream.name) if stream else "",
        "stats": stats,
        "decision": decision,
        "notes": notes,
        "stderr": stderr,
        "missing_stream": stream is None,
    }


_WEIGHT: Final = {"tool": 4, "text": 2, "api": 2, "error": 2, "denial": 2}
_LEAST: Final = EVENT_COST + PRE_COST + DETAILS_COST + 300
"""What one event with a text needs to be worth showing: its markup and a short head of its text (a tool
call: ``_LEAST_TOOL``, for its input and its result)."""
_LEAST_TOOL: Final = TOOL_COST + 2 * (PRE_COST + DETAILS_COST) + 500


def _event(event: Event, file: str, budget: Budget) -> dict[str, Any] | None:
    if not budget.room(TOOL_COST if event.call else EVENT_COST):
        return None
    shown: dict[str, Any] = {"kind": event.kind, "sub": event.sub, "final": event.final}
    shown["label"] = budget.short(event.label)
    if event.tokens is not None:
        shown["tokens"] = budget.short(_tokens(event.tokens))
    if event.text is not None:
        shown["text"] = budget.clip(event.text, file)
    call = event.call
    if call is not None:
        # The result gets what the command or input leaves: at most a third of the share goes to the input.
        command = None if call.command is None else budget.clip(call.command, file, head=min(1_000, budget.left // 3))
        tool_input = budget.clip(call.input, file, head=min(1_000, budget.left // 3)) if command is None else None
        name = budget.short(call.name)
        budget.left -= _utf8_len(name)  # shown twice: as the tool's name and in data-tool
        shown["call"] = {
            "name": name,
            "id": budget.short(call.id, 80),
            "command": command,
            "input": tool_input,
            "result": None if call.result is None else budget.clip(call.result, file),
            "is_error": call.is_error,
            "exit_code": call.exit_code,
            "skill": None if call.skill is None else budget.short(call.skill),
            "skill_failed": call.skill_failed,
            "status": budget.short(call.status),
            "answered": call.result is not None or call.is_error is not None,
        }
    return shown


def _file(file: FileText, budget: Budget, head: int = 4_000) -> dict[str, Any]:
    budget.left -= 4 * len(file.name[:NAME])  # its link
    return {
        "name": budget.short(file.name),
        "href": href(file.name[:NAME]),
        "size": file.size,
        "text": budget.clip(Text(file.text, max(file.size, len(file.text))), file.name[:NAME], head=head),
    }


_STATUS_CLASS: Final = {"added": "added", "modified": "modified", "deleted": "deleted"}


def _changes(folder: TrialFolder, budget: Budget) -> dict[str, Any] | None:
    data = folder.changes
    if data is None:
        return None
    listed, counted = data.get("files"), data.get("counts")
    files: list[Any] = listed if isinstance(listed, list) else []
    counts: Mapping[str, Any] = counted if isinstance(counted, Mapping) else {}
    rows = []
    skipped = 0
    for item in files:
        if not isinstance(item, Mapping) or not budget.room():
            skipped += 1
            continue
        status = str(item.get("status") or "")
        diff = item.get("diff")
        rows.append(
            {
                "path": budget.short(item.get("path"), 1000),
                "status": _STATUS_CLASS.get(status, "other"),
                "status_text": budget.short(status),
                "size": _size(item.get("size")),
                "size_before": _size(item.get("size_before")),
                "binary": item.get("binary") is True,
                "omitted": budget.short(item.get("omitted") or ""),
                "diff": _diff(diff, budget) if isinstance(diff, str) and diff else None,
            }
        )
    return {
        "root": budget.short(data.get("root") or ""),
        "counts": [(k, budget.short(counts.get(k, 0))) for k in ("added", "modified", "deleted")],
        "files": rows,
        "skipped": skipped,
        "truncated": data.get("truncated") is True,
    }


def _size(value: Any) -> str:
    return f"{value:,} B" if isinstance(value, int) and not isinstance(value, bool) else "—"


def _diff(diff: str, budget: Budget) -> dict[str, Any]:
    lines = diff.splitlines()
    shown = []
    for line in lines:
        text = escape(line[:2_000])
        cost = _utf8_len(text) + LINE_COST
        if cost > budget.left:
            break
        budget.left -= cost
        shown.append((_line_class(line), text))
    return {"lines": shown, "missing": len(lines) - len(shown)}


def _line_class(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "meta"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    return "ctx"


def _checks(folder: TrialFolder, budget: Budget) -> dict[str, Any]:
    record = folder.record
    rows = []
    for check in record.checks:
        if budget.room(EVENT_COST):
            rows.append(
                {
                    "name": budget.short(check.name, 1000),
                    "status": check.status,
                    "source": budget.short(check.source),
                    "reason": budget.clip(check.reason, head=2_000, full=8_000),
                }
            )
    artifacts = [
        (budget.short(pattern), budget.short(", ".join(found) or "none found", 2_000))
        for pattern, found in record.expected_artifacts.items()
        if budget.room(200)
    ]
    outputs = [_file(f, budget) for f in folder.validation if budget.room(EVENT_COST)]
    return {"rows": rows, "artifacts": artifacts, "outputs": outputs, "skipped": budget.skipped}


def _scores(record: TrialRecord, budget: Budget) -> dict[str, Any]:
    dims = []
    for dim in record.dimensions:
        if budget.room(EVENT_COST):
            dims.append(
                {
                    "name": budget.short(dim.name),
                    "judge": dim.source == "judge",
                    "source": budget.short(dim.source or "rule"),
                    "weight": number(dim.weight, ".2f"),
                    "score": "N/A" if dim.score is None else number(dim.score, ".2f"),
                    "reason": budget.clip(dim.reason, head=2_000, full=8_000),
                }
            )
    judge = record.judge
    judge_rows: list[tuple[str, Markup]] = []
    if judge is not None:
        for name, value in (
            ("status", judge.status),
            ("reason", judge.reason or None),
            ("agent", judge.agent),
            ("model", judge.model),
            ("transport", judge.transport),
            ("samples", judge.samples),
            ("spread", ", ".join(f"{k} {v:.2f}" for k, v in judge.spread.items()) or None),
            (
                "tokens",
                None if judge.input_tokens is None else f"{judge.input_tokens:,} in, {judge.output_tokens or 0:,} out",
            ),
            ("cost", None if judge.cost_usd is None else money(judge.cost_usd)),
            ("latency", None if judge.latency_s is None else f"{judge.latency_s:.1f} s"),
        ):
            if value is not None and budget.room(100):
                judge_rows.append((name, budget.short(value, 4_000)))
    noise = record.noise
    evidence = json.dumps(noise.evidence, indent=1, ensure_ascii=False, default=str) if noise.evidence else ""
    traj = record.trajectory
    problems = [f"{e.type}: {e.message}" for e in record.errors]
    agent_errors = list(traj.errors) if traj else []
    failures = [
        f"{f.kind}{f' (HTTP {f.status})' if f.status else ''}{' final' if f.final else ' retry'}: {f.message}"
        for f in (traj.failures if traj else ())
    ]
    denials = list(traj.permission_denials) if traj else []

    def listed(values: Sequence[str]) -> list[Clip]:
        return [budget.clip(v, head=1_000, full=4_000) for v in values[:200] if budget.room(150)]

    return {
        "dimensions": dims,
        "weighted": number(record.weighted_score, ".3f"),
        "hard_failures": listed(record.hard_failures),
        "judge": judge_rows,
        "judged": judge is not None,
        "noise": {
            "category": noise.category,
            "reason": budget.short(noise.reason or "—", 2_000),
            "source": budget.short(noise.source),
            "evidence": budget.clip(evidence, head=4_000, full=16_000) if evidence else None,
        },
        "errors": listed(problems),
        "agent_errors": listed(agent_errors),
        "failures": listed(failures),
        "denials": listed(denials),
    }


def _links(record: TrialRecord, folder: TrialFolder, budget: Budget) -> list[tuple[str, Markup]]:
    names = ["record.json", *record.streams, *folder.files]
    return [(href(name), budget.short(name)) for name in dict.fromkeys(names) if budget.room(120 + 4 * len(name))]


_ENV: Final = Environment(
    loader=PackageLoader("scaffold.reports", "templates"),
    bytecode_cache=bytecode_cache("transcript"),
    undefined=StrictUndefined,
    autoescape=True,  # every text comes from the agent, the task or the workspace: never trusted
    trim_blocks=True,
    lstrip_blocks=True,
    auto_reload=False,  # the package's template does not change while it runs: no look at its file per page
)
_ENV.filters["href"] = href
_ENV.globals["clip"] = clip_html

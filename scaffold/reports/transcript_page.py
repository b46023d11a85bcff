"""The markup of ``transcript.html``: the page around what scaffold.reports.transcript has bounded and escaped.

Written in Python, not as a template: every trial renders its page, and the jinja2 template this replaced
cost about 0.22 ms a page in a loop (0.4-0.5 ms inside a trial) against about 0.06 ms for this; the page
is the same byte for byte (tests/scaffold/reports/test_transcript_page.py renders both). Every value
goes through ``escape``: the texts arrive as Markup that scaffold.reports.transcript made (``escape``
leaves them as they are), anything else (a number, a name of ours) is escaped here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

from markupsafe import Markup, escape

__all__ = ["Clip", "clip_html", "href", "page"]


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
    (and where it is). tests/scaffold/reports/test_transcript.py keeps it byte for byte the template
    macro it replaced."""
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


_STYLE: Final = """\
:root{--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--bg2:#f6f8fa;--good:#1a7f37;--bad:#cf222e;--warn:#9a6700;--info:#0969da}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);margin:0 auto;padding:16px 24px;max-width:1600px}
h1{font-size:22px;margin:0 0 8px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:15px;margin:0 0 6px}
nav a{margin-right:12px}
pre{white-space:pre-wrap;word-break:break-word;margin:4px 0;padding:6px 8px;background:var(--bg2);border-radius:4px;font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;max-height:32em;overflow:auto}
table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
th{background:var(--bg2)}
dl.facts{display:grid;grid-template-columns:max-content 1fr max-content 1fr max-content 1fr;gap:2px 12px;margin:8px 0}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0}
.badge{display:inline-block;padding:0 7px;border-radius:10px;font-size:12px;font-weight:600;color:#fff;background:var(--muted)}
.badge.passed,.badge.ok,.badge.included{background:var(--good)}.badge.failed,.badge.bad,.badge.excluded{background:var(--bad)}
.badge.error,.badge.warn,.badge.flagged{background:var(--warn)}
tr.check.failed td:first-child{border-left:3px solid var(--bad)}
pre.instruction{max-height:none}
.turn{border:1px solid var(--line);border-radius:6px;padding:10px 12px;margin:12px 0;content-visibility:auto;contain-intrinsic-size:auto 900px}
.file-diff{content-visibility:auto;contain-intrinsic-size:auto 600px}
.turn-stats{color:var(--muted);font-size:12px}
ol.events{list-style:none;padding:0;margin:8px 0}
ol.events>li{margin:6px 0;padding-left:8px;border-left:3px solid var(--line)}
li.sub{margin-left:28px}
li.text{border-left-color:var(--info)}li.tool-call{border-left-color:#8250df}
li.denial,li.api-failure.final,li.error{border-left-color:var(--bad)}li.api-failure{border-left-color:var(--warn)}
li.message,li.session{color:var(--muted);font-size:12px;border-left-color:transparent}
.tool-name{font-weight:600;font-family:ui-monospace,monospace}
.label{color:var(--muted);font-size:12px}
.is-error pre.result{background:#ffebe9}
.cut{color:var(--muted);font-size:12px;margin:2px 0}
pre.diff{padding:0;max-height:48em}
pre.diff span{display:block;padding:0 8px}
.diff .add{background:#dafbe1}.diff .del{background:#ffebe9}.diff .hunk{background:#ddf4ff;color:var(--muted)}.diff .meta{font-weight:600}
tr.added td.status{color:var(--good)}tr.deleted td.status{color:var(--bad)}tr.modified td.status{color:var(--warn)}
.prompt{border-left:3px solid var(--warn);padding-left:8px}
.none{color:var(--muted);font-style:italic}
@media print{pre{max-height:none}}
"""  # noqa: E501 - the style sheet's own lines

_HEAD: Final = (
    '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
    '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
    '<meta http-equiv="Content-Security-Policy" content="default-src '
    "'none'; style-src 'unsafe-inline'; img-src data:\">\n"
)
_NAV: Final = (
    '<nav><a href="#instruction">instruction</a><a href="#turns">turns</a><a href="#changes">changes</a>'
    '<a href="#checks">checks</a><a href="#dimensions">dimensions</a><a href="#judge">judge</a>'
    '<a href="#noise">noise</a><a href="#files">files</a></nav>\n'
)


def e(value: object) -> str:
    """*value* escaped: a Markup (what scaffold.reports.transcript made) as it is, anything else through
    ``escape``. The same as ``escape`` without making a new Markup of every text (two hundred a page)."""
    return value if type(value) is Markup else escape(value)


def page(
    *,
    title: Markup,
    header: Sequence[tuple[str, Markup]],
    instruction: Clip | None,
    skills: Sequence[Mapping[str, Markup]],
    turns: Sequence[Mapping[str, Any]],
    turns_skipped: int,
    outputs: Sequence[Mapping[str, Any]],
    commands: Sequence[Clip],
    changes: Mapping[str, Any] | None,
    changes_problem: Markup,
    checks: Mapping[str, Any],
    scores: Mapping[str, Any],
    links: Sequence[tuple[str, Markup]],
) -> str:
    """The whole page, from the parts scaffold.reports.transcript made."""
    out = [_HEAD, f"<title>{e(title)}</title>\n<style>\n", _STYLE, "</style>\n</head>\n<body>\n"]
    out.append(f'<header id="trial">\n<h1>{e(title)}</h1>\n<dl class="facts">\n')
    for name, value in header:
        if name == "verdict":
            out.append(f'<dt>{e(name)}</dt><dd id="verdict"><span class="badge {e(value)}">{e(value)}</span></dd>\n')
        else:
            out.append(f"<dt>{e(name)}</dt><dd>{e(value)}</dd>\n")
    out += ["</dl>\n", _NAV, "</header>\n\n"]
    _instruction(out, instruction, skills)
    _turns(out, turns, turns_skipped, outputs, commands)
    _changes(out, changes, changes_problem)
    _checks(out, checks)
    _scores(out, scores)
    out.append('<section id="files">\n<h2>Files</h2>\n<ul>')
    out += [f'<li><a href="{e(link)}">{e(name)}</a></li>' for link, name in links]
    out.append("</ul>\n</section>\n</body>\n</html>")
    return "".join(out)


def _instruction(out: list[str], instruction: Clip | None, skills: Sequence[Mapping[str, Markup]]) -> None:
    out.append('<section id="instruction">\n<h2>Instruction</h2>\n')
    if instruction is None:
        out.append('<p class="none">not recorded (a trial run before instructions were kept)</p>\n')
    else:
        out.append(f"{clip_html(instruction, 'instruction')}\n")
    out.append('<h3 id="skills">Skills of the treatment</h3>\n')
    if skills:
        out.append("<ul>")
        for s in skills:
            out.append(f'<li class="skill"><span class="tool-name">{e(s["name"])}</span>')
            if s["variant"]:
                out.append(f" ({e(s['variant'])})")
            if s["hash"]:
                out.append(f' <span class="label">{e(s["hash"])}</span>')
            out.append("</li>")
        out.append("</ul>\n")
    else:
        out.append('<p class="none">none</p>\n')
    out.append("</section>\n\n")


def _turns(
    out: list[str],
    turns: Sequence[Mapping[str, Any]],
    turns_skipped: int,
    outputs: Sequence[Mapping[str, Any]],
    commands: Sequence[Clip],
) -> None:
    out.append('<section id="turns">\n<h2>Conversation turns</h2>\n')
    if not turns:
        none = "" if outputs else " (this agent writes no stream)"
        out.append(f'<p class="none">no conversation turns recorded{none}</p>\n')
    for t in turns:
        _turn(out, t)
    if commands:
        out.append('<h3>Commands the record lists</h3><div class="commands">')
        out += [str(clip_html(c)) for c in commands]
        out.append("</div>")
    if turns_skipped:
        out.append(f'<p class="cut">… {e(turns_skipped)} more turns not shown: see the stream files below</p>')
    for f in outputs:
        out.append(
            f'<details class="output"><summary>agent output: <a href="{e(f["href"])}">{e(f["name"])}</a>'
            f" ({f['size']:,} bytes)</summary>{clip_html(f['text'])}</details>\n"
        )
    out.append("</section>\n\n")


def _turn(out: list[str], t: Mapping[str, Any]) -> None:
    source = f" · source: {e(t['source'])}" if t["source"] else ""
    out.append(
        f'<article class="turn" id="turn-{e(t["index"])}">\n'
        f'<h3>Turn {e(t["index"])} <span class="label">prompt: {e(t["kind"])}{source}</span></h3>\n'
    )
    if t["prompt"] is not None:
        out.append(f'<div class="prompt">{clip_html(t["prompt"])}</div>')
    stats = " · ".join(f'<span class="stat">{e(name)}: {e(value)}</span>' for name, value in t["stats"])
    out.append(f'<p class="turn-stats">{stats}')
    if t["stream"]:
        out.append(f' · <a href="{e(t["stream_href"])}">{e(t["stream"])}</a>')
    out.append("</p>\n")
    if t["missing_stream"]:
        out.append('<p class="none">no stream file for this turn</p>')
    out.append('<ol class="events">\n')
    for event in t["events"]:
        _event(out, event)
    out.append("</ol>\n")
    if t["skipped"]:
        where = f': see <a href="{e(t["stream_href"])}">{e(t["stream"])}</a>' if t["stream"] else ""
        out.append(f'<p class="cut">… {t["skipped"]:,} more events not shown{where}</p>')
    decision = t["decision"]
    if decision:
        out.append(
            '<div class="decision"><span class="badge warn">decision point</span> <span class="label">pattern'
            f" {e(decision['pattern'])} · reply from {e(decision['source'])}</span>"
            f"{clip_html(decision['reply'])}</div>\n"
        )
    out += [f'<p class="label">{e(note)}</p>' for note in t["notes"]]
    stderr = t["stderr"]
    if stderr:
        out.append(
            f'<details class="stderr"><summary class="label">stderr: {e(stderr["name"])}'
            f" ({stderr['size']:,} bytes)</summary>{clip_html(stderr['text'])}</details>"
        )
    out.append("</article>\n")


def _event(out: list[str], ev: Mapping[str, Any]) -> None:
    sub = " sub" if ev["sub"] else ""
    kind = ev["kind"]
    if kind == "tool":
        _call(out, ev["call"], sub, ev["sub"])
    elif kind == "text":
        out.append(f'<li class="text{sub}">{clip_html(ev["text"])}</li>\n')
    elif kind == "context":
        text = ev["text"]
        out.append(
            f'<li class="context{sub}"><details><summary class="label">'
            f"{e(ev['label'] or 'context added to the conversation')} ({text.size:,} characters)</summary>"
            f"{clip_html(text)}</details></li>\n"
        )
    elif kind == "denial":
        out.append(
            '<li class="denial"><span class="badge bad">permission denied</span>'
            f' <span class="tool-name">{e(ev["label"])}</span>{clip_html(ev["text"])}</li>\n'
        )
    elif kind == "api":
        final = ev["final"]
        out.append(
            f'<li class="api-failure{sub}{" final" if final else ""}"><span class="badge'
            f' {"bad" if final else "warn"}">{"API failure" if final else "API retry"}</span>'
            f" {e(ev['label'])}{clip_html(ev['text'])}</li>\n"
        )
    elif kind == "error":
        out.append(f'<li class="error{sub}"><span class="badge bad">error</span>{clip_html(ev["text"])}</li>\n')
    elif kind == "message":
        label = f" · {e(ev['label'])}" if ev["label"] else ""
        tokens = f" · {e(ev['tokens'])}" if ev.get("tokens") else ""
        out.append(f'<li class="message{sub}">model message{label}{tokens}</li>\n')
    elif kind == "session":
        label = f" · {e(ev['label'])}" if ev["label"] else ""
        out.append(f'<li class="session">session start{label}</li>\n')
    else:
        out.append(f'<li class="raw">{clip_html(ev["text"])}</li>\n')


def _call(out: list[str], c: Mapping[str, Any], sub: str, in_sub_agent: bool) -> None:
    classes = sub
    if c["is_error"]:
        classes += " is-error"
    if c["skill"] is not None:
        classes += " skill-call"
    if c["exit_code"] is not None:
        classes += " command"
    out.append(f'<li class="tool-call{classes}" data-tool="{e(c["name"])}">\n')
    out.append(f'<div><span class="tool-name">{e(c["name"])}</span>')
    if in_sub_agent:
        out.append(' <span class="label">in a sub-agent</span>')
    if c["exit_code"] is not None:
        ok = "ok" if c["exit_code"] == 0 else "bad"
        out.append(f' <span class="badge exit-code {ok}">exit {e(c["exit_code"])}</span>')
    if c["skill"] is not None:
        failed = c["skill_failed"]
        out.append(
            f' <span class="badge skill {"bad" if failed else "ok"}">skill {e(c["skill"])}'
            f"{': failed' if failed else ''}</span>"
        )
    if c["is_error"] and c["exit_code"] is None:
        out.append(' <span class="badge bad">error</span>')
    if not c["answered"]:
        out.append(' <span class="badge warn">no result</span>')
    if c["status"]:
        out.append(f' <span class="label">{e(c["status"])}</span>')
    if c["id"]:
        out.append(f' <span class="label">{e(c["id"])}</span>')
    out.append("</div>\n")
    if c["command"] is not None:
        out.append(f'<div class="input command-text">{clip_html(c["command"], "input")}</div>')
    else:
        out.append(f'<div class="input">{clip_html(c["input"], "input")}</div>')
    if c["result"] is not None:
        out.append(f'<div class="result">{clip_html(c["result"], "result")}</div>')
    out.append("</li>\n")


def _changes(out: list[str], changes: Mapping[str, Any] | None, problem: Markup) -> None:
    out.append('<section id="changes">\n<h2>Files changed</h2>\n')
    if changes is None:
        why = f"not shown: {e(problem)}" if problem else "not recorded (no changes.json in the trial folder)"
        out.append(f'<p class="none">{why}</p>\n')
        out.append("</section>\n\n")
        return
    counts = " · ".join(f'<span class="count {e(k)}">{e(v)} {e(k)}</span>' for k, v in changes["counts"])
    root = f' <span class="label">under {e(changes["root"])}</span>' if changes["root"] else ""
    out.append(f'<p class="counts">{counts}{root}</p>\n')
    if changes["truncated"]:
        out.append('<p class="cut">more files changed than were recorded</p>')
    files = changes["files"]
    if files:
        out.append(
            '<table class="files"><tr><th>file</th><th>change</th><th>size before</th><th>size after</th>'
            "<th>note</th></tr>\n"
        )
        for f in files:
            note = ("binary" if f["binary"] else "") + (f" no diff: {e(f['omitted'])}" if f["omitted"] else "")
            out.append(
                f'<tr class="{e(f["status"])}"><td class="path">{e(f["path"])}</td><td class="status">'
                f"{e(f['status_text'])}</td><td>{e(f['size_before'])}</td><td>{e(f['size'])}</td>"
                f"<td>{note}</td></tr>\n"
            )
        out.append("</table>\n")
        for f in files:
            diff = f["diff"]
            if not diff:
                continue
            out.append(
                f'<div class="file-diff {e(f["status"])}"><h3 class="path">{e(f["path"])}</h3>\n<pre class="diff">'
            )
            out += [f'<span class="{e(cls)}">{e(line)}</span>' for cls, line in diff["lines"]]
            out.append("</pre>\n")
            if diff["missing"]:
                out.append(
                    f'<p class="cut">… {diff["missing"]:,} more diff lines in <a href="./changes.json">'
                    "changes.json</a></p>"
                )
            out.append("</div>\n")
    else:
        out.append('<p class="none">the agent changed no file</p>\n')
    if changes["skipped"]:
        out.append(
            f'<p class="cut">… {e(changes["skipped"])} more files in <a href="./changes.json">changes.json</a></p>'
        )
    out.append("</section>\n\n")


def _checks(out: list[str], checks: Mapping[str, Any]) -> None:
    out.append('<section id="checks">\n<h2>Validation</h2>\n')
    rows = checks["rows"]
    if rows:
        out.append('<table class="checks"><tr><th>check</th><th>status</th><th>source</th><th>reason</th></tr>\n')
        for c in rows:
            reason = clip_html(c["reason"]) if c["reason"].head else ""
            out.append(
                f'<tr class="check {e(c["status"])}"><td>{e(c["name"])}</td><td><span class="badge'
                f' {e(c["status"])}">{e(c["status"])}</span></td><td>{e(c["source"])}</td><td>{reason}</td></tr>\n'
            )
        out.append("</table>\n")
    else:
        out.append('<p class="none">no checks recorded</p>\n')
    if checks["artifacts"]:
        out.append("<h3>Expected artifacts</h3><ul>")
        out += [f"<li><code>{e(pattern)}</code>: {e(found)}</li>" for pattern, found in checks["artifacts"]]
        out.append("</ul>")
    for f in checks["outputs"]:
        out.append(
            f'<details class="validation-output"><summary>output: <a href="{e(f["href"])}">{e(f["name"])}</a>'
            f" ({f['size']:,} bytes)</summary>{clip_html(f['text'])}</details>\n"
        )
    if checks["skipped"]:
        out.append(
            f'<p class="cut">… {e(checks["skipped"])} more checks or outputs: see record.json and validation/</p>'
        )
    out.append("</section>\n\n")


def _scores(out: list[str], scores: Mapping[str, Any]) -> None:
    out.append(
        '<section id="dimensions">\n<h2>Rubric dimensions</h2>\n<p>weighted score (rule dimensions): '
        f'<strong id="weighted-score">{e(scores["weighted"])}</strong></p>\n'
    )
    dimensions = scores["dimensions"]
    if dimensions:
        out.append(
            '<table class="dimensions"><tr><th>dimension</th><th>source</th><th>weight</th><th>score</th>'
            "<th>reason</th></tr>\n"
        )
        for d in dimensions:
            out.append(
                f'<tr class="dimension {"judge" if d["judge"] else "rule"}"><td class="name">{e(d["name"])}</td>'
                f'<td>{e(d["source"])}</td><td>{e(d["weight"])}</td><td class="score">{e(d["score"])}</td>'
                f"<td>{clip_html(d['reason'])}</td></tr>\n"
            )
        out.append("</table>\n")
    else:
        out.append('<p class="none">no dimensions recorded</p>\n')
    _listed(out, "Hard failures", scores["hard_failures"])
    out.append('</section>\n\n<section id="judge">\n<h2>Judge</h2>\n')
    if scores["judged"]:
        rows = "".join(f"<tr><th>{e(name)}</th><td>{e(value)}</td></tr>" for name, value in scores["judge"])
        out.append(f'<table class="judge">{rows}</table>\n')
    else:
        out.append('<p class="none">the judge was not enabled for this trial</p>\n')
    noise = scores["noise"]
    out.append(
        '</section>\n\n<section id="noise">\n<h2>Noise class</h2>\n'
        f'<p><span class="badge {e(noise["category"])}" id="noise-category">{e(noise["category"])}</span>'
        f' {e(noise["reason"])} <span class="label">({e(noise["source"])} signal)</span></p>\n'
    )
    if noise["evidence"]:
        out.append(f"<h3>Evidence</h3>{clip_html(noise['evidence'])}")
    out.append('</section>\n\n<section id="problems">\n<h2>Errors and API failures</h2>\n')
    if not (scores["errors"] or scores["agent_errors"] or scores["failures"] or scores["denials"]):
        out.append('<p class="none">none</p>')
    _listed(out, "Harness errors", scores["errors"])
    _listed(out, "API failures", scores["failures"])
    _listed(out, "Permission denials", scores["denials"])
    _listed(out, "Agent errors", scores["agent_errors"])
    out.append("</section>\n\n")


def _listed(out: list[str], heading: str, clips: Sequence[Clip]) -> None:
    if clips:
        out.append(f"<h3>{heading}</h3>")
        out += [str(clip_html(c)) for c in clips]

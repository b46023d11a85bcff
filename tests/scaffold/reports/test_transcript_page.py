"""scaffold.reports.transcript_page writes the page the jinja2 template it replaced wrote, byte for byte.

The template is kept beside this test (transcript_reference.html.j2) as the reference: every part of the
page, generated (every kind of event, every optional part present or not, texts with markup characters),
and the pages of whole trials as scaffold.reports.transcript builds them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape

from scaffold.reports import transcript
from scaffold.reports.transcript import TrialFolder, render_transcript
from scaffold.reports.transcript_page import Clip, clip_html, href, page
from tests.support.records import rec
from tests.support.transcripts import CHANGES, EVIL, long_trial, transcript_record

_REFERENCE = Environment(
    loader=FileSystemLoader(Path(__file__).parent),
    undefined=StrictUndefined,
    autoescape=True,
    trim_blocks=True,
    lstrip_blocks=True,
)  # the options the page's template was rendered with
_REFERENCE.filters["href"] = href
_REFERENCE.globals["clip"] = clip_html


def reference(**parts: Any) -> str:
    return _REFERENCE.get_template("transcript_reference.html.j2").render(**parts)


_RAW = st.text(alphabet=st.sampled_from("ab <>&\"'é·\n"), max_size=6)
_MARKUP = _RAW.map(lambda s: Markup(escape(s)))
_CLIP = st.builds(
    Clip,
    head=_MARKUP,
    full=st.none() | _MARKUP,
    missing=st.integers(0, 10**6),
    file=_RAW,
    size=st.integers(0, 10**6),
)
_FILE = st.fixed_dictionaries({"name": _MARKUP, "href": _RAW.map(href), "size": st.integers(0, 10**7), "text": _CLIP})
_CALL = st.fixed_dictionaries(
    {
        "name": _MARKUP,
        "id": _MARKUP,
        "command": st.none() | _CLIP,
        "input": _CLIP,
        "result": st.none() | _CLIP,
        "is_error": st.sampled_from([None, False, True]),
        "exit_code": st.none() | st.integers(-1, 2),
        "skill": st.none() | _MARKUP,
        "skill_failed": st.booleans(),
        "status": _MARKUP,
        "answered": st.booleans(),
    }
)
_EVENT = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(["tool", "text", "context", "denial", "api", "error", "message", "session", "raw"]),
        "sub": st.booleans(),
        "final": st.booleans(),
        "label": _MARKUP,
        "text": _CLIP,
        "call": _CALL,
        # Always there: the template required it of a model message (without, its page failed to render).
        "tokens": _MARKUP,
    },
)
_TURN = st.fixed_dictionaries(
    {
        "index": st.integers(1, 300),
        "kind": _MARKUP,
        "source": _MARKUP,
        "prompt": st.none() | _CLIP,
        "events": st.lists(_EVENT, max_size=4),
        "skipped": st.integers(0, 10**5),
        "stream": _RAW,
        "stream_href": _RAW.map(href),
        "stats": st.lists(st.tuples(st.sampled_from(["tokens", "cost", "API time"]), _MARKUP), max_size=3),
        "decision": st.none() | st.fixed_dictionaries({"pattern": _MARKUP, "reply": _CLIP, "source": _MARKUP}),
        "notes": st.lists(_RAW, max_size=2),
        "stderr": st.none() | _FILE,
        "missing_stream": st.booleans(),
    }
)
_DIFF = st.fixed_dictionaries(
    {
        "lines": st.lists(st.tuples(st.sampled_from(["add", "del", "ctx", "hunk", "meta"]), _MARKUP), max_size=3),
        "missing": st.integers(0, 10**5),
    }
)
_CHANGED = st.fixed_dictionaries(
    {
        "path": _MARKUP,
        "status": st.sampled_from(["added", "modified", "deleted", "other"]),
        "status_text": _MARKUP,
        "size": _RAW,
        "size_before": _RAW,
        "binary": st.booleans(),
        "omitted": _MARKUP,
        "diff": st.none() | _DIFF,
    }
)
_CHANGES = st.none() | st.fixed_dictionaries(
    {
        "root": _MARKUP,
        "counts": st.just(["added", "modified", "deleted"]).flatmap(
            lambda keys: st.tuples(*(st.tuples(st.just(k), _MARKUP) for k in keys)).map(list)
        ),
        "files": st.lists(_CHANGED, max_size=3),
        "skipped": st.integers(0, 5),
        "truncated": st.booleans(),
    }
)
_CHECKS = st.fixed_dictionaries(
    {
        "rows": st.lists(
            st.fixed_dictionaries(
                {"name": _MARKUP, "status": st.sampled_from(["passed", "failed", "error"]), "source": _MARKUP,
                 "reason": _CLIP}
            ),
            max_size=3,
        ),
        "artifacts": st.lists(st.tuples(_MARKUP, _MARKUP), max_size=2),
        "outputs": st.lists(_FILE, max_size=2),
        "skipped": st.integers(0, 3),
    }
)  # fmt: skip
_CLIPS = st.lists(_CLIP, max_size=2)
_SCORES = st.fixed_dictionaries(
    {
        "dimensions": st.lists(
            st.fixed_dictionaries(
                {"name": _MARKUP, "judge": st.booleans(), "source": _MARKUP, "weight": _RAW, "score": _RAW,
                 "reason": _CLIP}
            ),
            max_size=3,
        ),
        "weighted": _RAW,
        "hard_failures": _CLIPS,
        "judge": st.lists(st.tuples(st.sampled_from(["status", "model", "spread"]), _MARKUP), max_size=2),
        "judged": st.booleans(),
        "noise": st.fixed_dictionaries(
            {"category": st.sampled_from(["included", "excluded", "flagged"]), "reason": _MARKUP, "source": _MARKUP,
             "evidence": st.none() | _CLIP}
        ),
        "errors": _CLIPS,
        "agent_errors": _CLIPS,
        "failures": _CLIPS,
        "denials": _CLIPS,
    }
)  # fmt: skip
_PAGE = st.fixed_dictionaries(
    {
        "title": _MARKUP,
        "header": st.lists(st.tuples(st.sampled_from(["verdict", "experiment", "tokens"]), _MARKUP), max_size=4),
        "instruction": st.none() | _CLIP,
        "skills": st.lists(st.fixed_dictionaries({"name": _MARKUP, "variant": _MARKUP, "hash": _MARKUP}), max_size=2),
        "turns": st.lists(_TURN, max_size=2),
        "turns_skipped": st.integers(0, 3),
        "outputs": st.lists(_FILE, max_size=2),
        "commands": _CLIPS,
        "changes": _CHANGES,
        "changes_problem": _MARKUP,
        "checks": _CHECKS,
        "scores": _SCORES,
        "links": st.lists(st.tuples(_RAW.map(href), _MARKUP), max_size=3),
    }
)


@settings(max_examples=300, deadline=None)
@given(parts=_PAGE)
def test_every_part_of_the_page_is_the_templates_byte_for_byte(parts: dict[str, Any]) -> None:
    assert page(**parts) == reference(**parts)


def _trials() -> list[TrialFolder]:
    full = transcript_record(trajectory={"agent": "claude-code", "errors": [EVIL], "failures": []})
    return [
        TrialFolder(full, instruction=f"Fix it. {EVIL}", changes=CHANGES),
        TrialFolder(rec("old", "CONTROL", 1, "passed")),  # no instruction, streams or changes
        TrialFolder(full, changes=None, changes_problem=f"not a mapping {EVIL}"),
        long_trial(turns=20, calls=4, result_chars=40_000),
        long_trial(line="日本語のテキスト😀\n"),
    ]


@pytest.mark.parametrize("index", range(5))
def test_whole_trials_make_the_templates_page(index: int, monkeypatch: pytest.MonkeyPatch) -> None:
    pages: list[tuple[str, str]] = []

    def both(**parts: Any) -> str:
        mine = page(**parts)
        pages.append((mine, reference(**parts)))
        return mine

    monkeypatch.setattr(transcript, "page", both)
    render_transcript(_trials()[index])
    assert pages and all(mine == theirs for mine, theirs in pages)

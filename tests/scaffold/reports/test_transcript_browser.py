"""transcript.html of a real Claude Code trial, opened in headless Chromium.

The trial: the real CLI against the scripted model server (tests/data/e2e/claude-transcript.yaml) on
generic-skill-smoke with the markdown-report skill: a Skill call, a Write and an Edit of result.md, a
command that fails, then the judge (over HTTP, answered by the same server). The runner writes the page at
the trial's end; Chromium's DOM must show the turn with its tool calls and exit codes, the diff of
result.md and the rubric and judge dimensions, and its screenshot must not be blank.

Needs the claude CLI (skips without it, fails with COMET_REQUIRE_AGENT_CLIS=1) and Chromium (as
test_report_html_browser.py: fails with COMET_REQUIRE_BROWSER=1).
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from scaffold.agents import create_agent
from scaffold.catalog.builtin import BUILTIN_TASKS_DIR, BUILTIN_TREATMENTS_DIR
from scaffold.experiment import CHANGES_FILE, INSTRUCTION_FILE, TRANSCRIPT_FILE
from scaffold.experiment.cases import Case
from scaffold.judge.config import JudgeConfig
from scaffold.judge.transport import JudgeRun
from scaffold.modelserver import ScriptedModelServer, load_script
from tests.scaffold.reports.test_report_html_browser import chromium, run_chromium
from tests.support.agents import ANTHROPIC_KEY, SCRIPTS, require_cli, scripted_cli_env
from tests.support.dom import parse_dom
from tests.support.factories import make_runner
from tests.support.png import read_png

__all__ = ["chromium"]  # the fixture, shared with the report's browser test

WINDOW = (1280, 2400)
PASSED_GREEN = "#1a7f37"  # the "passed" badge of the page's style sheet (scaffold/reports/templates/transcript.html.j2)


@pytest.fixture(scope="module")
def trial_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real Claude Code trial with the judge on; its folder (with transcript.html)."""
    tmp_path = tmp_path_factory.mktemp("transcript-trial")
    cli = require_cli("claude")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", cli + os.pathsep + os.environ.get("PATH", ""))
        with ScriptedModelServer(load_script(SCRIPTS / "claude-transcript.yaml")) as server:
            env = scripted_cli_env(tmp_path / "user-home", server.url)
            runner = make_runner([BUILTIN_TASKS_DIR], [BUILTIN_TREATMENTS_DIR], tmp_path)
            runner.agent = create_agent("claude-code", env)
            runner.judge = JudgeRun(JudgeConfig("claude-code", "judge-model", server.url, api_key="judge-key"), {})
            try:
                result = runner.run(Case("generic-skill-smoke", "SKILL_MARKDOWN_REPORT", 1))
            finally:
                runner.backend.close()
    record = result.record
    assert record.verdict == "passed", (record.checks, record.errors, record.trajectory and record.trajectory.errors)
    assert record.judge is not None and record.judge.status == "enabled_and_successful", record.judge
    return result.record_path.parent


@pytest.mark.browser
@pytest.mark.agent_cli
@pytest.mark.slow
def test_transcript_of_a_real_claude_code_trial_in_chromium(chromium: Path, trial_dir: Path, tmp_path: Path) -> None:
    page = trial_dir / TRANSCRIPT_FILE
    assert (trial_dir / INSTRUCTION_FILE).read_text(encoding="utf-8").startswith("# Write a short result report")
    html = page.read_text(encoding="utf-8")
    assert ANTHROPIC_KEY not in html and "judge-key" not in html
    assert "<script>x" not in html  # the agent's edit, escaped

    dom = parse_dom(run_chromium(chromium, tmp_path, page, "--dump-dom").stdout)
    assert dom.by_id("verdict").text() == "passed"
    assert "Write a short result report" in dom.by_id("instruction").text()
    assert dom.by_id("instruction").all(cls="skill")[0].text().startswith("markdown-report")

    # The turn: text, the tool calls in order, the skill call that worked, the failed command's exit code.
    turns = dom.by_id("turns").all("article", "turn")
    assert len(turns) == 1
    turn = turns[0]
    assert [c.attrs["data-tool"] for c in turn.all(cls="tool-call")] == ["Skill", "Write", "Edit", "Bash"]
    skill = turn.all(cls="skill-call")[0]
    assert "skill markdown-report" in skill.text() and ": failed" not in skill.text()
    bash = turn.all(cls="command")[0]
    assert "cat notes-that-do-not-exist.txt" in bash.text()
    exit_badge = bash.all(cls="exit-code")[0].text()
    assert exit_badge.startswith("exit ") and exit_badge != "exit 0"
    assert "No such file" in bash.all(cls="result")[0].text()
    assert "Let me load the report skill first." in turn.text()
    stats = turn.all(cls="turn-stats")[0].text()
    assert "cost: $" in stats and "time: " in stats and "tokens: " in stats

    # The diff of result.md (changes.json, written by the runner before validation).
    assert (trial_dir / CHANGES_FILE).is_file()
    changes = dom.by_id("changes")
    rows = [(r.all(cls="path")[0].text(), r.attrs["class"]) for r in changes.all("tr")[1:]]
    assert rows == [("result.md", "added")], rows
    diff = changes.all("pre", "diff")[0]
    added = [s.text() for s in diff.all("span", "add")]
    assert "+# Skill Smoke Result" in added
    assert "+- Wrote this report and checked it with `head -3`, no `<script>x</script>` left" in added  # the Edit

    # Rubric and judge dimensions with their reasons; the judge's own table.
    dims = {
        r.all(cls="name")[0].text(): (r.all(cls="score")[0].text(), "judge" in r.classes)
        for r in dom.by_id("dimensions").all("tr", "dimension")
    }
    assert dims["skill_invocation"] == ("1.00", False)
    assert dims["task_completion"] == ("0.90", True) and dims["output_quality"] == ("0.70", True)
    assert "result.md has the title" in dom.by_id("dimensions").text()
    assert "enabled_and_successful" in dom.by_id("judge").text()
    assert dom.by_id("noise-category").text() in ("included", "flagged")

    # The screenshot: the page drew something, in more than the background colour.
    shot = tmp_path / "transcript.png"
    run_chromium(chromium, tmp_path, page, f"--screenshot={shot}", f"--window-size={WINDOW[0]},{WINDOW[1]}")
    image = read_png(shot)
    assert (image.width, image.height) == WINDOW
    colours = Counter(image.pixel(x, y) for y in range(0, image.height, 4) for x in range(0, image.width, 4))
    assert colours.most_common(1)[0][1] < 0.97 * sum(colours.values()), "the screenshot is (almost) blank"
    assert len(colours) > 20, "the screenshot has hardly any colours: nothing rendered"
    assert image.find(PASSED_GREEN), "no verdict badge in the passed colour at the top of the page"

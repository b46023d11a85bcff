"""The runner writes instruction.md and transcript.html with every trial; a transcript that fails never
costs the trial its record or its result."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from scaffold.experiment import INSTRUCTION_FILE, TRANSCRIPT_FILE
from scaffold.experiment.cases import Case
from scaffold.records.files import read_record
from scaffold.reports import transcripts
from tests.support.dom import parse_dom
from tests.support.factories import TaskFactory, make_runner


def test_a_trial_leaves_its_instruction_and_its_transcript(factory: TaskFactory, tmp_path: Path) -> None:
    factory.task("t", instruction="Write {task_name} <b>now</b>, trial {trial}.")
    runner = make_runner([factory.tasks_dir], [factory.treatments_dir], tmp_path)
    result = runner.run(Case("t", "CONTROL", 1))
    folder = result.record_path.parent
    assert (folder / INSTRUCTION_FILE).read_text(encoding="utf-8") == "Write t <b>now</b>, trial 1."
    dom = parse_dom((folder / TRANSCRIPT_FILE).read_text(encoding="utf-8"))
    assert "Write t <b>now</b>, trial 1." in dom.by_id("instruction").text()  # escaped, shown as text
    assert dom.by_id("verdict").text() == result.record.verdict == "passed"
    assert "solve.sh" in dom.by_id("turns").text()  # the oracle's output


def test_a_transcript_that_cannot_be_written_is_logged_and_the_trial_stands(
    factory: TaskFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(*args: object, **kwargs: object) -> Path:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("scaffold.trial.runner.write_transcript", refuse)
    factory.task("t")
    with caplog.at_level(logging.WARNING):
        runner = make_runner([factory.tasks_dir], [factory.treatments_dir], tmp_path)
        result = runner.run(Case("t", "CONTROL", 1))
    assert result.record.verdict == "passed" and read_record(result.record_path) == result.record
    assert not (result.record_path.parent / TRANSCRIPT_FILE).exists()
    assert "transcript.html: not written" in caplog.text and "No space left" in caplog.text


def test_a_failed_trials_page_is_there_when_its_run_returns(factory: TaskFactory, tmp_path: Path) -> None:
    # Its test's failure message names the page (pytest_comet.trial): it is written before the result.
    factory.task("t", solve="echo wrong > out.txt\n")
    runner = make_runner([factory.tasks_dir], [factory.treatments_dir], tmp_path)
    result = runner.run(Case("t", "CONTROL", 1))
    assert result.record.verdict == "failed"
    assert (result.record_path.parent / TRANSCRIPT_FILE).is_file()


def test_every_trial_returns_with_its_record_and_its_page_written(factory: TaskFactory, tmp_path: Path) -> None:
    factory.task("t")
    runner = make_runner([factory.tasks_dir], [factory.treatments_dir], tmp_path)
    for n in (1, 2):
        result = runner.run(Case("t", "CONTROL", n))
        assert result.record.verdict == "passed"
        assert read_record(result.record_path) == result.record
        assert (result.record_path.parent / TRANSCRIPT_FILE).is_file()
    runner.backend.close()


def test_a_page_that_cannot_be_built_says_why(
    factory: TaskFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    factory.task("t")
    result = make_runner([factory.tasks_dir], [factory.treatments_dir], tmp_path).run(Case("t", "CONTROL", 1))

    def broken(folder: object) -> str:
        raise ValueError("a template bug <script>")

    monkeypatch.setattr(transcripts, "render_transcript", broken)
    page = transcripts.write_transcript(result.record_path.parent, result.record)
    dom = parse_dom(page.read_text(encoding="utf-8"))
    assert "ValueError: a template bug <script>" in dom.by_id("transcript-error").text()
    assert "<script>" not in page.read_text(encoding="utf-8")

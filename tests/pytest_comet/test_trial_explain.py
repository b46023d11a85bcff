"""The failure message of a trial's test names its transcript, when the trial folder has one."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_comet.trial import Trial
from scaffold.experiment import RECORD_FILE, TRANSCRIPT_FILE
from scaffold.experiment.cases import Case
from scaffold.trial.runner import TrialResult
from tests.support.records import rec


def trial_in(folder: Path, verdict: str) -> Trial:
    folder.mkdir(parents=True)
    record = rec("t", "SKILL", 1, verdict, checks=[{"name": "done", "status": "failed", "source": "artifact"}])
    return Trial(Case("t", "SKILL", 1), TrialResult(record, folder / RECORD_FILE))


@pytest.mark.parametrize("verdict", ["failed", "error"])
def test_a_failed_or_errored_trial_names_its_transcript(tmp_path: Path, verdict: str) -> None:
    folder = tmp_path / "trials" / "t-SKILL-r1"
    trial = trial_in(folder, verdict)
    (folder / TRANSCRIPT_FILE).write_text("<!DOCTYPE html>", encoding="utf-8")
    lines = trial.explain().splitlines()
    assert f"  record: {folder / RECORD_FILE}" in lines
    assert lines[lines.index(f"  record: {folder / RECORD_FILE}") + 1] == f"  transcript: {folder / TRANSCRIPT_FILE}"
    with pytest.raises(pytest.fail.Exception, match=r"(?m)^  transcript: .*transcript\.html$"):
        trial.assert_passed()


def test_no_transcript_line_without_the_file(tmp_path: Path) -> None:
    # A trial resumed from an experiment written before transcripts existed has none to point at.
    trial = trial_in(tmp_path / "trials" / "t-SKILL-r1", "failed")
    assert "  transcript: " not in trial.explain()

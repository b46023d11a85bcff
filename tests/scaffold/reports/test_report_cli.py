"""``comet report``: merging experiment directories (CI shards), the merge refusals, the files written,
gates and the exit status (0 pass, 1 a gate failed, 2 usage error)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest

from scaffold.cli.main import main
from scaffold.records import TrialRecord
from scaffold.reports.load import load_experiments
from scaffold.reports.results import result_lines
from scaffold.util.atomic import write_json_atomic
from tests.support.records import changed, suite, tasks
from tests.support.synthetic import synthetic_records, task_names, treatment_names
from tests.support.synthetic import write_experiment as write_synthetic

COMET = [sys.executable, "-m", "scaffold.cli.main"]  # the console script's entry(), as `comet` runs it


def write_experiment(root: Path, experiment_id: str, records: list[TrialRecord]) -> Path:
    """An experiment directory as the runner leaves it: trials/<case>/record.json and a raw stream."""
    directory = root / experiment_id
    for record in records:
        record = changed(record, experiment_id=experiment_id, streams=["agent.turn-1.jsonl"])
        trial_dir = directory / "trials" / record.case_id
        write_json_atomic(trial_dir / "record.json", record.to_dict())
        (trial_dir / "agent.turn-1.jsonl").write_text("{}\n")
    return directory


def shards(tmp_path: Path) -> tuple[Path, Path]:
    """Six tasks split over two shards; SKILL passes every task, CONTROL none."""
    first = suite({"CONTROL": tasks(3, "FF"), "SKILL": tasks(3, "PP")})
    second = suite({"CONTROL": {f"u{i}": "FF" for i in range(3)}, "SKILL": {f"u{i}": "PP" for i in range(3)}})
    return write_experiment(tmp_path, "shard-1", first), write_experiment(tmp_path, "shard-2", second)


def test_merging_shards_writes_every_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one, two = shards(tmp_path)
    out = tmp_path / "out"
    code = main(["report", str(one), str(two), "--out", str(out), "--gate", "SKILL better than CONTROL"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert sorted(p.name for p in out.iterdir()) == [
        "comparison_report.md",
        "gates.json",
        "results.jsonl",
        "summary.md",
    ]
    assert "24 trial(s) of 6 task(s) from 2 directory(ies)" in printed
    assert "SKILL vs CONTROL: improvement" in printed
    assert "gate PASS: SKILL better than CONTROL: significant improvement" in printed
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 24 and {r["experiment_id"] for r in rows} == {"shard-1", "shard-2"}
    # Links are relative to the report folder, so the folders can move together.
    first = rows[0]
    assert first["record"] == f"../{first['experiment_id']}/trials/{first['case_id']}/record.json"
    assert (out / first["record"]).is_file() and (out / first["streams"][0]).is_file()
    report = (out / "comparison_report.md").read_text()
    assert "from 2 experiment(s): shard-1, shard-2" in report
    assert "# Experiment shard-1, shard-2" in (out / "summary.md").read_text()


def test_a_failed_gate_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one, two = shards(tmp_path)
    gates = ["--gate", "CONTROL not worse than SKILL", "--gate", "pass@1 of SKILL >= 0.9"]
    code = main(["report", str(one), str(two), "--out", str(tmp_path / "out"), *gates])
    printed = capsys.readouterr().out
    assert code == 1
    assert "gate FAIL: CONTROL not worse than SKILL: significant regression" in printed
    assert "gate PASS: pass@1 of SKILL >= 0.9: pass@1 of SKILL = 1 (mean over 6 task(s)); needs >= 0.9" in printed


def test_one_directory_reports_into_itself_with_another_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, _ = shards(tmp_path)
    assert main(["report", str(one), "--baseline", "SKILL"]) == 0
    # 3 tasks are too few across tasks; on these tasks, 2 of 2 against 0 of 2 three times is a regression.
    assert "CONTROL vs SKILL: regression" in capsys.readouterr().out
    row = json.loads((one / "results.jsonl").read_text().splitlines()[0])
    assert row["record"] == f"trials/{row['case_id']}/record.json"


def test_configuration_hashes_that_differ_are_refused_naming_both_dirs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = write_experiment(tmp_path, "a", suite({"CONTROL": {"t": "P"}}))
    other = [changed(r, config_hash="other", trial=2, case_id="t-CONTROL-r2") for r in suite({"CONTROL": {"t": "P"}})]
    two = write_experiment(tmp_path, "b", other)
    code = main(["report", str(one), str(two), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert (
        "comet: cannot merge: trials of task 't' under treatment 'CONTROL' ran different configurations "
        f"(h in {one}, other in {two})" in err
    )
    assert not (tmp_path / "out").exists()


def test_the_same_trial_in_two_directories_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = write_experiment(tmp_path / "x", "same", suite({"CONTROL": {"t": "P"}}))
    two = write_experiment(tmp_path / "y", "same", suite({"CONTROL": {"t": "P"}}))
    assert main(["report", str(one), str(two), "--out", str(tmp_path / "out")]) == 2
    assert f"trial 't-CONTROL-r1' of experiment 'same' is in both {one} and {two}" in capsys.readouterr().err
    # The same directory twice is read once, not refused.
    assert main(["report", str(one), str(one), "--out", str(tmp_path / "out")]) == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{missing}"], "no such directory"),
        (["{plain}"], "not an experiment directory (no trials/ folder inside)"),
        (["{empty}"], "no readable trial records in"),
        (["{one}", "{one2}"], "several experiment directories are merged: say where the reports go with --out DIR"),
        (["{one}", "--gate", "SKILL beats CONTROL"], "--gate 'SKILL beats CONTROL' does not parse"),
        (["{one}", "--report-config", "{missing}"], "cannot be read"),
    ],
)
def test_usage_errors_exit_2_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "empty" / "trials").mkdir(parents=True)
    places = {
        "missing": tmp_path / "missing",
        "plain": tmp_path / "plain",
        "empty": tmp_path / "empty",
        "one": write_experiment(tmp_path, "one", suite({"CONTROL": {"t": "P"}})),
        "one2": write_experiment(tmp_path, "one2", suite({"CONTROL": {"t": "P"}})),
    }
    assert main(["report", *(a.format(**places) for a in args)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("comet: ") and message in err and "Traceback" not in err


def test_unreadable_records_are_listed_and_the_rest_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = write_experiment(tmp_path, "one", suite({"CONTROL": {"t": "PP"}}))
    bad = one / "trials" / "t-CONTROL-r9" / "record.json"
    bad.parent.mkdir()
    bad.write_text("{not json")
    # Exit 3: the reports were written from the readable records, and the unreadable one is listed.
    assert main(["report", str(one)]) == 5  # ExitStatus.UNREADABLE
    assert (
        "- trials/t-CONTROL-r9/record.json: cannot be read as a trial record"
        in (one / "comparison_report.md").read_text()
    )


def test_markdown_off_by_configuration_and_the_real_command(tmp_path: Path) -> None:
    one, _ = shards(tmp_path)
    config = tmp_path / "outputs.json"
    config.write_text('{"report_outputs": {"markdown": false}}')
    done = subprocess.run(
        [sys.executable, "-m", "scaffold.cli.main", "report", str(one), "--report-config", str(config)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in one.iterdir()) == ["results.jsonl", "trials"]


def test_html_by_flag_with_links_that_resolve(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one, two = shards(tmp_path)
    out = tmp_path / "out"
    # --transcripts: these shards were written without transcripts (as before transcripts existed); the page links them.
    assert main(["report", str(one), str(two), "--out", str(out), "--html", "--transcripts"]) == 0
    assert f"wrote {out / 'report.html'}" in capsys.readouterr().out
    page = (out / "report.html").read_text()
    assert page.lstrip().lower().startswith("<!doctype html>")
    links = re.findall(r'href="(\.\./shard-[^"]+)"', page)
    assert links and all((out / unquote(link)).is_file() for link in links)
    assert (out / "report.html").stat().st_mode & 0o777 == 0o644


def test_html_by_report_config_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    one, _ = shards(tmp_path)
    monkeypatch.setenv("COMET_EVAL_REPORT_CONFIG", '{"report_outputs": {"markdown": false, "html": true}}')
    assert main(["report", str(one)]) == 0
    assert sorted(p.name for p in one.iterdir()) == ["report.html", "results.jsonl", "trials"]


def test_trial_streams_come_from_the_record_or_else_from_the_folder(tmp_path: Path) -> None:
    records = suite({"CONTROL": {"t": "PF"}})
    one = write_experiment(tmp_path, "one", records)
    trials = one / "trials"
    # A record that lists its streams is believed (a newer record); one that does not has its folder listed.
    listed = changed(records[0], experiment_id="one", streams=("agent.turn-1.jsonl", "agent.turn-2.jsonl"))
    write_json_atomic(trials / listed.case_id / "record.json", listed.to_dict())
    older = trials / records[1].case_id / "record.json"  # written before records listed their streams
    older.write_text(json.dumps({k: v for k, v in json.loads(older.read_text()).items() if k != "streams"}))
    (trials / records[1].case_id / "agent.turn-1.stderr.log").write_text("")
    (trials / records[1].case_id / "notes.txt").write_text("")  # not a stream: not linked
    # A folder without a record (an interrupted trial) is not a problem, and not a trial.
    (trials / "t-CONTROL-r9").mkdir()
    (trials / "t-CONTROL-r9" / "agent.turn-1.jsonl").write_text("{}\n")
    # A trial folder renamed by hand: the links follow the folder, not the case id.
    (trials / records[1].case_id).rename(trials / "moved")
    loaded = load_experiments([one], link_base=one)
    assert loaded.problems == () and len(loaded.records) == 2
    first, second = (loaded.files[("one", r.case_id)] for r in records)
    assert first.record == f"trials/{records[0].case_id}/record.json"
    assert first.streams == tuple(f"trials/{records[0].case_id}/agent.turn-{i}.jsonl" for i in (1, 2))
    assert second.record == "trials/moved/record.json"
    assert second.streams == ("trials/moved/agent.turn-1.jsonl", "trials/moved/agent.turn-1.stderr.log")


def test_the_command_writes_what_the_steps_give_and_keeps_its_status_through_the_fast_exit(tmp_path: Path) -> None:
    # The real command ends with os._exit after retaining its records (scaffold.cli.main.entry): its
    # files must be exactly what the same steps give in this process, and its exit status the gate's.
    records = list(synthetic_records(task_names(10), treatment_names(4), 50, seed=3))
    experiment = write_synthetic(tmp_path / "logs", records).root
    out = tmp_path / "out"
    gate = ["--gate", "pass@1 of SKILL_01 >= 0.99"]  # fails: the exit status survives the fast exit
    done = subprocess.run(
        [*COMET, "report", str(experiment), "--html", "--out", str(out), *gate],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert f"{len(records)} trial(s) of 10 task(s) from 1 directory(ies)" in done.stdout
    assert "gate FAIL: pass@1 of SKILL_01 >= 0.99" in done.stdout and done.stderr == ""
    assert sorted(p.name for p in out.iterdir()) == [
        "comparison_report.md",
        "gates.json",
        "report.html",
        "results.jsonl",
        "summary.md",
    ]
    loaded = load_experiments([experiment], link_base=out)
    assert (out / "results.jsonl").read_text() == "".join(result_lines(loaded.records, loaded.files))
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []  # no temporary file left


def test_output_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    one, _ = shards(tmp_path)
    reader, writer = os.pipe()
    os.close(reader)  # nobody reads: printing fails with a broken pipe
    try:
        done = subprocess.run([*COMET, "report", str(one)], stdout=writer, stderr=subprocess.PIPE, check=False)
    finally:
        os.close(writer)
    assert done.returncode == 141 and done.stderr == b""  # as a shell reports a process stopped by SIGPIPE
    assert (one / "results.jsonl").is_file()


def test_the_gates_are_written_into_every_report_and_gates_json(tmp_path: Path) -> None:
    one, two = shards(tmp_path)
    out = tmp_path / "out"
    gates = [
        "SKILL better than CONTROL",
        "SKILL not worse than CONTROL by more than 10 points",
        "pass@1 of SKILL >= 0.99",
    ]
    code = main(["report", str(one), str(two), "--out", str(out), "--html", *[f"--gate={g}" for g in gates]])
    assert code == 0
    written = json.loads((out / "gates.json").read_text())
    assert written["passed"] is True and [g["expression"] for g in written["gates"]] == gates
    first = written["gates"][0]
    assert first["scope"] == "across tasks" and first["passed"] is True and first["baseline"] == "CONTROL"
    assert written["gates"][1]["margin"] == pytest.approx(0.10) and written["gates"][2]["scope"] == ""
    for name in ("summary.md", "comparison_report.md"):
        text = (out / name).read_text()
        assert "## Gates" in text and "| `SKILL better than CONTROL` | across tasks | PASS |" in text
    html = (out / "report.html").read_text()
    assert "<h3>Gates</h3>" in html and "<code>pass@1 of SKILL &gt;= 0.99</code>" in html
    # Without a gate there is no gates.json, and no section.
    main(["report", str(one), "--out", str(tmp_path / "plain")])
    assert not (tmp_path / "plain" / "gates.json").exists()
    assert "## Gates" not in (tmp_path / "plain" / "summary.md").read_text()

"""Reports benchmark: the time to produce every report of a 100,000-trial experiment, and report.html's size.

Generates ``--tasks`` x ``--treatments`` x ``--trials`` synthetic trial records (tests/support/synthetic.py:
realistic records of about 3.9 KB with generic-rubric dimensions, noise, tokens and cost, and a raw stream
file per trial) into an experiment directory in a temporary folder, then measures:

* end to end, in a fresh process: ``comet report EXPERIMENT_DIR --html --out OUT`` (read every record,
  analyse, write summary.md, comparison_report.md, results.jsonl and report.html), the command a user or CI
  runs; goal **at most 10 s**;
* the same steps one by one in this process (the collector paused, as the command does), so the split
  shows what dominates: reading the records (scaffold.reports.load), the analysis, and each renderer.
  The command adds its start-up and the process's end to the sum of the steps;
* the size of report.html; goal **at most 2 MB**;
* ``comet report EXPERIMENT_DIR --transcripts`` on an experiment of ``--transcript-trials`` trials (at
  most the total; default 10,000): every trial's transcript.html (re)written; goal **at most 30 s**, with
  the largest page's size;
* when Chromium is installed (/usr/bin/chromium), a headless render (``--dump-dom``) of the transcript of
  a 200-turn trial with huge outputs (tests/support/transcripts.py), beside an empty page's (the browser's
  own start); goal for the difference, the page's own load and render, **at most 2 s**.

The files were just written, so the operating system's page cache is warm, as it is when reports are
written at the end of a session; a cold disk adds the time to read about 400 MB.

Informational: exits 0 whatever the figures (the goals are printed as PASS/MISS); exits 1 only when a
step fails.

    .venv/bin/python benchmarks/reports.py [--tasks 100] [--treatments 10] [--trials 100] [--repeat 1] [--keep]
                                           [--transcript-trials 10000]
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the synthetic records come from the test support package

from scaffold.records.files import gc_paused  # noqa: E402
from scaffold.reports.analysis import build_analysis  # noqa: E402
from scaffold.reports.comparison import render_comparison  # noqa: E402
from scaffold.reports.html import render_html  # noqa: E402
from scaffold.reports.load import load_experiments  # noqa: E402
from scaffold.reports.results import result_lines  # noqa: E402
from scaffold.reports.summary import render_summary  # noqa: E402
from scaffold.reports.transcript import render_transcript  # noqa: E402
from tests.support.synthetic import synthetic_records, task_names, treatment_names, write_experiment  # noqa: E402
from tests.support.transcripts import long_trial  # noqa: E402

TIME_GOAL_S = 10.0
SIZE_GOAL = 2_000_000
TRANSCRIPTS_GOAL_S = 30.0
BROWSER_GOAL_S = 2.0
CHROMIUM = Path("/usr/bin/chromium")
T = TypeVar("T")


def timed(label: str, times: dict[str, list[float]], step: Callable[[], T]) -> T:
    start = time.perf_counter()
    result = step()
    times.setdefault(label, []).append(time.perf_counter() - start)
    return result


def in_process(experiment: Path, out: Path, times: dict[str, list[float]]) -> int:
    """Every step of ``comet report --html`` in turn; returns report.html's size in bytes."""
    with gc_paused():  # as scaffold.reports.write.report_experiments runs them
        return _steps(experiment, out, times)


def _steps(experiment: Path, out: Path, times: dict[str, list[float]]) -> int:
    loaded = timed("read records (load_experiments)", times, lambda: load_experiments([experiment], link_base=out))
    title = ", ".join(sorted({r.experiment_id for r in loaded.records}))
    analysis = timed(
        "analysis (build_analysis)",
        times,
        lambda: build_analysis(loaded.records, problems=loaded.problems, files=loaded.files),
    )
    summary = timed("summary.md", times, lambda: render_summary(analysis, title))
    comparison = timed("comparison_report.md", times, lambda: render_comparison(analysis, title))
    results = timed("results.jsonl", times, lambda: "".join(result_lines(loaded.records, loaded.files)))
    page = timed("report.html (render_html)", times, lambda: render_html(analysis))
    texts = {"summary.md": summary, "comparison_report.md": comparison, "results.jsonl": results, "report.html": page}

    def write() -> None:
        for name, text in texts.items():
            (out / name).write_text(text, encoding="utf-8")

    timed("write the four files", times, write)
    return len(page.encode("utf-8"))


def end_to_end(experiment: Path, out: Path) -> float:
    comet = Path(sys.executable).with_name("comet")
    command = [str(comet), "report", str(experiment), "--html", "--out", str(out)]
    # Earlier rounds wrote hundreds of MB; flush them now rather than have the kernel do it mid-round.
    os.sync()
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"comet report exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    return wall


def transcripts(tmp: Path, trials: int, args: argparse.Namespace) -> None:
    """``comet report --transcripts`` over *trials* synthetic trials, in a fresh process; the largest page."""
    records = synthetic_records(task_names(args.tasks), treatment_names(args.treatments), args.trials)
    experiment = write_experiment(tmp / "logs-transcripts", itertools.islice(records, trials)).root
    comet = Path(sys.executable).with_name("comet")
    os.sync()
    start = time.perf_counter()
    command = [str(comet), "report", str(experiment), "--transcripts", "--out", str(tmp / "out-transcripts")]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"comet report --transcripts exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    sizes = [page.stat().st_size for page in (experiment / "trials").glob("*/transcript.html")]
    if len(sizes) != trials:
        raise RuntimeError(f"comet report --transcripts wrote {len(sizes)} pages for {trials} trials")
    print(
        f"\ncomet report --transcripts, {trials:,} trials (fresh process, reports included): {wall:.2f}s"
        f"  goal <= {TRANSCRIPTS_GOAL_S:.0f} s: {'PASS' if wall <= TRANSCRIPTS_GOAL_S else 'MISS'}"
    )
    print(f"largest transcript.html: {max(sizes):,} bytes")


def browser_render(tmp: Path) -> None:
    """Headless Chromium on the transcript of a 200-turn trial, and on an empty page for the start-up."""
    if not os.access(CHROMIUM, os.X_OK):
        print(f"\nno {CHROMIUM}: the browser render of a 200-turn transcript is not measured")
        return
    page = tmp / "long-transcript.html"
    start = time.perf_counter()
    page.write_text(render_transcript(long_trial(200)), encoding="utf-8")
    rendered = time.perf_counter() - start
    empty = tmp / "empty.html"
    empty.write_text("<!DOCTYPE html><title>empty</title>", encoding="utf-8")
    walls = {}
    for name, path in (("empty page", empty), ("200-turn transcript", page)):
        command = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                   f"--user-data-dir={tmp / ('profile-' + path.stem)}", "--dump-dom", path.as_uri()]  # fmt: skip
        begin = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
        walls[name] = time.perf_counter() - begin
        if done.returncode != 0:
            raise RuntimeError(f"chromium exited {done.returncode}: {done.stderr[-2000:]}")
    wall, startup = walls["200-turn transcript"], walls["empty page"]
    print(
        f"\n200-turn transcript: {page.stat().st_size:,} bytes, written by the harness in {rendered:.2f}s;"
        f" headless Chromium --dump-dom {wall:.2f}s, an empty page {startup:.2f}s (the browser's start)"
    )
    print(
        f"the page's own load and render (the difference): {wall - startup:.2f}s"
        f"  goal <= {BROWSER_GOAL_S:.0f} s: {'PASS' if wall - startup <= BROWSER_GOAL_S else 'MISS'}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=100, help="tasks (default 100)")
    parser.add_argument("--treatments", type=int, default=10, help="treatments incl. CONTROL (default 10)")
    parser.add_argument("--trials", type=int, default=100, help="trials per task and treatment (default 100)")
    parser.add_argument("--repeat", type=int, default=1, help="timed rounds of both measurements (default 1)")
    parser.add_argument("--keep", action="store_true", help="keep the generated experiment and reports")
    parser.add_argument(
        "--transcript-trials", type=int, default=10_000, help="trials for comet report --transcripts (default 10000)"
    )
    args = parser.parse_args(argv)
    if min(args.tasks, args.treatments, args.trials, args.repeat) < 1:
        parser.error("--tasks, --treatments, --trials and --repeat must be at least 1")

    total = args.tasks * args.treatments * args.trials
    tmp = Path(tempfile.mkdtemp(prefix="comet-bench-reports-"))
    try:
        print(f"reports: {args.tasks} tasks x {args.treatments} treatments x {args.trials} trials = {total} records")
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, files in {tmp}")
        start = time.perf_counter()
        records = synthetic_records(task_names(args.tasks), treatment_names(args.treatments), args.trials)
        experiment = write_experiment(tmp / "logs", records).root
        print(f"generated in {time.perf_counter() - start:.1f}s (not part of the figures)")

        walls: list[float] = []
        times: dict[str, list[float]] = {}
        size = 0
        # Every end-to-end round first, each in a fresh process; then the in-process steps (this process
        # grows by the records it reads, which the fresh processes should not share the machine with).
        for i in range(args.repeat):
            out_cli = tmp / f"out-cli-{i}"
            out_cli.mkdir()
            walls.append(end_to_end(experiment, out_cli))
            cli_size = (out_cli / "report.html").stat().st_size
            print(f"  round {i + 1}: comet report {walls[-1]:.2f}s; report.html {cli_size:,} bytes", flush=True)
        for i in range(args.repeat):
            out_steps = tmp / f"out-steps-{i}"
            out_steps.mkdir()
            size = in_process(experiment, out_steps, times)

        print(f"\n{'step (in this process)':<36} {'s (median)':>10} {'share':>7}")
        medians = {label: statistics.median(values) for label, values in times.items()}
        steps = sum(medians.values())
        for label, value in medians.items():
            print(f"{label:<36} {value:>10.2f} {value / steps:>7.0%}")
        print(f"{'sum of the steps':<36} {steps:>10.2f}")

        wall = statistics.median(walls)
        print(
            f"\ncomet report --html, end to end (fresh process, median): {wall:.2f}s"
            f"  goal <= {TIME_GOAL_S:.0f} s: {'PASS' if wall <= TIME_GOAL_S else 'MISS'}"
        )
        print(
            f"report.html: {size:,} bytes ({size / 1e6:.2f} MB)"
            f"  goal <= {SIZE_GOAL / 1e6:.0f} MB: {'PASS' if size <= SIZE_GOAL else 'MISS'}"
        )
        transcripts(tmp, min(args.transcript_trials, total), args)
        browser_render(tmp)
        return 0
    except (RuntimeError, OSError) as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.keep:
            print(f"\nkept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

"""Progress reporters: plain lines, JSON lines, the live display, the summary."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
)
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice
from databricks_bundle_decorators.launch.run.events import (
    Counts,
    FailedSlice,
    LaunchEvent,
    LaunchSummary,
)
from databricks_bundle_decorators.launch.run.summary import summarize
from databricks_bundle_decorators.launch.status.progress import (
    JsonReporter,
    LiveReporter,
    PlainReporter,
    summary_lines,
)

SUMMARY = LaunchSummary(
    backfill_id="nightly-1",
    job="nightly",
    state="failed",
    counts=Counts(total=3, done=2, failed=1),
    seconds=75.0,
    durations={"2024-01-01": 10.0, "2024-01-03": 30.0},
    failed=(FailedSlice("2024-01-02", ("2024-01-02",), "FAILED: boom", "77", "https://h/run/77"),),
    rerun_command="dbxdec backfill nightly --keys 2024-01-02",
    resume_command="dbxdec backfill --resume nightly-1",
)


def event(kind: str, **kw: object) -> LaunchEvent:
    return LaunchEvent(kind, 0.0, Counts(total=3, done=1, running=1), **kw)  # type: ignore[arg-type]


def test_plain_lines_show_state_changes_with_progress() -> None:
    out = io.StringIO()
    reporter = PlainReporter(out, clock=iter([0.0, 0.0, 10.0]).__next__)
    reporter.start(3, "Backfill nightly-1")
    reporter(event("succeeded", label="2024-01-01", seconds=4.0, run_id="5", attempt=2))
    lines = out.getvalue().splitlines()
    assert lines[0] == "Backfill nightly-1"
    assert "succeeded  2024-01-01 attempt 2 in 4.0s run 5" in lines[1]
    assert "[1/3 done, 1 running, 0 failed, 1 left, ETA 20.0s]" in lines[1]


def test_summary_lists_failures_durations_and_commands() -> None:
    text = "\n".join(summary_lines(SUMMARY))
    assert "failed - 2 succeeded, 1 failed, 0 not run, of 3 runs in 1m15s" in text
    assert "  FAILED 2024-01-02: boom (run 77, https://h/run/77)" in text
    assert "slowest: 2024-01-03 30.0s, 2024-01-01 10.0s" in text
    assert "Rerun the failed keys: dbxdec backfill nightly --keys 2024-01-02" in text
    assert "Resume this backfill" not in text  # one next command (issue 25 item 10)
    halted = replace(SUMMARY, counts=replace(SUMMARY.counts, total=4))  # one key never ran
    assert summary_lines(halted)[-1] == "Resume this backfill:  dbxdec backfill --resume nightly-1"
    assert "Rerun the failed keys" not in "\n".join(summary_lines(halted))


def test_json_lines_are_events_then_summary() -> None:
    out = io.StringIO()
    reporter = JsonReporter(out)
    reporter.start(3, "go")
    reporter(event("failed", label="k", message="boom"))
    reporter.finish(SUMMARY)
    start, failed, summary = (json.loads(line) for line in out.getvalue().splitlines())
    assert start["event"] == "start" and start["total"] == 3
    assert failed["event"] == "failed" and failed["message"] == "boom"
    assert failed["counts"]["remaining"] == 1
    assert summary["event"] == "summary" and summary["exit_code"] == 1
    assert summary["failed"][0]["keys"] == ["2024-01-02"]


def test_live_display_renders_counts_and_slowest() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    reporter = LiveReporter(console)
    reporter.start(3, "backfill")
    reporter(event("succeeded", label="2024-01-01", seconds=12.0))
    reporter(event("failed", label="2024-01-02", message="boom"))
    reporter.finish(SUMMARY)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "running 1" in text and "slowest: 2024-01-01 12.0s" in text
    assert "failed: 2024-01-02 boom" in text and "Rerun the failed keys" in text


# -- an 80-column terminal without colour (issue 14) ------------------------------------------

BACKFILL_ID = "nightly_orders-20240601T020000-1a2b"
HEADER = f"Backfill {BACKFILL_ID}: nightly_orders, 30 runs (databricks, up to 4 at once)"


@pytest.fixture
def narrow(monkeypatch: pytest.MonkeyPatch) -> Console:
    """An 80-column console with NO_COLOR; not a terminal, so the live display prints its
    last frame once when it stops, then the summary."""
    monkeypatch.setenv("NO_COLOR", "1")
    return Console(file=io.StringIO(), width=80, force_terminal=False)


def printed(console: Console) -> list[str]:
    return console.file.getvalue().splitlines()  # type: ignore[attr-defined]


def days(n: int) -> list[str]:
    return [f"2024-04-{i + 1:02d}" for i in range(n)]


def ledger_after_ctrl_c_during_a_retry(root: Path) -> Ledger:
    """30 daily slices: 12 succeeded, 04-13 failed for good, 04-14 failed once and was
    waiting for its retry when Ctrl-C drained the backfill, 16 never launched."""
    plan = BackfillPlan("nightly_orders", tuple(Slice(i, (k,)) for i, k in enumerate(days(30))))
    ledger = Ledger.create(
        root,
        plan,
        backend=BackendSpec("databricks", 1),
        options=LaunchOptions(retries=1),
        backfill_id=BACKFILL_ID,
    )
    for record in ledger.slices[:12]:
        ledger.update(record.with_attempt(Attempt(1, "t", "succeeded", str(record.index), None)))
    failed_for_good = ledger.slices[12]
    for number in (1, 2):
        attempt = Attempt(number, "t", "failed", f"9{number}", error="FAILED: table locked")
        failed_for_good = failed_for_good.with_attempt(attempt)
    ledger.update(failed_for_good)
    waiting = Attempt(1, "t", "failed", "95", error="FAILED: disk quota")
    ledger.update(ledger.slices[13].with_attempt(waiting))
    ledger.set_state("interrupted")
    return ledger


def test_an_80_column_display_keeps_the_bar_and_counter(narrow: Console) -> None:
    reporter = LiveReporter(narrow)
    reporter.start(30, HEADER)
    reporter(LaunchEvent("succeeded", 0.0, Counts(total=30, done=13, running=4), label="k"))
    reporter.finish(SUMMARY)
    lines = printed(narrow)
    bar = next(line for line in lines if "13/30" in line)
    assert "━" * 10 in bar and "…" not in bar
    assert not any("…" in line for line in lines)
    assert any(BACKFILL_ID in line for line in lines)  # the header, its id in one piece


def test_the_summary_counts_what_it_lists_after_ctrl_c_during_a_retry(
    tmp_path: Path, narrow: Console
) -> None:
    ledger = ledger_after_ctrl_c_during_a_retry(tmp_path)
    scheduler_counts = Counts(total=30, done=12, failed=1)  # 04-14 was neither failed nor running
    summary = summarize(ledger, 42.0)
    assert (summary.counts.done, summary.counts.failed, summary.counts.remaining) == (12, 2, 16)
    assert summary.counts.failed == len(summary.failed)

    reporter = LiveReporter(narrow)
    reporter.start(30, HEADER)
    retry = "FAILED: disk quota (retry in 1 s)"
    reporter(LaunchEvent("retrying", 0.0, scheduler_counts, label="2024-04-14", message=retry))
    drain = "draining: no new runs; waiting for 0 in flight (Ctrl-C again cancels them)"
    reporter(LaunchEvent("draining", 0.0, scheduler_counts, message=drain))
    reporter.finish(summary)
    text = "\n".join(printed(narrow))
    assert "interrupted - 12 succeeded, 2 failed, 16 not run, of 30 runs" in text
    assert [line.split(":")[0] for line in text.splitlines() if "FAILED 2024" in line] == [
        "  FAILED 2024-04-13",
        "  FAILED 2024-04-14",
    ]
    assert "  FAILED 2024-04-13: table locked (run 92)" in text
    assert "retry in" not in text  # the retry will not happen: the session is over
    assert "draining: no new runs" in text and "draining:  draining" not in text
    assert "draining: draining" not in text


def test_the_plain_lines_do_not_repeat_the_event_kind() -> None:
    out = io.StringIO()
    reporter = PlainReporter(out, clock=iter([0.0, 0.0, 0.0]).__next__)
    reporter.start(3, "go")
    reporter(event("draining", message="draining: no new runs; waiting for 1 in flight"))
    line = out.getvalue().splitlines()[1]
    assert "draining   no new runs; waiting for 1 in flight" in line
    assert line.count("draining") == 1


def test_a_retrying_line_goes_once_the_slice_moves_on(narrow: Console) -> None:
    reporter = LiveReporter(narrow)
    reporter.start(3, "go")
    reporter(event("retrying", label="2024-01-02", message="boom (retry in 1 s)"))
    reporter(event("failed", label="2024-01-02", message="boom"))
    reporter.finish(SUMMARY)
    text = "\n".join(printed(narrow))
    assert "failed: 2024-01-02 boom" in text and "retry in" not in text


def test_the_resume_command_prints_unbroken_at_80_columns(tmp_path: Path, narrow: Console) -> None:
    ledger = ledger_after_ctrl_c_during_a_retry(tmp_path)
    summary = summarize(ledger, 42.0, ("--project", "/home/jane/projects/sales"))
    assert summary.resume_command is not None and BACKFILL_ID in summary.resume_command
    reporter = LiveReporter(narrow)
    reporter.start(30, HEADER)
    reporter.finish(summary)
    lines = printed(narrow)
    assert any(summary.resume_command in line for line in lines), lines
    assert summary.rerun_command is not None  # not recommended: a key never ran
    assert not any(summary.rerun_command in line for line in lines), lines

"""Progress reporters: plain lines, JSON lines, the live display, the summary."""

from __future__ import annotations

import io
import json

from rich.console import Console

from databricks_bundle_decorators.launch.events import (
    Counts,
    FailedSlice,
    LaunchEvent,
    LaunchSummary,
)
from databricks_bundle_decorators.launch.progress import (
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
    assert "FAILED 2024-01-02: FAILED: boom (run 77, https://h/run/77)" in text
    assert "slowest: 2024-01-03 30.0s, 2024-01-01 10.0s" in text
    assert "Rerun the failed keys: dbxdec backfill nightly --keys 2024-01-02" in text
    assert "Resume this backfill:  dbxdec backfill --resume nightly-1" in text


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

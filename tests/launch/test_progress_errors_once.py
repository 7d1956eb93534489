"""A run's error is printed once (issue 25 item 4): the progress line that reports it,
then pointers -- for the same error of another key, a retry, and the summary."""

from __future__ import annotations

import io

from rich.console import Console

from databricks_bundle_decorators.launch.run.events import (
    Counts,
    FailedSlice,
    LaunchEvent,
    LaunchSummary,
)
from databricks_bundle_decorators.launch.status.progress import LiveReporter, PlainReporter
from databricks_bundle_decorators.runtime.session.task_errors import MAX_MESSAGE, error_text

ERROR = "FAILED: AnalysisException: [UNRESOLVED_COLUMN] Did you mean one of [`a`, `b`]"


def failed(label: str, error: str = ERROR) -> LaunchEvent:
    return LaunchEvent("failed", 0.0, Counts(total=3, failed=1), label=label, message=error)


SUMMARY = LaunchSummary(
    backfill_id="nightly-1",
    job="nightly",
    state="failed",
    counts=Counts(total=3, done=0, failed=3),
    seconds=1.0,
    failed=tuple(
        FailedSlice(day, (day,), error)
        for day, error in (("d1", ERROR), ("d2", ERROR), ("d3", "FAILED: other"))
    ),
)


def test_plain_lines_print_an_error_once_and_point_at_it() -> None:
    out = io.StringIO()
    reporter = PlainReporter(out)
    reporter.start(3, "Backfill nightly-1")
    for label, error in (("d1", ERROR), ("d2", ERROR), ("d3", "FAILED: other")):
        reporter(failed(label, error))
    reporter.finish(SUMMARY)
    text = out.getvalue()
    assert text.count("Did you mean one of") == 1
    assert "- same error as d1" in text and "- other" in text
    assert "  FAILED d1: the error above" in text and "  FAILED d2: the error above" in text
    assert "  FAILED d3: the error above" in text  # printed above, once


def test_the_live_display_and_its_summary_show_an_error_once() -> None:
    out = io.StringIO()
    reporter = LiveReporter(Console(file=out, width=200, force_terminal=False))
    reporter.start(3, "Backfill nightly-1")
    reporter(failed("d1"))
    reporter(failed("d2"))
    reporter.finish(SUMMARY)
    text = out.getvalue()
    assert text.count("Did you mean one of") == 1, text
    assert "FAILED d2: the error above" in text and "FAILED d3: other" in text


def test_error_text_keeps_sparks_first_line_and_bounds_any_message() -> None:
    class AnalysisException(Exception):
        pass

    AnalysisException.__module__ = "pyspark.errors.exceptions.captured"
    spark = AnalysisException("[X] Did you mean one of [`a`]. SQLSTATE: 42703;\n'Aggregate [a#1]")
    assert error_text(spark) == "[X] Did you mean one of [`a`]. SQLSTATE: 42703"
    assert len(error_text(RuntimeError("y" * 5000))) == MAX_MESSAGE
    assert error_text(ValueError("two\nlines")) == "two\nlines"  # not Spark's: kept whole

"""The runs of a dry run: a table of every run for a small plan (or ``--all-runs``), a
summary for a large one, and the JSON document, written run by run.

A plan of more than :data:`FULL_PLAN_RUNS` runs prints its key spans, what the
selection skipped and why, and its first and last :data:`SHOWN_RUNS` runs: ten years of
hourly keys are 87,662 runs, and a table of them takes longer to draw than the plan
takes to make.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TextIO, TypeVar

import click
from rich.console import Console
from rich.table import Table

from ...launch.ledger.ledger import SliceRecord
from ...launch.plan.plan_summary import PlanSelection, key_spans

F = TypeVar("F", bound=Callable[..., Any])

FULL_PLAN_RUNS = 50
"""A plan of at most this many runs is listed run by run."""
SHOWN_RUNS = 5
"""A larger plan shows this many runs from its start and as many from its end."""
SHOWN_SPANS = 5
_JSON_CHUNK = 1000  # runs encoded at once: json.dumps of a list is faster than of each
"""Key spans listed by name; more are counted."""

_dry_run_option = click.option(
    "--dry-run",
    is_flag=True,
    help="Print the plan, where its runs would go and an estimate of its wall time from "
    "the job's recent runs; launch nothing.",
)
_all_runs_option = click.option(
    "--all-runs",
    is_flag=True,
    help=f"With --dry-run: list every run (a plan of more than {FULL_PLAN_RUNS} runs "
    "shows its key spans and its first and last runs; --json lists every run).",
)


def dry_run_options(command: F) -> F:
    """``--dry-run`` and ``--all-runs``."""
    return _dry_run_option(_all_runs_option(command))


def runs_table(title: str, slices: Sequence[SliceRecord], *, hidden: int = 0) -> Table:
    """``slices`` as a table; ``hidden`` runs left out after the first ``SHOWN_RUNS``."""
    table = Table(title=title)
    table.add_column("run", justify="right")
    table.add_column("keys")
    table.add_column("n", justify="right")
    table.add_column("parameters")
    for number, s in enumerate(slices):
        if hidden and number == SHOWN_RUNS:
            table.add_row("...", f"{hidden} more runs", "", "")
        params = " ".join(f"{k}={v}" for k, v in s.parameters.items())
        table.add_row(str(s.index + 1), s.label, str(len(s.keys)), params)
    return table


def print_runs(
    title: str,
    slices: Sequence[SliceRecord],
    selection: PlanSelection | None,
    *,
    all_runs: bool,
) -> None:
    """Every run of the plan under ``title`` (a table), or for a large plan its summary."""
    console = Console(width=200 if not sys.stdout.isatty() else None)
    if all_runs or len(slices) <= FULL_PLAN_RUNS:
        console.print(runs_table(title, slices))
        return
    for line in summary_lines(slices, selection):
        click.echo(line)
    shown = [*slices[:SHOWN_RUNS], *slices[-SHOWN_RUNS:]]
    hidden = len(slices) - len(shown)
    title += f" (the first and last {SHOWN_RUNS}; --all-runs lists every run)"
    console.print(runs_table(title, shown, hidden=hidden))


def summary_lines(slices: Sequence[SliceRecord], selection: PlanSelection | None) -> list[str]:
    """The key spans of a plan and what its selection skipped, one line each."""
    lines: list[str] = []
    if selection is not None:
        planned = {key for s in slices for key in s.keys}
        keys = len(planned)
        spans = key_spans(selection.universe, planned)
        named = ", ".join(f"{s.label} ({s.count})" for s in spans[:SHOWN_SPANS])
        more = f" and {len(spans) - SHOWN_SPANS} more" if len(spans) > SHOWN_SPANS else ""
        noun = "span" if len(spans) == 1 else "spans"
        lines.append(f"Keys: {keys} in {len(spans)} contiguous {noun}: {named}{more}")
        skipped = selection.selected - len(planned)
        if selection.filter:
            lines.append(
                f"Skipped: {skipped} of {selection.selected} selected keys ({selection.filter})"
            )
    return lines


def write_plan_json(
    header: Mapping[str, Any], slices: Iterable[SliceRecord], out: TextIO | None = None
) -> None:
    """The dry run's JSON document, ``header`` then ``runs`` written run by run (one
    line, as ``json.dumps`` of the whole would write it, without holding it)."""
    stream = sys.stdout if out is None else out
    opening = json.dumps({**header, "runs": []})
    stream.write(opening[:-2])  # up to the runs' "["
    chunk: list[dict[str, Any]] = []
    separator = ""
    for s in slices:
        chunk.append({"run": s.index + 1, "keys": list(s.keys), "parameters": dict(s.parameters)})
        if len(chunk) == _JSON_CHUNK:
            stream.write(separator + json.dumps(chunk)[1:-1])
            chunk, separator = [], ", "
    if chunk:
        stream.write(separator + json.dumps(chunk)[1:-1])
    stream.write("]}\n")
    stream.flush()

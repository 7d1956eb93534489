"""What a dry run prints: the plan's runs (a table for a small plan or ``--all-runs``, else
key spans, skips and first and last runs), where they would go, a ``--downstream`` chain,
and the JSON document, written run by run."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TextIO, TypeVar

import click
from rich.console import Console
from rich.table import Table

from ...errors import counted
from ...launch.launcher import PreparedBackfill
from ...launch.ledger.ledger import SliceRecord
from ...launch.plan.plan_summary import PlanSelection, key_spans
from ...launch.plan.slice_graph import SliceGraph
from ...runtime.programs.task_subset import decode_tasks
from ..inputs.options import option_group

F = TypeVar("F", bound=Callable[..., Any])

FULL_PLAN_RUNS = 50  # a plan of at most this many runs is listed run by run
SHOWN_RUNS = 5  # else this many runs from its start and as many from its end
SHOWN_SPANS = 5  # key spans listed by name; more are counted
_JSON_CHUNK = 1000  # runs encoded at once: json.dumps of a list is faster than of each

dry_run_options = option_group(
    click.option(
        "--dry-run",
        is_flag=True,
        help="Print the plan, where its runs would go and an estimate of its wall time from "
        "the job's recent runs; launch nothing.",
    ),
    click.option(
        "--all-runs",
        is_flag=True,
        help=f"With --dry-run: list every run (a plan of more than {FULL_PLAN_RUNS} runs "
        "shows its key spans and its first and last runs; --json lists every run).",
    ),
)


def runs_table(
    title: str, slices: Sequence[SliceRecord], *, hidden: int = 0, parameters: bool = True
) -> Table:
    """``slices`` as a table; ``hidden`` runs left out after the first ``SHOWN_RUNS``;
    ``parameters``: a column of each run's job parameters."""
    table = Table(title=title or None)
    table.add_column("run", justify="right", no_wrap=True)
    table.add_column("keys", no_wrap=True)
    table.add_column("n", justify="right", no_wrap=True)
    if parameters:
        table.add_column("parameters")
    for number, s in enumerate(slices):
        if hidden and number == SHOWN_RUNS:
            table.add_row("...", f"{hidden} more runs", "", *([""] * parameters))
        params = [_parameters(s)] if parameters else []
        table.add_row(str(s.index + 1), s.label, str(len(s.keys)), *params)
    return table


def _parameters(record: SliceRecord) -> str:
    return " ".join(f"{k}={v}" for k, v in record.parameters.items())


def _print_table(console: Console, title: str, slices: Sequence[SliceRecord], hidden: int) -> None:
    """The runs table in the console's width: when the parameters do not fit beside the
    keys, the table leaves them out and the first run's follow it, wrapped between
    parameters (every run's differ only in their keys)."""
    table = runs_table(title, slices, hidden=hidden)
    natural = console.measure(table, options=console.options.update_width(10_000)).maximum
    if natural <= console.width or not slices:
        console.print(table)
        return
    click.echo(title)  # on one line: the narrow table would wrap it
    console.print(runs_table("", slices, hidden=hidden, parameters=False))
    text = f"Parameters of run {slices[0].index + 1} (the others differ in their keys): "
    text += _parameters(slices[0])
    for line in textwrap.wrap(
        text, console.width, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False
    ):
        click.echo(line)


def print_runs(
    title: str,
    slices: Sequence[SliceRecord],
    selection: PlanSelection | None,
    *,
    all_runs: bool,
) -> None:
    """Every run of the plan under ``title`` (a table), or for a large plan its summary."""
    console = Console()  # the terminal's width; piped, $COLUMNS or 80
    if all_runs or len(slices) <= FULL_PLAN_RUNS:
        _print_table(console, title, slices, 0)
        return
    for line in summary_lines(slices, selection):
        click.echo(line)
    shown = [*slices[:SHOWN_RUNS], *slices[-SHOWN_RUNS:]]
    hidden = len(slices) - len(shown)
    title += f" (the first and last {SHOWN_RUNS}; --all-runs lists every run)"
    _print_table(console, title, shown, hidden)


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


def destination(prepared: PreparedBackfill) -> str:
    """Where the runs of ``prepared`` go, in one line."""
    spec = prepared.ledger.backend
    if spec.kind == "local":
        return "the embedded local Spark"
    if prepared.unreached is not None:
        return f"job {prepared.plan.job!r} in {_workspace(spec.host, spec.profile)}"
    if spec.job_id is None:
        return "Databricks (the workspace was not reached; see the estimate)"
    return f"job {spec.remote_name!r} (id {spec.job_id}) on {spec.host}"


def _workspace(host: str | None, profile: str | None) -> str:
    if host:
        return f"the workspace at {host}"
    if profile:
        return f"the workspace of profile {profile!r}"
    return "the workspace of the default credentials (none found)"


def print_plan(
    prepared: PreparedBackfill,
    as_json: bool,
    *,
    all_runs: bool = False,
    selection: PlanSelection | None = None,
) -> None:
    """The plan of a dry run, where its runs would go, the size ``--batch-size auto``
    chose and why, and its estimate. A large plan is summarised (its key spans, what
    ``selection`` skipped, its first and last runs) unless ``all_runs``; its JSON lists
    every run, written run by run."""
    if prepared.slice_graph is not None:  # --downstream: runs of several jobs
        print_downstream_plan(prepared, as_json)
        return
    plan, guess, choice = prepared.plan, prepared.estimate, prepared.batch_choice
    if as_json:
        header = {
            "job": plan.job,
            "dry_run": True,
            "destination": destination(prepared),
            "unreached": prepared.unreached,
            "warnings": list(prepared.warnings),
            "estimate": guess.to_json() if guess is not None else None,
            "batch_size": choice.to_json() if choice is not None else None,
            "tasks": decode_tasks(prepared.ledger.options.tasks) or None,
        }
        write_plan_json(header, prepared.ledger.slices)
        return
    runs, keys = counted(len(plan.slices), "run"), counted(len(plan.keys), "key")
    title = f"Plan for {plan.job}: {runs}, {keys}"
    # the ledger's runs: a full refresh adds its order
    print_runs(title, prepared.ledger.slices, selection, all_runs=all_runs)
    click.echo(
        f"Runs would go to {destination(prepared)}, up to "
        f"{prepared.options.max_concurrent} at once."
    )
    if prepared.unreached is not None:
        click.echo(f"Could not reach it: {prepared.unreached}; no estimate.")
    if prepared.ledger.options.tasks:
        click.echo(
            f"Each run runs only the tasks {prepared.ledger.options.tasks}; the others' tables are "
            "read and must hold the run's keys."
        )
    for warning in prepared.warnings:
        click.echo(f"warning: {warning}")
    for line in [*(choice.lines() if choice else ()), *(guess.lines() if guess else ())]:
        click.echo(line)
    click.echo("Dry run: nothing was launched.")


downstream_option = click.option(
    "--downstream",
    is_flag=True,
    help="Also rerun every job that reads (directly or through other jobs) the tables "
    "these keys write, each of its keys only after every key it reads has succeeded "
    "(checks included); a failed key blocks exactly the keys that read it; --dry-run "
    "prints the cross-job plan and the graph's edges. On Databricks each dependant's "
    "table-update trigger is paused while it runs (jobs/update): that needs CAN MANAGE on "
    "each dependant (checked before anything starts), beside CAN MANAGE RUN on every "
    "job it runs; the catch-up's SQL warehouse needs CAN USE and its tables SELECT.",
)


def plan_json(prepared: PreparedBackfill, graph: SliceGraph) -> dict[str, object]:
    """The dry run as one JSON object: jobs, slices with what they wait for, edges."""
    return {
        "job": graph.root,
        "dry_run": True,
        "downstream": True,
        "destination": "local",  # --downstream runs on the embedded Spark only
        "jobs": graph.jobs,
        "runs": [
            {
                "index": s.index,
                "job": s.job,
                "key": s.key,
                "waits_for": [graph.slices[w].label for w in s.waits_for],
            }
            for s in graph.slices
        ],
        "edges": [
            {
                "upstream": e.upstream,
                "downstream": e.downstream,
                "table": e.table,
                "mapping": e.keys.describe(),
            }
            for e in graph.edges
        ],
    }


def print_downstream_plan(prepared: PreparedBackfill, as_json: bool) -> None:
    """A ``--downstream`` dry run: every run (job, key, waits for) and the edges used."""
    graph = prepared.slice_graph
    assert graph is not None
    if as_json:
        click.echo(json.dumps(plan_json(prepared, graph)))
        return
    console = Console()  # the terminal's width; piped, $COLUMNS or 80
    runs = Table(title=f"Plan for {graph.root} --downstream: {counted(len(graph.slices), 'run')}")
    for column in ("run", "job", "key", "waits for"):
        runs.add_column(column, justify="right" if column == "run" else "left")
    for s in graph.slices:
        waits = ", ".join(graph.slices[w].label for w in s.waits_for) or "-"
        runs.add_row(str(s.index + 1), s.job, s.key, waits)
    console.print(runs)
    edges = Table(title=f"Table graph edges used ({len(graph.edges)})")
    for column in ("upstream", "downstream", "table", "keys"):
        edges.add_column(column)
    for e in graph.edges:
        edges.add_row(e.upstream, e.downstream, e.table, e.keys.describe())
    console.print(edges)
    click.echo(
        "Runs would go to the embedded local Spark, up to "
        f"{prepared.options.max_concurrent} at once (all jobs together)."
    )
    click.echo("Dry run: nothing was launched.")

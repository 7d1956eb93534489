"""``--downstream`` of ``dbxdec backfill`` and what its ``--dry-run`` prints: the
cross-job plan (job, key, waits-for) and the table-graph edges it used."""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.table import Table

from ...launch.launcher import PreparedBackfill
from ...launch.plan.slice_graph import SliceGraph

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


def _waits(graph: SliceGraph, index: int) -> str:
    waits = graph.slices[index].waits_for
    return ", ".join(graph.slices[w].label for w in waits) or "-"


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
    console = Console(width=200, soft_wrap=True)
    runs = Table(title=f"Plan for {graph.root} --downstream: {len(graph.slices)} runs")
    for column in ("run", "job", "key", "waits for"):
        runs.add_column(column, justify="right" if column == "run" else "left")
    for s in graph.slices:
        runs.add_row(str(s.index + 1), s.job, s.key, _waits(graph, s.index))
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

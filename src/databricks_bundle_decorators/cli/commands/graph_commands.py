"""``dbxdec graph``: the bundle-wide table graph (which job writes and reads each table)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ...bundle.table_graph import build_table_graph, render_text
from ...bundle.workflows import open_project
from ..inputs.options import pipelines_option


@click.command("graph")
@pipelines_option
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the graph as JSON (schema: docs/guides/graph.md) instead of text.",
)
def graph_command(project: Path | None, pipelines: tuple[str, ...], as_json: bool) -> None:
    """Print the table graph: jobs, the tables they write (IoManagers) and read
    (sources), and an edge from each writer to each reader with its key mapping.

    \b
    Exit codes: 0 the graph printed; 1 a definition is wrong, or jobs read each
    other's tables in a cycle (the one line names the jobs and tables).
    """
    graph = build_table_graph(open_project(project, pipelines).jobs)
    if as_json:
        click.echo(json.dumps(graph.to_json(), indent=2))
        return
    for line in render_text(graph):
        click.echo(line)


def register(group: click.Group) -> None:
    """Add ``graph`` to ``group``."""
    group.add_command(graph_command)

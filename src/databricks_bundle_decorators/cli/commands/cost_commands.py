"""``dbxdec backfill cost ID``: what a backfill cost, from the workspace's billing."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ...bundle.project import project_root
from ...launch.estimate.cost import backfill_cost
from .undo_commands import ReservedCommand


@click.command("cost", cls=ReservedCommand)
@click.argument("backfill_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="JSON output (decimals as strings).")
@click.option(
    "--warehouse-id",
    help="SQL warehouse to read system.billing through (default: DATABRICKS_WAREHOUSE_ID "
    "or the profile's warehouse_id).",
)
@click.option("--profile", help="Databricks: ~/.databrickscfg profile (default: the ledger's).")
@click.option("--host", help="Databricks: workspace URL (default: the ledger's).")
@click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    help="Project folder (default: the one holding the current directory).",
)
def cost_command(
    backfill_id: str,
    as_json: bool,
    warehouse_id: str | None,
    profile: str | None,
    host: str | None,
    project: Path | None,
) -> None:
    """What backfill ID cost, per key and in total, at list price.

    \b
    Examples:
      dbxdec backfill cost sales-20240601T020000-1a2b --warehouse-id 1234abcd
      dbxdec backfill cost sales-20240601T020000-1a2b --json

    Reads system.billing.usage through a SQL warehouse for every run the backfill
    started (retries and failed attempts included), nets retractions and restatements,
    and prices each record at the effective list price in force at its usage_end_time. A run
    covering several keys is split equally among them (marked allocated); failed
    attempts are shown apart; records that name no run (all-purpose clusters) are
    reported as unattributed. Figures less than 12 hours old are flagged incomplete.

    Exit codes: 0 reported, 1 the billing query failed, 2 unknown ID, a local backfill
    or no warehouse.
    """
    report = backfill_cost(
        backfill_id,
        project_root(project),
        warehouse_id=warehouse_id,
        host=host,
        profile=profile,
    )
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
        return
    for line in report.lines():
        click.echo(line)


def register(group: click.Group) -> None:
    """Add ``cost`` to ``group``'s ``backfill`` group (made by ``undo_commands.register``)."""
    backfill = group.commands["backfill"]
    assert isinstance(backfill, click.Group), "register undo_commands first"
    backfill.add_command(cost_command)

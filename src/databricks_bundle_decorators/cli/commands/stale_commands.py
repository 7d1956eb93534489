"""``dbxdec stale``: which keys were computed by other code or from inputs that changed
since, and why (``launch/provenance``). No launcher import: the command must answer in
well under 2 s for 100k keys, start-up included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ...bundle.table_graph import build_table_graph, table_key
from ...bundle.workflows import open_project
from ...errors import UsageError, counted, did_you_mean
from ...launch.ledger.place import LocalPlace
from ...launch.provenance.index import PROVENANCE_FOLDER
from ...launch.provenance.stale import StaleReport, find_stale, summary
from ..inputs.options import pipelines_option


def _echo_report(report: StaleReport) -> None:
    if not report.keys:
        click.echo(
            f"No stale keys: {counted(report.judged, 'key')} judged in "
            f"{counted(len(report.tables), 'table')}."
        )
        return
    per_table = ", ".join(f"{t}: {n}" for t, n in summary(report).items())
    click.echo(f"{counted(len(report.keys), 'stale key')} of {report.judged} judged ({per_table})")
    for stale in report.keys:
        click.echo(f"{stale.job}  {stale.table}  {stale.key}  {'; '.join(stale.reasons)}")


def report_json(report: StaleReport) -> dict[str, Any]:
    """``stale --json``: each stale key with its reasons and the index of its provenance
    record in ``records`` (one per commit: a commit writes many keys), or ``null``."""
    numbers: dict[int, int] = {}
    records: list[dict[str, Any]] = []
    stale = []
    for item in report.keys:
        number = None
        if item.provenance is not None:
            number = numbers.get(id(item.provenance))
            if number is None:
                number = numbers[id(item.provenance)] = len(records)
                records.append(item.provenance.to_json())
        stale.append(
            {
                "job": item.job,
                "task": item.task,
                "table": item.table,
                "key": item.key,
                "reasons": list(item.reasons),
                "record": number,
            }
        )
    return {"judged": report.judged, "tables": report.tables, "stale": stale, "records": records}


@click.command("stale")
@click.argument("target", required=False, metavar="[JOB|TABLE]")
@pipelines_option
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the report as one line of JSON: judged, tables, stale (each key with its "
    "reasons and the number of its provenance record) and records (one per commit).",
)
def stale_command(
    target: str | None, project: Path | None, pipelines: tuple[str, ...], as_json: bool
) -> None:
    """List the keys of the project's local tables that are stale, each with its reasons:
    written by other code than the task's current code (its fingerprint: the function's
    source and the project code it uses), or from a table that has committed changes in
    the key's windows (lookback included) since the version it read, or reading a key
    that is itself stale (in any job of the project). Every key's provenance comes from
    the commit that wrote it; the index under .dbxdec/provenance/ is rebuilt from the
    tables' history when missing. Recompute stale keys with `dbxdec restate`, or a
    backfill of them.

    \b
    Exit codes: 0 the report printed (stale keys or none); 1 a definition is wrong;
    2 JOB|TABLE names neither a job nor a table of the project.
    """
    opened = open_project(project, pipelines)
    jobs = list(opened.jobs)
    only: tuple[str, ...] = ()
    if target is not None:
        graph = build_table_graph(jobs)
        names = [j.name for j in jobs] + graph.tables()
        if target not in {j.name for j in jobs} and table_key(target) not in {
            table_key(t) for t in graph.tables()
        }:
            raise UsageError(
                f"{target!r} is neither a job nor a table of the project."
                f"{did_you_mean(target, names)} Jobs: {', '.join(sorted(j.name for j in jobs))}"
            )
        only = (target,)
    place = LocalPlace(opened.config.root / PROVENANCE_FOLDER)
    report = find_stale(jobs, opened.config.warehouse, place, only=only)
    if as_json:
        click.echo(json.dumps(report_json(report), separators=(",", ":")))
        return
    _echo_report(report)


def register(group: click.Group) -> None:
    """Add this module's commands to ``group``."""
    group.add_command(stale_command)

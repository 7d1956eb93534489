"""``dbxdec stale``: which keys were computed by other code or from inputs that changed
since, and why; ``dbxdec restate``: recompute a range of a table, or what read a source's
versions, with every key reading them, as one backfill (``launch/provenance``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ...bundle.table_graph import build_table_graph, table_key
from ...bundle.workflows import open_project
from ...errors import UsageError, did_you_mean
from ...launch.launcher import plan_backfill
from ...launch.ledger.place import LocalPlace
from ...launch.plan.options import Pacing
from ...launch.plan.request import BackfillRequest, Connection
from ...launch.provenance.index import PROVENANCE_FOLDER
from ...launch.provenance.restate import (
    RestatePlan,
    Roots,
    Versions,
    plan_restate,
    source_roots,
    table_roots,
)
from ...launch.provenance.stale import StaleReport, find_stale, summary
from ..inputs.options import load_project, local_connection_record, pipelines_option, with_pacing
from ..output.launch_output import detach_option, launch_or_detach, refuse_local_detach
from ..output.plan_output import plan_json, print_plan
from .backfill_commands import command_context_args


def _counted(count: int, what: str) -> str:
    return f"{count} {what}{'' if count == 1 else 's'}"


def _echo_report(report: StaleReport) -> None:
    if not report.keys:
        click.echo(
            f"No stale keys: {_counted(report.judged, 'key')} judged in "
            f"{_counted(len(report.tables), 'table')}."
        )
        return
    per_table = ", ".join(f"{t}: {n}" for t, n in summary(report).items())
    click.echo(f"{_counted(len(report.keys), 'stale key')} of {report.judged} judged ({per_table})")
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


def _echo_restate(plan: RestatePlan) -> None:
    keys = plan.keys_by_job()
    total = sum(len(k) for k in keys.values())
    click.echo(f"Restate {plan.what}: {_counted(total, 'key')} in {_counted(len(keys), 'job')}")
    for job, job_keys in keys.items():
        click.echo(f"{job} ({_counted(len(job_keys), 'key')}):")
        for key in job_keys:
            click.echo(f"  {key}  {'; '.join(plan.reasons.get((job, key), ()))}")


@click.command("restate")
@click.argument("table", required=False, metavar="[TABLE|JOB]")
@click.option("--start", metavar="KEY", help="With TABLE: first key (inclusive).")
@click.option("--end", metavar="KEY", help="With TABLE: last key (inclusive).")
@click.option(
    "--source",
    metavar="TABLE",
    help="Restate every key of the project's local tables whose provenance says it read "
    "TABLE at one of --versions (instead of TABLE --start/--end).",
)
@click.option(
    "--versions",
    metavar="V1-V2",
    help="With --source: the Delta versions of it (inclusive range, or one version: 41).",
)
@click.option(
    "--because",
    metavar="TEXT",
    default="",
    help="Why, in words: recorded in the backfill's ledger (dbxdec backfills --json).",
)
@click.option("--dry-run", is_flag=True, help="List the keys, why, and the plan; launch nothing.")
@click.option(
    "--force",
    is_flag=True,
    help="Take over a stale claim of another backfill of a job on some of the same keys.",
)
@click.option(
    "--new",
    is_flag=True,
    help="Start although the last backfill of the first job's keys did not finish.",
)
@detach_option
@local_connection_record("Run on the embedded local Spark.")
@with_pacing
@click.option("--json", "as_json", is_flag=True, help="JSON output (one object per event).")
@pipelines_option
def restate_command(
    table: str | None,
    start: str | None,
    end: str | None,
    source: str | None,
    versions: str | None,
    because: str,
    dry_run: bool,
    force: bool,
    new: bool,
    connection: Connection,
    pacing: Pacing,
    as_json: bool,
    project: Path | None,
    pipelines: tuple[str, ...],
) -> None:
    """Recompute keys and everything computed from them, as one backfill: TABLE's keys
    from --start to --end (the keys of the job that writes it; a JOB name also works), or
    with --source T --versions V1-V2 every key of the project's local tables whose
    provenance says it read T at a version from V1 to V2 (a source commit found wrong).
    Every key of every job of the project that reads those keys (dbxdec graph, with its
    key mappings and lookbacks) is recomputed too, each after what it reads: the
    --downstream machinery of dbxdec backfill, so it has one ledger, one claim per job,
    finishes with dbxdec backfill --resume ID and is undone with dbxdec backfill undo ID.
    Each run replaces its keys in one commit: readers never see a key missing.

    \b
    Examples:
      dbxdec restate main.sales.daily --start 2024-01-05 --end 2024-01-07 --local
      dbxdec restate --source main.raw.events --versions 41-43 --dry-run
      dbxdec restate --source main.raw.events --versions 41 --because "bad feed" --local

    \b
    Exit codes: as dbxdec backfill; 0 also when no key read the source at those versions
    (nothing to restate, said in one line); 2 bad input (TABLE with --source, a missing
    range, malformed --versions, an unknown table or job).
    """
    refuse_local_detach(BackfillRequest("", connection=connection))
    if table is not None and source is not None:
        raise UsageError("give TABLE --start/--end or --source T --versions V1-V2, not both")
    if source is not None:
        if versions is None:
            raise UsageError("--source needs --versions V1-V2 (or one version)")
        if start is not None or end is not None:
            raise UsageError("--start/--end go with TABLE, not with --source: drop them")
        parsed = Versions.parse(versions)
    elif table is None:
        raise UsageError("missing TABLE --start/--end, or --source T --versions V1-V2")
    elif versions is not None:
        raise UsageError("--versions goes with --source T, not with TABLE: drop it")
    config, registry = load_project(project, pipelines)
    jobs = list(registry)
    roots: Roots
    if source is not None:
        place = LocalPlace(config.root / PROVENANCE_FOLDER)
        roots = source_roots(jobs, config.warehouse, place, source, parsed)
        if not roots.keys:
            line = f"no key of the project read {source} at {parsed.label()}: nothing to restate"
            click.echo(
                json.dumps({"restate": roots.what, "jobs": {}, "message": line})
                if as_json
                else line
            )
            return
    else:
        assert table is not None
        roots = table_roots(jobs, table, start=start, end=end)
    plan = plan_restate(jobs, roots)
    request = BackfillRequest(
        plan.graph.root,
        connection=connection,
        pacing=pacing,
        context_args=command_context_args(project, pipelines),
        force=force,
        new=new,
        downstream=True,
        because=because,
    )
    prepared = plan_backfill(
        request,
        root=config.root,
        registry=registry,
        warehouse=config.warehouse,
        dry_run=dry_run,
        slice_graph=plan.graph,
    )
    if dry_run:
        if as_json:
            click.echo(json.dumps({**plan.to_json(), "plan": plan_json(prepared, plan.graph)}))
            return
        _echo_restate(plan)
        print_plan(prepared, as_json=False)
        return
    if not as_json:
        _echo_restate(plan)
    launch_or_detach(prepared, as_json, root=config.root)


def register(group: click.Group) -> None:
    """Add this module's commands to ``group``."""
    group.add_command(stale_command)
    group.add_command(restate_command)

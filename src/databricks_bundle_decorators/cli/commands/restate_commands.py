"""``dbxdec restate``: recompute a range of a table, or what read a source's versions,
with every key reading them, as one backfill (``launch/provenance``)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ...errors import UsageError, counted
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
from ..inputs.options import load_project, local_connection_record, pipelines_option, with_pacing
from ..output.launch_output import detach_option, launch_or_detach, refuse_local_detach
from ..output.plan_output import plan_json, print_plan
from .backfill_commands import command_context_args


def _echo_restate(plan: RestatePlan) -> None:
    keys = plan.keys_by_job()
    total = sum(len(k) for k in keys.values())
    click.echo(f"Restate {plan.what}: {counted(total, 'key')} in {counted(len(keys), 'job')}")
    for job, job_keys in keys.items():
        click.echo(f"{job} ({counted(len(job_keys), 'key')}):")
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
    group.add_command(restate_command)

"""What ``dbxdec backfill`` and ``dbxdec catchup`` share: their common options and the
step from a request to a plan, a dry run or a launch."""

from __future__ import annotations

from pathlib import Path

import click

from ...errors import UsageError
from ...launch.launcher import plan_backfill
from ...launch.plan.plan_summary import plan_selection
from ...launch.plan.request import BackfillRequest
from ..inputs.full_range import confirm_every_key
from ..inputs.options import load_project, local_connection_record
from ..output.detach_output import launch_or_detach, refuse_local_detach
from ..output.launch_output import nothing_to_run, print_plan

with_connection = local_connection_record("Run on the embedded local Spark.")
"""The connection options, reaching the command as one :class:`Connection`."""

json_option = click.option("--json", "as_json", is_flag=True, help="One JSON object per event.")

force_option = click.option(
    "--force",
    is_flag=True,
    help="Take over the claim of another backfill of the job on some of the same keys "
    "once it is stale: expired (its launcher stopped renewing it) or left by a launcher "
    "that died on this machine. Refused while that claim is live.",
)


pause_option = click.option(
    "--pause-schedule",
    is_flag=True,
    help="Pause the job's schedule (or trigger) while the backfill runs and restore it "
    "when it ends, is interrupted or, after a crash, on the next dbxdec command for the "
    "job. Without it, a scheduled job keeps one of its max_concurrent_runs free for the "
    "scheduled run. Pausing is a jobs/update: it needs CAN MANAGE (or IS OWNER) on the job, "
    "checked before anything starts (launching runs needs CAN MANAGE RUN).",
)

force_trigger_pause_option = click.option(
    "--force-trigger-pause",
    is_flag=True,
    help="With --pause-schedule: pause a deployed table-update trigger the project does "
    "not declare. Its condition (ANY_UPDATED/ALL_UPDATED) cannot be read back from the "
    "workspace, so the trigger is restored without it (a warning says so); without this "
    "flag such a pause is refused.",
)

dbu_option = click.option(
    "--dbu-per-hour",
    type=click.FloatRange(min=0, min_open=True),
    metavar="RATE",
    help="DBU per hour of one run (whole cluster), for the --dry-run estimate's DBU hours "
    "(no API gives a node type's rate).",
)


def command_context_args(project: Path | None, pipelines: tuple[str, ...]) -> tuple[str, ...]:
    args: list[str] = []
    if project is not None:
        args += ["--project", str(project)]
    for module in pipelines:
        args += ["--pipelines", module]
    return tuple(args)


def plan_and_launch(
    request: BackfillRequest,
    project: Path | None,
    pipelines: tuple[str, ...],
    dry_run: bool,
    as_json: bool,
    all_runs: bool,
    ask: bool = False,
) -> None:
    """Plan ``request``; print the plan on a dry run (``all_runs``: every run), else launch it.

    ``ask``: a request naming no keys (every key of the definition) is confirmed on a
    terminal first and refused elsewhere (``--all`` and ``--dry-run`` skip this).
    """
    refuse_local_detach(request)
    if request.options.force_trigger_pause and not request.options.pause_schedule:
        raise UsageError(
            "--force-trigger-pause applies only with --pause-schedule: add --pause-schedule, "
            "or drop --force-trigger-pause"
        )
    config, registry = load_project(project, pipelines)
    if ask:
        confirm_every_key(registry, request)
    prepared = plan_backfill(
        request, root=config.root, registry=registry, warehouse=config.warehouse, dry_run=dry_run
    )
    if dry_run:
        backfill = registry.get(request.job).backfill
        selection = plan_selection(backfill, request) if backfill is not None else None
        print_plan(prepared, as_json, all_runs=all_runs, selection=selection)
        return
    launch_or_detach(prepared, as_json, nothing_to_run(request), root=config.root)

"""``dbxdec backfill`` and ``catchup``: thin wrappers over
:mod:`databricks_bundle_decorators.launch` (``backfills`` and ``status`` live in
:mod:`.report_commands`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.table import Table

from ..bundle.project import find_root
from ..errors import LocalStateProblem, UsageError
from ..launch.errors import BackfillFailed, BackfillInterrupted
from ..launch.history import RERUN_MODES
from ..launch.launcher import (
    BackfillRequest,
    Connection,
    PreparedBackfill,
    plan_backfill,
    prepare_resume,
    run_backfill,
)
from ..launch.plan import ORDERS
from ..launch.progress import JsonReporter, LiveReporter, PlainReporter, Reporter
from .options import load_project, parse_params, pipelines_option

F = TypeVar("F", bound=Callable[..., Any])


def connection_options(fn: F) -> F:
    for decorator in reversed(
        [
            click.option("--local", is_flag=True, help="Run on the embedded local Spark."),
            click.option(
                "-t",
                "--target",
                metavar="TARGET",
                help="Bundle target (databricks.yml) the job was deployed to; resolves "
                "development-mode name prefixes such as '[dev jane] '.",
            ),
            click.option(
                "--job-id", type=click.IntRange(min=1), help="Deployed job id (skips the lookup)."
            ),
            click.option("--profile", help="~/.databrickscfg profile (default: environment)."),
            click.option("--host", help="Workspace URL (default: DATABRICKS_HOST or profile)."),
        ]
    ):
        fn = decorator(fn)
    return fn


def connection_from(kw: dict[str, Any]) -> Connection:
    """The :class:`Connection` the options of :func:`connection_options` ask for."""
    return Connection(
        local=kw["local"],
        target=kw["target"],
        job_id=kw["job_id"],
        profile=kw["profile"],
        host=kw["host"],
    )


def _pacing_options(fn: F) -> F:
    for decorator in reversed(
        [
            click.option(
                "--max-concurrent",
                type=click.IntRange(min=1, max=1000),
                help="Runs in flight at most [default: 4; 1 with --local].",
            ),
            click.option(
                "--retries",
                type=click.IntRange(min=0),
                help="Extra attempts per run after a failure [default: 0].",
            ),
            click.option(
                "--retry-delay",
                type=click.FloatRange(min=0),
                help="Seconds before the first retry, doubling each time [default: 10].",
            ),
            click.option(
                "--halt-on-error", is_flag=True, help="Launch nothing new once a run has failed."
            ),
            click.option(
                "--poll-interval",
                type=click.FloatRange(min=0.005),
                default=1.0,
                show_default=True,
                help="Seconds between status polls while runs are ending.",
            ),
            click.option("--json", "as_json", is_flag=True, help="One JSON object per event."),
        ]
    ):
        fn = decorator(fn)
    return fn


_force_option = click.option(
    "--force",
    is_flag=True,
    help="Take over the claim of another backfill of the job on some of the same keys "
    "once it is stale: expired (its launcher stopped renewing it) or left by a launcher "
    "that died on this machine. Refused while that claim is live.",
)


def _context_args(project: Path | None, pipelines: tuple[str, ...]) -> tuple[str, ...]:
    args: list[str] = []
    if project is not None:
        args += ["--project", str(project)]
    for module in pipelines:
        args += ["--pipelines", module]
    return tuple(args)


def _reporter(as_json: bool) -> Reporter:
    if as_json:
        return JsonReporter(sys.stdout)
    if sys.stderr.isatty():
        return LiveReporter()
    return PlainReporter(sys.stdout)


def _keys(value: str | None) -> tuple[str, ...]:
    if value is None:
        return ()
    keys = tuple(k.strip() for k in value.split(",") if k.strip())
    if not keys:
        raise UsageError("--keys: expected a comma-separated list of keys")
    return keys


_ALL_DONE = "nothing to run: every selected key is already done"


def _nothing_to_run(request: BackfillRequest) -> str:
    """Why a plan is empty, in the terms of the selection that emptied it."""
    if request.catchup:
        return "nothing to run: every selected key has succeeded or is running"
    if request.rerun == "failed":
        return "nothing to run: no selected key's latest run failed"
    if request.rerun == "missing":
        return "nothing to run: every selected key has run before"
    return _ALL_DONE


def _launch(prepared: PreparedBackfill, as_json: bool, nothing: str = _ALL_DONE) -> None:
    if not prepared.ledger.slices:
        message = nothing
        if as_json:
            click.echo(json.dumps({"event": "summary", "state": "succeeded", "message": message}))
        else:
            click.echo(message)
        return
    summary = run_backfill(prepared, _reporter(as_json))
    if summary.unsaved:
        counts = summary.counts
        raise LocalStateProblem(
            f"cannot save the backfill ledger ({summary.unsaved}): stopped launching with "
            f"{counts.remaining} of {counts.total} runs not launched, after watching the runs "
            f"in flight to their end; free disk space, then finish with: {summary.resume_command}"
        )
    if summary.exit_code == 130:
        raise BackfillInterrupted(f"backfill interrupted; resume with: {summary.resume_command}")
    if summary.exit_code:
        counts = summary.counts
        # after a halt some slices never ran: only --resume runs them with the failed ones
        rerun = None if counts.remaining else summary.rerun_command
        hint = rerun or summary.resume_command
        raise BackfillFailed(f"{counts.failed} of {counts.total} runs failed; rerun: {hint}")


def _print_plan(prepared: PreparedBackfill, as_json: bool) -> None:
    plan = prepared.plan
    if as_json:
        runs = [
            {"run": s.index + 1, "keys": list(s.keys), "parameters": plan.parameters(s)}
            for s in plan.slices
        ]
        click.echo(json.dumps({"job": plan.job, "dry_run": True, "runs": runs}))
        return
    table = Table(title=f"Plan for {plan.job}: {len(plan.slices)} runs, {len(plan.keys)} keys")
    table.add_column("run", justify="right")
    table.add_column("keys")
    table.add_column("n", justify="right")
    table.add_column("parameters")
    for s in plan.slices:
        params = " ".join(f"{k}={v}" for k, v in plan.parameters(s).items())
        table.add_row(str(s.index + 1), s.label, str(len(s.keys)), params)
    Console(width=200 if not sys.stdout.isatty() else None).print(table)
    click.echo("Dry run: nothing was launched.")


def _request(job: str, kw: dict[str, Any], **extra: Any) -> BackfillRequest:
    return BackfillRequest(
        job=job,
        start=kw.get("start"),
        end=kw.get("end"),
        keys=_keys(kw.get("keys_text")),
        order=kw.get("order") or "forward",
        batch_size=kw.get("batch_size") or 1,
        exact=bool(kw.get("exact")),
        final_sync=bool(kw.get("final_sync")),
        params=parse_params(kw.get("param") or ()),
        connection=connection_from(kw),
        max_concurrent=kw["max_concurrent"],
        retries=kw["retries"] or 0,
        retry_delay=10.0 if kw["retry_delay"] is None else kw["retry_delay"],
        halt_on_error=kw["halt_on_error"],
        poll_interval=kw["poll_interval"],
        context_args=_context_args(kw["project"], kw["pipelines"]),
        force=kw["force"],
        **extra,
    )


_PLAN_ONLY = ("start", "end", "keys_text", "batch_size", "exact", "final_sync", "param", "new")


@click.command("backfill")
@click.argument("job", required=False)
@click.option("--start", metavar="KEY", help="First key (inclusive).")
@click.option("--end", metavar="KEY", help="Last key (inclusive).")
@click.option("--keys", "keys_text", metavar="K1,K2", help="Exactly these keys.")
@click.option("--order", type=click.Choice(ORDERS), default="forward", show_default=True)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Consecutive keys per run (ranged runs via backfill_start_key).",
)
@click.option(
    "--rerun",
    type=click.Choice(RERUN_MODES),
    default="all",
    show_default=True,
    help="all keys, only keys whose latest run failed, or only keys never run.",
)
@click.option("--exact", is_flag=True, help="Bypass lookback and schedule-gap expansion.")
@click.option("--final-sync", is_flag=True, help="One more run with no key at the end.")
@click.option("--param", multiple=True, metavar="NAME=VALUE", help="Job parameter (repeatable).")
@click.option("--dry-run", is_flag=True, help="Print the plan; launch nothing.")
@click.option("--resume", "resume_id", metavar="ID", help="Finish backfill ID (dbxdec backfills).")
@click.option(
    "--new",
    is_flag=True,
    help="Start a new backfill even though the last one over the same keys did not finish "
    "(without it that is refused, pointing at --resume).",
)
@_force_option
@connection_options
@_pacing_options
@pipelines_option
def backfill_command(job: str | None, dry_run: bool, resume_id: str | None, **kw: Any) -> None:
    """Run JOB for a range of backfill keys, up to --max-concurrent runs at once.

    \b
    Examples:
      dbxdec backfill sales --start 2024-01-01 --end 2024-12-31 --max-concurrent 8
      dbxdec backfill sales --keys 2024-02-03,2024-02-09 --local
      dbxdec backfill sales --start 2024-01-01 --end 2024-03-31 --batch-size 7 --dry-run
      dbxdec backfill sales --rerun failed --start 2024-01-01 --end 2024-12-31
      dbxdec backfill --resume sales-20240601T020000-1a2b

    Every backfill gets an id and a ledger under .dbxdec/backfills/. Ctrl-C once
    drains (no new runs, in-flight runs finish); twice cancels in-flight runs.
    A running backfill claims its keys: launching another backfill of the job over
    any of them (from any machine; locally, any backfill of the job) is refused
    until it ends, unless its claim is stale (--force).
    Exit codes: 0 all succeeded, 1 some runs failed, 2 usage error, 4 credentials or
    permission refused, 5 workspace unreachable, 6 ledger unwritable or damaged (a full
    disk stops launching; runs in flight are watched to their end), 130 interrupted.
    """
    if resume_id is not None:
        given = [name for name in _PLAN_ONLY if kw.get(name) not in (None, (), False, 1)]
        if job is not None or given or kw["rerun"] != "all" or dry_run:
            raise UsageError("--resume ID takes no JOB and no plan options (the ledger has them)")
        prepared = prepare_resume(
            resume_id,
            root=find_root(kw["project"]),
            project_loader=lambda: load_project(kw["project"], kw["pipelines"]),
            host=kw["host"],
            profile=kw["profile"],
            max_concurrent=kw["max_concurrent"],
            retries=kw["retries"],
            retry_delay=kw["retry_delay"],
            halt_on_error=kw["halt_on_error"],
            poll_interval=kw["poll_interval"],
            context_args=_context_args(kw["project"], kw["pipelines"]),
            force=kw["force"],
        )
        _launch(prepared, kw["as_json"])
        return
    if job is None:
        raise UsageError("missing JOB (or --resume ID)")
    _plan_and_launch(_request(job, kw, rerun=kw["rerun"], new=kw["new"]), kw, dry_run=dry_run)


@click.command("catchup")
@click.argument("job")
@click.option("--start", metavar="KEY", help="Only keys from KEY (inclusive).")
@click.option("--end", metavar="KEY", help="Only keys up to KEY (inclusive).")
@click.option("--batch-size", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--order", type=click.Choice(ORDERS), default="forward", show_default=True)
@click.option("--exact", is_flag=True, help="Bypass lookback and schedule-gap expansion.")
@click.option("--param", multiple=True, metavar="NAME=VALUE", help="Job parameter (repeatable).")
@click.option("--dry-run", is_flag=True, help="Print the plan; launch nothing.")
@_force_option
@connection_options
@_pacing_options
@pipelines_option
def catchup_command(job: str, dry_run: bool, **kw: Any) -> None:
    """Run every key of JOB's backfill definition that has no successful run yet.

    Keys whose latest run failed and keys never run are launched; keys with a run in
    progress are left alone. Same options and exit codes as dbxdec backfill.
    """
    _plan_and_launch(_request(job, kw, catchup=True), kw, dry_run=dry_run)


def _plan_and_launch(request: BackfillRequest, kw: dict[str, Any], *, dry_run: bool) -> None:
    """Plan ``request``; print the plan on a dry run, else launch it."""
    config, registry = load_project(kw["project"], kw["pipelines"])
    prepared = plan_backfill(
        request, root=config.root, registry=registry, warehouse=config.warehouse, dry_run=dry_run
    )
    if dry_run:
        _print_plan(prepared, kw["as_json"])
        return
    _launch(prepared, kw["as_json"], _nothing_to_run(request))


def register(group: click.Group) -> None:
    """Add this module's commands to ``group``."""
    for command in (backfill_command, catchup_command):
        group.add_command(command)

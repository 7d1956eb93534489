"""What ``dbxdec backfill`` and ``catchup`` print: the plan of a dry run, the progress
of a launch and the one line a failed or interrupted backfill ends with."""

from __future__ import annotations

import json
import sys

import click

from ...errors import LocalStateProblem, counted
from ...launch.backends.errors import BackfillClaimLost, BackfillFailed, BackfillInterrupted
from ...launch.launcher import PreparedBackfill, run_backfill
from ...launch.plan.plan_summary import PlanSelection
from ...launch.plan.request import BackfillRequest
from ...launch.policy.canary import canary_failure, canary_failure_line
from ...launch.run.events import LaunchSummary
from ...launch.status.progress import (
    JsonReporter,
    LiveReporter,
    PlainReporter,
    Reporter,
    next_rerun_command,
)
from ...runtime.programs.task_subset import decode_tasks
from .plan_output import print_runs, write_plan_json


def reporter(as_json: bool) -> Reporter:
    if as_json:
        return JsonReporter(sys.stdout)
    if sys.stderr.isatty():
        return LiveReporter()
    return PlainReporter(sys.stdout)


ALL_DONE = "nothing to run: every selected key is already done"


def nothing_to_run(request: BackfillRequest) -> str:
    """Why a plan is empty, in the terms of the selection that emptied it."""
    if request.catchup:
        return "nothing to run: every selected key has succeeded or is running"
    if request.rerun == "failed":
        return "nothing to run: no selected key's latest run failed"
    if request.rerun == "missing":
        return "nothing to run: every selected key has run before"
    return ALL_DONE


def launch(prepared: PreparedBackfill, as_json: bool, nothing: str = ALL_DONE) -> None:
    if not prepared.ledger.slices:
        message = nothing
        if as_json:
            click.echo(json.dumps({"event": "summary", "state": "succeeded", "message": message}))
        else:
            click.echo(message)
        return
    summary = run_backfill(prepared, reporter(as_json))
    if summary.unsaved:
        counts = summary.counts
        raise LocalStateProblem(
            f"cannot save the backfill ledger ({summary.unsaved}): stopped launching with "
            f"{counts.remaining} of {counted(counts.total, 'run')} not launched, after watching "
            "the runs in flight to their end; free disk space, then finish with: "
            f"{summary.resume_command}"
        )
    if summary.claim_lost:
        raise BackfillClaimLost(claim_lost_line(summary))
    if summary.exit_code == 130:
        raise BackfillInterrupted(f"backfill interrupted; resume with: {summary.resume_command}")
    if summary.exit_code:
        canary = canary_failure(prepared.ledger)
        if canary is not None:
            raise BackfillFailed(canary_failure_line(canary, summary.resume_command))
        counts = summary.counts
        failed = f"{counts.failed} of {counted(counts.total, 'run')}"
        failed += " failed" + (f", {counts.blocked} blocked" if counts.blocked else "")
        if not as_json:  # the summary above ends with the one command to run next
            raise BackfillFailed(f"{failed}; run the command above to finish")
        hint = next_rerun_command(summary) or summary.resume_command
        raise BackfillFailed(f"{failed}; next: {hint}")


def claim_lost_line(summary: LaunchSummary) -> str:
    """Why the backfill stopped when another launcher took its claim over, and how to
    finish what is left once that one has ended (a resume now would be refused)."""
    counts = summary.counts
    return (
        f"{summary.claim_lost}; {counts.done} of {counted(counts.total, 'run')} done here, "
        f"the runs in flight were watched to their end; once that backfill has ended, "
        f"finish what is left with: {summary.resume_command}"
    )


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
        from .downstream_output import print_downstream_plan

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

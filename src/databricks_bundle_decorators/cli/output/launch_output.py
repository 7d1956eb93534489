"""What ``dbxdec backfill`` and ``catchup`` print of a launch: its progress, the one line
a failed or interrupted backfill ends with, and ``--detach``'s hand-off to a controller
run (the option is kept in ``ctx.meta``, so the commands keep their signatures)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ...errors import LocalStateProblem, UsageError, counted
from ...launch.backends.errors import BackfillClaimLost, BackfillFailed, BackfillInterrupted
from ...launch.control.detach import LOCAL_REFUSAL, detach_backfill
from ...launch.launcher import PreparedBackfill, run_backfill
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

F = TypeVar("F", bound=Callable[..., Any])
_DETACH = "dbxdec.detach"


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
        summary_event = {"event": "summary", "state": "succeeded", "message": nothing}
        click.echo(json.dumps(summary_event) if as_json else nothing)
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


def _remember(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    ctx.meta[_DETACH] = value
    return value


def detach_option(function: F) -> F:
    """``--detach``: start a controller run in the workspace and return."""
    option = click.option(
        "--detach",
        is_flag=True,
        expose_value=False,
        callback=_remember,
        help="Hand the backfill to a controller run in the workspace and return at once; "
        "it goes on with this machine off. Follow it with: dbxdec backfill watch ID. The "
        "controller job's principal (its run_as) needs CAN MANAGE RUN on the backfilled jobs "
        "(run now, cancel) and, with --downstream, CAN MANAGE on each dependant whose trigger "
        "it holds paused (jobs/update), checked before anything starts.",
    )
    return option(function)


def detaching() -> bool:
    """Whether ``--detach`` was given to the running command."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.meta.get(_DETACH))


def refuse_local_detach(request: BackfillRequest) -> None:
    """``--detach --local``: one line, before anything is planned."""
    if detaching() and request.connection.local:
        raise UsageError(LOCAL_REFUSAL)


def launch_or_detach(
    prepared: PreparedBackfill, as_json: bool, nothing: str = ALL_DONE, *, root: Path | None = None
) -> None:
    """Run ``prepared`` here, or with ``--detach`` hand it to a controller run."""
    if not detaching() or not prepared.ledger.slices:  # an empty plan: says nothing to run
        launch(prepared, as_json, nothing)
        return
    detached = detach_backfill(prepared, root=root or Path.cwd())
    facts: dict[str, Any] = {
        "event": "detached",
        "backfill_id": detached.backfill_id,
        "controller_run_id": detached.controller.run_id,
        "run_page": detached.run_page,
        "follow": detached.follow,
    }
    if as_json:
        click.echo(json.dumps(facts))
        return
    click.echo(
        f"Backfill {detached.backfill_id} detached: controller run {detached.controller.run_id} "
        f"launches its runs ({detached.run_page})."
    )
    click.echo(f"Follow it with: {detached.follow}")

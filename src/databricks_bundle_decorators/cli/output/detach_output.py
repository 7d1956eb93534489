"""``--detach`` on ``dbxdec backfill`` and ``dbxdec catchup``: the option and its output.

The option is recorded in the click context (``ctx.meta``) rather than passed to the
commands, so the commands keep their signatures; :func:`launch_or_detach` replaces
:func:`.launch_output.launch` where a backfill starts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ...errors import UsageError
from ...launch.control.detach import LOCAL_REFUSAL, detach_backfill
from ...launch.plan.request import BackfillRequest
from ...launch.prepare.prepared import PreparedBackfill
from .launch_output import ALL_DONE, launch

F = TypeVar("F", bound=Callable[..., Any])
_DETACH = "dbxdec.detach"


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
    if not detaching():
        launch(prepared, as_json, nothing)
        return
    if not prepared.ledger.slices:
        launch(prepared, as_json, nothing)  # says there is nothing to run
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

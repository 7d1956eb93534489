"""``dbxdec backfill`` with no range: every key of the definition, only when asked for
(``--all``) or confirmed on a terminal (issue 25: 91 keys ran silently; an open-ended
definition on Databricks is thousands of runs)."""

from __future__ import annotations

import sys

import click

from ...definitions import Registry
from ...errors import UsageError
from ...launch.plan.request import BackfillRequest, full_range_runs

all_keys_option = click.option(
    "--all",
    "all_keys",
    is_flag=True,
    help="With no --start/--end and no --keys: launch every key of the definition. "
    "Without it a terminal asks first (saying how many runs) and elsewhere the backfill "
    "is refused; --dry-run plans every key without it.",
)


def confirm_every_key(registry: Registry, request: BackfillRequest) -> None:
    """Ask before ``request`` launches every key of its definition; without a terminal
    to ask on, refuse in one line (exit 2).

    Raises:
        UsageError: no terminal, and the request names no keys.
        click.exceptions.Abort: the user said no (exit 130, as other confirmations).
    """
    runs = full_range_runs(registry, request)
    if runs is None:
        return
    what = f"every key of {request.job}'s backfill definition, {runs} run{'s' * (runs != 1)}"
    if request.batch_size == "auto":
        what = f"every key of {request.job}'s backfill definition ({runs} keys)"
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError(f"no range given, which means {what}: pass --start/--end, --keys or --all")
    click.confirm(f"No range given: launch {what}?", abort=True, err=True)

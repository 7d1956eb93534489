"""``dbxdec backfill JOB --full-refresh``: rebuild a job's tables so that readers see the
old tables or the new ones, never a mixture.

The plan gets one keyless run at the end (where a final sync would go), and every run's
order (``dbxdec_order``) says its part (see :mod:`...backfill.refresh`):

- each slice is a stage run: its tables are written to staging tables
  beside them (see :mod:`..runtime.programs.full_refresh` for which tables and reads); the first
  slice runs alone, as a canary (it creates the staging tables);
- the last run is a swap run: the scheduler starts it only once every slice
  succeeded (as it does a final sync); each task checks its staging tables whole and
  replaces its tables in one Delta commit each.

The parameters are recorded per slice in the ledger, so ``--resume`` writes to the same
staging tables and swaps at its end; a backfill that stops early (a failed slice, Ctrl-C)
leaves every table as it was.
"""

from __future__ import annotations

from dataclasses import replace

from ...backfill.wire import StageOrder, SwapOrder, task_order, with_order
from ...errors import UsageError
from ..prepare.planners import Draft, Planning


def refuse_full_refresh_combinations(draft: Draft, planning: Planning) -> Draft:
    """Refuse, in one line, what cannot be combined with ``--full-refresh``.

    Raises:
        UsageError: with ``--rerun failed|missing``, ``catchup``, ``--final-sync`` or
            ``--no-checks``.
    """
    request = planning.request
    if not request.options.full_refresh:
        return draft
    if request.catchup:
        raise UsageError("catchup cannot --full-refresh: a full refresh rebuilds every key")
    if request.rerun != "all":
        raise UsageError(
            f"--full-refresh cannot be combined with --rerun {request.rerun}: it rebuilds "
            "the tables from every key of the plan (the keys left out would be lost)"
        )
    if request.options.final_sync:
        raise UsageError(
            "--full-refresh cannot be combined with --final-sync: its last run is the swap"
        )
    if not request.options.checks:
        raise UsageError(
            "--full-refresh cannot be combined with --no-checks: its swap judges the checks "
            "of each whole staging table before it replaces a table"
        )
    return draft


def first_alone(draft: Draft, planning: Planning) -> Draft:
    """At least one canary for a full refresh, whose first slice creates the staging
    tables alone (concurrent first writes to a table that does not exist yet conflict in
    Delta), and whose others wait for it to succeed."""
    if not planning.request.options.full_refresh or draft.options is None:
        return draft
    options = replace(draft.options, canary=max(draft.options.canary, 1))
    return replace(draft, options=options)


def stage_ledger(draft: Draft, planning: Planning) -> Draft:
    """Give every slice of a new full-refresh ledger its order: ``stage`` for the keyed
    slices, ``swap`` for the keyless last one."""
    ledger = draft.ledger
    if not planning.request.options.full_refresh or ledger is None:
        return draft
    for record in ledger.slices:
        order = task_order(record.parameters)
        phase = StageOrder if record.keys else SwapOrder
        staged = phase(ledger.id, order.tasks, order.checks, order.force_rewrite)
        ledger.update(replace(record, parameters=with_order(record.parameters, staged)))
    return draft

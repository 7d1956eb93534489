"""``dbxdec backfill JOB --full-refresh``: each slice a stage run writing staging tables (the
first alone), then one keyless swap run replacing each table in one Delta commit, so readers
see the old tables or the new ones, never a mixture (:mod:`...backfill.refresh`)."""

from __future__ import annotations

from dataclasses import replace

from ...backfill.wire import StageOrder, SwapOrder, task_order, with_order
from ...errors import UsageError
from ..prepare.planners import Draft, Planning


def refuse_full_refresh_combinations(draft: Draft, planning: Planning) -> Draft:
    """Refuse ``--full-refresh`` with ``catchup``, ``--rerun failed|missing``, ``--final-sync``
    or ``--no-checks``, in one line.
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
    """At least one canary: the first slice creates the staging tables alone (concurrent
    first writes to a new Delta table conflict).
    """
    if not planning.request.options.full_refresh or draft.options is None:
        return draft
    options = replace(draft.options, canary=max(draft.options.canary, 1))
    return replace(draft, options=options)


def stage_ledger(draft: Draft, planning: Planning) -> Draft:
    """Every slice of a new full-refresh ledger gets its order: ``stage``, or ``swap`` for
    the keyless last one.
    """
    ledger = draft.ledger
    if not planning.request.options.full_refresh or ledger is None:
        return draft
    for record in ledger.slices:
        order = task_order(record.parameters)
        phase = StageOrder if record.keys else SwapOrder
        staged = phase(ledger.id, order.tasks, order.checks, order.force_rewrite)
        ledger.update(replace(record, parameters=with_order(record.parameters, staged)))
    return draft

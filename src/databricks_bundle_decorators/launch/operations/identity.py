"""The backfill's id in every run it starts (``dbxdec_order``), written into its commits'
``userMetadata`` so undo finds them; a job deployed without ``dbxdec_order`` is not sent
it, and its undo falls back to the ids of its runs.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ...backfill.wire import ORDER_PARAM, order_in, task_order, with_order
from ..ledger.ledger import Ledger
from ..prepare.planners import Draft, Planning
from ..workspace.workspace import declares_order_parameter

if TYPE_CHECKING:
    from ..guard.connection import ConnectedJob


def carry_backfill_id(ledger: Ledger, found: ConnectedJob | None = None) -> list[str]:
    """Give every slice of a new ledger its backfill's id in its order (kept by ``--resume``
    and re-batches). On Databricks only when the deployed job declares ``dbxdec_order``
    (``run-now`` with an undeclared parameter is unspecified,
    https://docs.databricks.com/api/workspace/jobs/runnow); else returns the warning.

    Raises:
        UsageError: the deployed job cannot be read.
    """
    if found is not None and not declares_order_parameter(found.client, found.remote.job_id):
        return [
            f"job {found.remote.name!r} (id {found.remote.job_id}) was deployed without the "
            f"{ORDER_PARAM} parameter (by an older dbxdec): its runs are not sent the "
            "backfill's id, so its undo names every run; deploy it again (dbxdec deploy)"
        ]
    for record in ledger.slices:
        order = replace(task_order(record.parameters), backfill_id=ledger.id)
        ledger.update(replace(record, parameters=with_order(record.parameters, order)))
    return []


def carry_id(draft: Draft, planning: Planning) -> Draft:
    """The planner of :func:`carry_backfill_id` for a new backfill's ledger."""
    assert draft.ledger is not None
    return replace(draft, warnings=(*draft.warnings, *carry_backfill_id(draft.ledger, draft.found)))


def carries_backfill_id(ledger: Ledger) -> bool:
    """Whether every run of the backfill was sent its id."""
    return bool(ledger.slices) and all(
        getattr(order_in(r.parameters), "backfill_id", "") == ledger.id for r in ledger.slices
    )

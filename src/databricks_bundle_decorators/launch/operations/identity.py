"""The backfill's id in every run it starts, so undo finds its commits by it.

Every slice's parameters carry the id (``backfill_id``, :func:`carry_backfill_id`), so
each of its runs writes it into its commits' ``userMetadata``. The ledger records those
parameters, so it also says whether its runs carried the id (:func:`carries_backfill_id`):
a backfill of a job deployed without that parameter did not, and its undo falls back to
the ids of its runs.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ...backfill.wire import BACKFILL_ID_PARAM
from ..ledger.ledger import Ledger
from ..workspace.workspace import declares_job_parameter

if TYPE_CHECKING:
    from ..guard.connection import ConnectedJob


def carry_backfill_id(ledger: Ledger, found: ConnectedJob | None = None) -> list[str]:
    """Give every slice of a new ledger the job parameter ``backfill_id`` (its id); kept by
    ``--resume`` and by a re-batch, which reuse the slices' recorded parameters.

    On Databricks (``found``: the deployed job), only when the deployed
    job declares that parameter: the Jobs API reference does not say what ``run-now``
    does with a job parameter the job does not declare
    (https://docs.databricks.com/api/workspace/jobs/runnow), so none is sent. Returns
    the warning then (one line), else nothing.

    Raises:
        UsageError: the deployed job cannot be read.
    """
    if found is not None and not declares_job_parameter(
        found.client, found.remote.job_id, BACKFILL_ID_PARAM
    ):
        return [
            f"job {found.remote.name!r} (id {found.remote.job_id}) was deployed without the "
            f"{BACKFILL_ID_PARAM} parameter (by an older dbxdec): its runs are not sent the "
            "backfill's id, so its undo names every run; deploy it again (dbxdec deploy)"
        ]
    for record in ledger.slices:
        ledger.update(
            replace(record, parameters={**record.parameters, BACKFILL_ID_PARAM: ledger.id})
        )
    return []


def carries_backfill_id(ledger: Ledger) -> bool:
    """Whether every run of the backfill was sent its id (:func:`carry_backfill_id`), so
    that its commits can be found by it."""
    return bool(ledger.slices) and all(
        r.parameters.get(BACKFILL_ID_PARAM) == ledger.id for r in ledger.slices
    )

"""The dry run's DBU figure from billing: the plan's keys times the median netted DBU per
key of the job's latest successful runs billed (:func:`..workspace.billing_read.read_billing`
through the SDK's SQL warehouse), leaving out runs younger than
:data:`.cost.BILLING_DELAY` or without records; unreadable billing changes nothing.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timezone
from decimal import Decimal
from typing import TYPE_CHECKING

from ...errors import DbxdecError
from ..plan.plan import BackfillPlan
from ..workspace.billing_read import read_billing
from .cost import BILLING_DELAY
from .estimate import SAMPLE, Estimate, PastRun, _amount

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

__all__ = ["BilledEstimate", "with_past_dbus"]


@dataclass(frozen=True, slots=True)
class BilledEstimate(Estimate):
    """An :class:`~.estimate.Estimate` whose DBUs are ``dbu_per_key`` (median of
    ``billed_runs`` runs) x ``planned_keys``.
    """

    dbu_per_key: float = 0.0
    planned_keys: int = 0
    billed_runs: int = 0

    @property
    def dbu(self) -> float | None:
        return self.dbu_per_key * self.planned_keys

    def _compute_lines(self) -> list[str]:
        compute = self.compute.description if self.compute is not None else "compute unknown"
        return [
            f"  ~{_amount(self.dbu or 0.0)} DBU: {self.planned_keys} keys x "
            f"{self.dbu_per_key:.4g} DBU per key, the median of the last {self.billed_runs} "
            f"billed runs (system.billing.usage, netted) ({compute})"
        ]


def with_past_dbus(
    found: Estimate,
    plan: BackfillPlan,
    client: WorkspaceClient,
    runs: Sequence[PastRun],
    *,
    now: datetime | None = None,
) -> Estimate:
    """``found`` with a DBU figure from the billing of ``runs``, else ``found`` itself."""
    from databricks.sdk.errors.base import DatabricksError

    warehouse = client.config.warehouse_id
    moment = (now or datetime.now(timezone.utc)).timestamp()
    settled = [
        run
        for run in runs
        if run.state == "succeeded"
        and run.run_id
        and moment - run.ended >= BILLING_DELAY.total_seconds()
    ][:SAMPLE]
    if not warehouse or not settled:
        return found
    try:
        records = read_billing(
            client,
            warehouse,
            run_ids=[str(run.run_id) for run in settled],
            job_id=None,  # no run-less records: only these runs' own
            since=datetime.fromtimestamp(moment, timezone.utc),
            until=datetime.fromtimestamp(moment, timezone.utc),
        )
    except (DbxdecError, DatabricksError):
        return found
    dbus: dict[str, Decimal] = {}
    for record in records:
        if record.usage_unit == "DBU" and "ALL_PURPOSE" not in record.sku_name.upper():
            dbus[record.run_id or ""] = dbus.get(record.run_id or "", Decimal(0)) + record.quantity
    per_key = [float(dbus[r.run_id]) / r.keys for r in settled if r.run_id in dbus]
    if not per_key:
        return found
    keys = sum(len(s.keys) for s in plan.slices)
    values = {f.name: getattr(found, f.name) for f in fields(found)}
    return BilledEstimate(
        **values,
        dbu_per_key=statistics.median(per_key),
        planned_keys=keys,
        billed_runs=len(per_key),
    )

"""``dbxdec backfill cost ID``: what a backfill cost, per key and in total, from
``system.billing.usage`` netted over its record types in exact ``Decimal``
(https://docs.databricks.com/aws/en/admin/system-tables/billing, "Record type reference"), at
the list price in force at ``usage_end_time`` (https://docs.databricks.com/aws/en/admin/system-tables/pricing)."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import DbxdecError, UsageError, counted
from ..ledger.ledger import Ledger, load_ledger
from ..plan.plan import BackfillPlan
from ..plan.states import RunState
from ..workspace.billing_read import BillingRecord, read_billing
from .estimate import SAMPLE, Estimate, PastRun, _amount

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

_UTC = timezone.utc

BILLING_DELAY = timedelta(hours=12)
"""The billing reference: records typically arrive within 12 hours."""

_FAILED = frozenset({RunState.FAILED, RunState.CANCELLED})


@dataclass(frozen=True, slots=True)
class RunOfKeys:
    """A run of the backfill: the keys its slice covers and how its attempt ended."""

    run_id: str
    keys: tuple[str, ...]
    failed: bool


@dataclass(slots=True)
class Usage:
    """DBUs and cost per currency, exact."""

    dbus: Decimal = Decimal(0)
    cost: dict[str, Decimal] = field(default_factory=dict)

    def add(self, record: BillingRecord, share: Decimal = Decimal(1)) -> None:
        """Add ``share`` of ``record``: DBU records to ``dbus``, priced records to ``cost``."""
        if record.usage_unit == "DBU":
            self.dbus += record.quantity * share
        for currency, price in record.prices:
            self.cost[currency] = self.cost.get(currency, Decimal(0)) + (
                record.quantity * price * share
            )

    def to_json(self) -> dict[str, Any]:
        return {"dbus": _text(self.dbus), "cost": {c: _text(v) for c, v in self.cost.items()}}


@dataclass(slots=True)
class KeyCost:
    """One key's usage over all its runs' attempts, and (of which) its failed attempts'."""

    key: str
    usage: Usage = field(default_factory=Usage)
    failed: Usage = field(default_factory=Usage)
    allocated: bool = False
    runs: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class BackfillCost:
    """What backfill ``backfill_id`` cost, at list price (the module docstring)."""

    backfill_id: str
    job: str
    warehouse_id: str
    keys: tuple[KeyCost, ...]
    total: Usage
    failed: Usage
    unattributed: Usage
    unattributed_reasons: Mapping[str, int]
    runs_without_records: tuple[str, ...]
    unpriced_records: int
    record_types: Mapping[str, int]
    incomplete: str  # why the figures may still grow; "" when complete

    def to_json(self) -> dict[str, Any]:
        """The report as JSON (docs/backfill-launcher.md); decimals are strings, never floats."""
        return {
            "backfill_id": self.backfill_id,
            "job": self.job,
            "warehouse_id": self.warehouse_id,
            "price_basis": "effective list price in force at usage_end_time",
            "incomplete": bool(self.incomplete),
            "incomplete_reason": self.incomplete or None,
            "total": {**self.total.to_json(), "failed_attempts": self.failed.to_json()},
            "keys": [
                {
                    "key": k.key,
                    **k.usage.to_json(),
                    "failed_attempts": k.failed.to_json(),
                    "allocated": k.allocated,
                    "runs": k.runs,
                }
                for k in self.keys
            ],
            "unattributed": {
                **self.unattributed.to_json(),
                "records": sum(self.unattributed_reasons.values()),
                "reasons": dict(self.unattributed_reasons),
            },
            "runs_without_records": list(self.runs_without_records),
            "unpriced_records": self.unpriced_records,
            "record_types": dict(self.record_types),
        }

    def lines(self) -> list[str]:
        """The report for people."""
        currencies = sorted({c for u in (self.total, self.unattributed) for c in u.cost})
        out = [
            f"Cost of backfill {self.backfill_id} ({self.job}) at list price "
            "(the effective list price in force at each record's usage_end_time):"
        ]
        head = ["key", "DBU", *currencies, "of which failed attempts"]

        def row(label: str, usage: Usage, failed: Usage) -> list[str]:
            money = [_text(usage.cost.get(c, Decimal(0))) for c in currencies]
            return [label, _text(usage.dbus), *money, _failed_text(failed, currencies)]

        table = [head, *(row(k.key + " *" * k.allocated, k.usage, k.failed) for k in self.keys)]
        table.append(row("total", self.total, self.failed))
        widths = [max(len(row[i]) for row in table) for i in range(len(head))]
        out += [
            "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
            for row in table
        ]
        if any(k.allocated for k in self.keys):
            out.append("  * allocated: a run covering several keys, split equally among them")
        if self.unattributed_reasons:
            reasons = ", ".join(f"{r}: {n}" for r, n in sorted(self.unattributed_reasons.items()))
            money = "".join(f", {_text(v)} {c}" for c, v in sorted(self.unattributed.cost.items()))
            out.append(
                f"  unattributed (not in the total, assigned to no key): "
                f"{_text(self.unattributed.dbus)} DBU{money} ({reasons})"
            )
        if self.runs_without_records:
            out.append(
                f"  runs without billing records: {', '.join(self.runs_without_records)} "
                "(an all-purpose cluster bills the cluster, not the run; or not billed yet)"
            )
        if self.unpriced_records:
            out.append(
                f"  {counted(self.unpriced_records, 'record')} had no list price in force: "
                "counted in DBU, not in cost"
            )
        if self.incomplete:
            out.append(f"  incomplete: {self.incomplete}")
        return out


def run_keys(ledger: Ledger) -> list[RunOfKeys]:
    """Every run the backfill started (every attempt; rejected submissions have none)."""
    return [
        RunOfKeys(attempt.run_id, record.keys or (record.label,), attempt.state in _FAILED)
        for record in ledger.slices
        for attempt in record.attempts
        if attempt.run_id and attempt.state != "rejected"
    ]


def backfill_cost_of(
    ledger: Ledger,
    records: Sequence[BillingRecord],
    *,
    warehouse_id: str,
    now: datetime,
) -> BackfillCost:
    """The report of ``ledger``'s backfill from its billing ``records`` at time ``now``."""
    runs = {run.run_id: run for run in run_keys(ledger)}
    keys: dict[str, KeyCost] = {}
    for record in ledger.slices:
        for key in record.keys or (record.label,):
            keys.setdefault(key, KeyCost(key))
    total, failed, unattributed = Usage(), Usage(), Usage()
    reasons: Counter[str] = Counter()
    billed: set[str] = set()
    for item in records:
        run = runs.get(item.run_id or "")
        if run is not None:
            billed.add(run.run_id)
        if run is None or "ALL_PURPOSE" in item.sku_name.upper():
            unattributed.add(item)
            reasons["all-purpose compute" if run is not None else "no job_run_id"] += 1
            continue
        total.add(item)
        if run.failed:
            failed.add(item)
        share = Decimal(1) / len(run.keys)
        for key in run.keys:
            cost = keys[key]
            cost.usage.add(item, share)
            if run.failed:
                cost.failed.add(item, share)
            cost.allocated = cost.allocated or len(run.keys) > 1
            if run.run_id not in cost.runs:
                cost.runs.append(run.run_id)
    return BackfillCost(
        ledger.id,
        ledger.job,
        warehouse_id,
        tuple(keys.values()),
        total,
        failed,
        unattributed,
        dict(reasons),
        tuple(r for r in runs if r not in billed),
        sum(1 for item in records if not item.prices),
        dict(Counter(item.record_type for item in records)),
        _incomplete(ledger, now),
    )


def billing_span(ledger: Ledger, now: datetime) -> tuple[datetime, datetime]:
    """``[since, until)`` in which the job's records without a run id are the backfill's: the
    hour of the first submission to an hour past the last end.
    """
    starts = [a.submitted_at or a.started_at for r in ledger.slices for a in r.attempts]
    ends = [a.ended_at for r in ledger.slices for a in r.attempts]
    first = min((s for s in starts if s is not None), default=ledger.created_at)
    last = max((e for e in ends if e is not None), default=now.timestamp())
    since = datetime.fromtimestamp(first, _UTC).replace(minute=0, second=0, microsecond=0)
    return since, datetime.fromtimestamp(last, _UTC) + timedelta(hours=1)


def _incomplete(ledger: Ledger, now: datetime) -> str:
    attempts = [a for r in ledger.slices for a in r.attempts if a.run_id]
    if any(a.is_open for a in attempts):
        return "a run was still in flight when the ledger was last saved"
    last = max((a.ended_at for a in attempts if a.ended_at is not None), default=None)
    if last is not None and now - datetime.fromtimestamp(last, _UTC) < BILLING_DELAY:
        ended = datetime.fromtimestamp(last, _UTC).isoformat(timespec="minutes")
        return (
            f"the last run ended at {ended}, less than 12 hours ago; billing records "
            "typically arrive within 12 hours"
        )
    return ""


def _failed_text(usage: Usage, currencies: Sequence[str]) -> str:
    if not usage.dbus and not any(usage.cost.values()):
        return "-"
    money = "".join(f", {_text(usage.cost.get(c, Decimal(0)))} {c}" for c in currencies)
    return f"{_text(usage.dbus)} DBU{money}"


def _text(value: Decimal) -> str:
    """A decimal without exponent or trailing zeros: ``1.5``, ``0``, ``1200``."""
    text = format(value, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def backfill_cost(
    backfill_id: str,
    root: Path,
    *,
    warehouse_id: str | None = None,
    host: str | None = None,
    profile: str | None = None,
    client: WorkspaceClient | None = None,
    now: datetime | None = None,
    poll_interval: float = 1.0,
    ledger: Ledger | None = None,
) -> BackfillCost:
    """What backfill ``backfill_id`` of the project at ``root`` cost, read from billing
    (``ledger``: its ledger as already read, e.g. a detached backfill's journal).

    ``warehouse_id``: the SQL warehouse reading ``system.billing`` (default: the SDK's);
    ``host``, ``profile``, ``client``: the workspace (default: the ledger's).

    Raises:
        UsageError: unknown backfill, a local backfill, or no warehouse to read through.
        BillingUnreadable: the billing statement failed on the warehouse.
    """
    from ..workspace.workspace import connect

    ledger = ledger or load_ledger(root, backfill_id)
    if ledger.backend.kind != "databricks":
        raise UsageError(
            f"backfill {backfill_id} ran on the local Spark (--local): Databricks billed nothing"
        )
    if client is None:
        client = connect(
            host=host or ledger.backend.host, profile=profile or ledger.backend.profile
        )
    warehouse = warehouse_id or client.config.warehouse_id
    if not warehouse:
        raise UsageError(
            "no SQL warehouse to read system.billing through: pass --warehouse-id W, or set "
            "DATABRICKS_WAREHOUSE_ID (or warehouse_id in your ~/.databrickscfg profile)"
        )
    moment = now or datetime.now(_UTC)
    since, until = billing_span(ledger, moment)
    records = read_billing(
        client,
        warehouse,
        run_ids=[run.run_id for run in run_keys(ledger)],
        job_id=ledger.backend.job_id,
        since=since,
        until=until,
        poll_interval=poll_interval,
    )
    return backfill_cost_of(ledger, records, warehouse_id=warehouse, now=moment)


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
            f"  ~{_amount(self.dbu or 0.0)} DBU: {counted(self.planned_keys, 'key')} x "
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

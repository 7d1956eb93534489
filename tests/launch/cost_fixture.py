"""A backfill ledger and the billing records of its runs, for the cost tests.

Job 42's backfill over 2024-01-01..06 (run ids in brackets):

- 2024-01-01: attempt 1 [101] failed (1.5 DBU); the retry [102] billed 2.0 DBU, then a
  correction: a RETRACTION of -2.0 and a RESTATEMENT of 2.25 (so 2.25 in all).
- 2024-01-02: [103] serverless, billed in three records (0.4 + 0.35 + 0.25 DBU), across
  a serverless list price change at 12:00 (0.35 -> 0.39 USD).
- 2024-01-03..04: one run [104] of both keys, 3.0 DBU: 1.5 allocated to each.
- 2024-01-05: [105] on an all-purpose cluster: no record names it.
- 2024-01-06: [106] whose only record is of an all-purpose SKU: unattributed.
- Job 42's record with no run id in the backfill's span (0.6 DBU): unattributed.
- Noise that must not count: another job's run, job 42's scheduled run [555] (not in
  the ledger), and job 42's record with no run id a week before the backfill.

Jobs compute is priced 0.15 USD and 0.14 EUR per DBU, all-purpose 0.40 USD.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
)
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice

UTC = timezone.utc
JOB_ID = 42
BACKFILL_ID = "nightly-20240101T000000-c057"
JOBS = "PREMIUM_JOBS_COMPUTE"
SERVERLESS = "PREMIUM_JOBS_SERVERLESS_COMPUTE_US_EAST"
ALL_PURPOSE = "PREMIUM_ALL_PURPOSE_COMPUTE"


def at(day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(2024, 1, day, hour, minute, tzinfo=UTC)


def _usage(
    record_id: str,
    run_id: str | None,
    quantity: str,
    start: datetime,
    *,
    sku: str = JOBS,
    record_type: str = "ORIGINAL",
    job_id: str | None = str(JOB_ID),
) -> dict[str, Any]:
    return {
        "record_id": record_id,
        "account_id": "acc",
        "workspace_id": "1234567890123456",
        "sku_name": sku,
        "cloud": "AWS",
        "usage_start_time": start,
        "usage_end_time": start + timedelta(hours=1),
        "usage_date": start.date(),
        "usage_unit": "DBU",
        "usage_quantity": Decimal(quantity),
        "usage_metadata": {"job_id": job_id, "job_run_id": run_id},
        "record_type": record_type,
        "billing_origin_product": "JOBS",
    }


USAGE = [
    _usage("u1", "101", "1.5", at(1, 1)),
    _usage("u2", "102", "2.0", at(1, 2)),
    _usage("u2r", "102", "-2.0", at(1, 2), record_type="RETRACTION"),
    _usage("u2s", "102", "2.25", at(1, 2), record_type="RESTATEMENT"),
    _usage("u3a", "103", "0.4", at(2, 10, 30), sku=SERVERLESS),  # ends before the price change
    _usage("u3b", "103", "0.35", at(2, 11, 30), sku=SERVERLESS),
    _usage("u3c", "103", "0.25", at(2, 12), sku=SERVERLESS),
    _usage("u4", "104", "3.0", at(3, 1)),
    _usage("u6", "106", "0.8", at(6, 1), sku=ALL_PURPOSE),
    _usage("u7", None, "0.6", at(5, 1)),
    # noise
    _usage("n1", "999", "9.0", at(2, 1), job_id="7"),
    _usage("n2", "555", "9.0", at(3, 5)),
    _usage("n3", None, "9.0", datetime(2023, 12, 24, 1, tzinfo=UTC)),
]


def _price(
    sku: str,
    value: str,
    start: datetime,
    end: datetime | None,
    currency: str = "USD",
    effective: str | None = None,
):
    """A list price; ``effective``: the promotional price in force (pricing.effective_list)."""
    return {
        "price_start_time": start,
        "price_end_time": end,
        "account_id": "acc",
        "sku_name": sku,
        "cloud": "AWS",
        "currency_code": currency,
        "usage_unit": "DBU",
        "pricing": {
            "default": Decimal(value),
            "effective_list": {"default": Decimal(effective or value)},
        },
    }


LIST_PRICES = [
    _price(JOBS, "0.15", datetime(2023, 1, 1, tzinfo=UTC), None),
    _price(JOBS, "0.14", datetime(2023, 1, 1, tzinfo=UTC), None, "EUR"),
    _price(SERVERLESS, "0.35", datetime(2023, 1, 1, tzinfo=UTC), at(2, 12)),
    _price(SERVERLESS, "0.39", at(2, 12), None, effective="0.30"),  # a promotion: 0.30 is paid
    _price(ALL_PURPOSE, "0.40", datetime(2023, 1, 1, tzinfo=UTC), None),
]

# (keys, [(run id, state, submitted, ended)]) per slice
SLICES: list[tuple[tuple[str, ...], list[tuple[str, str, datetime, datetime]]]] = [
    (
        ("2024-01-01",),
        [
            ("101", "failed", at(1, 1), at(1, 1, 40)),
            ("102", "succeeded", at(1, 2), at(1, 2, 50)),
        ],
    ),
    (("2024-01-02",), [("103", "succeeded", at(2, 11), at(2, 12, 30))]),
    (("2024-01-03", "2024-01-04"), [("104", "succeeded", at(3, 1), at(3, 2))]),
    (("2024-01-05",), [("105", "succeeded", at(5, 1), at(5, 2))]),
    (("2024-01-06",), [("106", "succeeded", at(6, 1), at(6, 2))]),
]
LAST_END = at(6, 2)


def write_cost_ledger(root: Path, host: str | None = None) -> Ledger:
    """The fixture's backfill ledger, saved under ``root/.dbxdec/backfills``."""
    plan = BackfillPlan("nightly", tuple(Slice(i, keys) for i, (keys, _) in enumerate(SLICES)))
    backend = BackendSpec("databricks", job_id=JOB_ID, remote_name="nightly", host=host)
    ledger = Ledger.create(
        root, plan, backend=backend, options=LaunchOptions(), backfill_id=BACKFILL_ID
    )
    for index, (_, attempts) in enumerate(SLICES):
        record = ledger.slices[index]
        for number, (run_id, state, submitted, ended) in enumerate(attempts, start=1):
            attempt = Attempt(
                number,
                f"token-{run_id}",
                state,  # type: ignore[arg-type]
                run_id=run_id,
                submitted_at=submitted.timestamp(),
                started_at=submitted.timestamp(),
                ended_at=ended.timestamp(),
            )
            record = replace(record, attempts=(*record.attempts, attempt))
        ledger.update(record)
    ledger.set_state("failed")
    ledger.save()
    ledger.close()
    return ledger

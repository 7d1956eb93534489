"""The cost arithmetic without Spark: netting, equal allocation and unattributed
records, as properties over generated billing records of the fixture's ledger."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from databricks_bundle_decorators.launch.estimate.cost import (
    BackfillCost,
    backfill_cost_of,
    run_keys,
)
from databricks_bundle_decorators.launch.ledger.ledger import Ledger, load_ledger
from databricks_bundle_decorators.launch.workspace.billing_read import BillingRecord

from .cost_fixture import BACKFILL_ID, LAST_END, at, write_cost_ledger

LATER = LAST_END + timedelta(days=30)


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Ledger:
    root = tmp_path_factory.mktemp("cost-ledger")
    write_cost_ledger(root)
    return load_ledger(root, BACKFILL_ID)


quantities = st.decimals(min_value=-50, max_value=50, places=4, allow_nan=False)
run_ids = st.sampled_from(["101", "102", "103", "104", "105", "106", "555", None])
records = st.lists(
    st.builds(
        lambda i, run, q, kind: BillingRecord(
            f"r{i}", run, "PREMIUM_JOBS_COMPUTE", "DBU", kind, at(1), q, (("USD", Decimal("0.15")),)
        ),
        st.integers(0, 10**6),
        run_ids,
        quantities,
        st.sampled_from(["ORIGINAL", "RESTATEMENT"]),
    ),
    max_size=12,
)


@settings(max_examples=40)  # each example is cheap; 40 cover the run ids and signs
@given(found=records)
def test_keys_add_up_to_the_total_and_nothing_unattributed_is_assigned(
    ledger: Ledger, found: list[BillingRecord]
) -> None:
    report = backfill_cost_of(ledger, found, warehouse_id="w", now=LATER)
    ours = {run.run_id for run in run_keys(ledger)}
    attributed = [r for r in found if r.run_id in ours]
    assert report.total.dbus == sum((r.quantity for r in attributed), Decimal(0))
    # runs split among 1 or 2 keys: halves of 4-place decimals are exact
    assert sum((k.usage.dbus for k in report.keys), Decimal(0)) == report.total.dbus
    assert sum((k.failed.dbus for k in report.keys), Decimal(0)) == report.failed.dbus
    assert report.unattributed.dbus == sum(
        (r.quantity for r in found if r.run_id not in ours), Decimal(0)
    )


@settings(max_examples=40)
@given(found=records, which=st.integers(0, 11))
def test_a_correction_nets_to_its_restatement(
    ledger: Ledger, found: list[BillingRecord], which: int
) -> None:
    """RETRACTION (the original negated) + RESTATEMENT replace the original's figures
    with the restatement's, and change nothing else."""
    if not found:
        return
    original = found[which % len(found)]
    corrected = original.quantity + Decimal("1.2345")
    retraction = BillingRecord(
        original.record_id + "-r",
        original.run_id,
        original.sku_name,
        "DBU",
        "RETRACTION",
        original.usage_start,
        -original.quantity,
        original.prices,
    )
    restatement = BillingRecord(
        original.record_id + "-s",
        original.run_id,
        original.sku_name,
        "DBU",
        "RESTATEMENT",
        original.usage_start,
        corrected,
        original.prices,
    )
    before = backfill_cost_of(ledger, found, warehouse_id="w", now=LATER)
    after = backfill_cost_of(ledger, [*found, retraction, restatement], warehouse_id="w", now=LATER)
    assert _all_dbus(after) - _all_dbus(before) == Decimal("1.2345")
    assert _all_usd(after) - _all_usd(before) == Decimal("1.2345") * Decimal("0.15")


def _all_dbus(report: BackfillCost) -> Decimal:
    return report.total.dbus + report.unattributed.dbus


def _all_usd(report: BackfillCost) -> Decimal:
    money = (report.total.cost, report.unattributed.cost)
    return sum((cost.get("USD", Decimal(0)) for cost in money), Decimal(0))


def test_a_local_backfill_has_no_billing(tmp_path: Path) -> None:
    from databricks_bundle_decorators.errors import UsageError
    from databricks_bundle_decorators.launch.estimate.cost import backfill_cost
    from databricks_bundle_decorators.launch.ledger.ledger import BackendSpec, LaunchOptions
    from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice

    plan = BackfillPlan("nightly", (Slice(0, ("2024-01-01",)),))
    local = Ledger.create(
        tmp_path, plan, backend=BackendSpec("local"), options=LaunchOptions(), backfill_id="n-1"
    )
    local.save()
    local.close()
    with pytest.raises(UsageError, match="ran on the local Spark"):
        backfill_cost("n-1", tmp_path, warehouse_id="w")

"""``catchup --by data`` through the launcher on real local Delta tables: the plan holds
exactly the keys whose partitions are missing or empty, batched only over consecutive
ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.launch.launcher import (
    BackfillRequest,
    Connection,
    plan_backfill,
)
from tests.runtime.test_presence import FIVE_DAYS, REGISTRY, write_days

LOCAL = Connection(local=True)


def catchup_plan(root: Path, warehouse: Path, **options: Any) -> list[tuple[str, ...]]:
    request = BackfillRequest(
        "presence_orders",
        start=FIVE_DAYS[0],
        end=FIVE_DAYS[-1],
        catchup=True,
        by="data",
        connection=LOCAL,
        **options,
    )
    prepared = plan_backfill(
        request, root=root, registry=REGISTRY, warehouse=warehouse, dry_run=True
    )
    return [s.keys for s in prepared.plan.slices]


@pytest.mark.spark
def test_catchup_by_data_plans_missing_and_empty_partitions(
    spark: Any, warehouse: Path, tmp_path: Path
) -> None:
    write_days(warehouse, FIVE_DAYS[:2])
    write_days(warehouse, [FIVE_DAYS[2]], rows=0)  # a run that succeeded with no rows
    write_days(warehouse, [FIVE_DAYS[4]])

    assert catchup_plan(tmp_path, warehouse) == [(FIVE_DAYS[2],), (FIVE_DAYS[3],)]
    # batches of 7 still span only keys without data
    assert catchup_plan(tmp_path, warehouse, batch_size=7) == [(FIVE_DAYS[2], FIVE_DAYS[3])]

    write_days(warehouse, FIVE_DAYS[2:4])
    assert catchup_plan(tmp_path, warehouse) == []

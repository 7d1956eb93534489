"""The pipeline the codegen tests generate jobs from."""

from __future__ import annotations

from typing import Any

from databricks_bundle_decorators import (
    DailyBackfill,
    HourlyBackfill,
    Registry,
    RetryPolicy,
    StaticBackfill,
    job_cluster,
    task,
)
from databricks_bundle_decorators.bundle import job_resource
from databricks_bundle_decorators.bundle.framework_wheel import default_framework_wheel
from databricks_bundle_decorators.io_managers import SparkTableIoManager

FRAMEWORK = f"./{default_framework_wheel()}"

SMALL = job_cluster(
    "small", spark_version="16.4.x-scala2.12", node_type_id="i3.xlarge", num_workers=2
)


def pipeline(registry: Registry, **job_kwargs: Any) -> None:
    @registry.job(**job_kwargs)
    def sales() -> None:
        """Daily sales per region.

        Second paragraph, not in the description.
        """

        @task(
            io_manager=SparkTableIoManager("main.sales.raw", partition_column="day"),
            retries=RetryPolicy(3, 5_000, True),
            timeout_seconds=1800,
        )
        def extract() -> None:
            """Read raw sales."""

        @task(depends_on=[extract])
        def audit() -> None: ...

        @task
        def clean(rows: Any) -> None: ...

        clean(extract())
        audit()


def sales_job(**job_kwargs: Any) -> dict[str, Any]:
    registry = Registry()
    pipeline(registry, **job_kwargs)
    return job_resource(registry.get("sales"), package_name="sales-pkg")


def tasks_of(job: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["task_key"]: t for t in job["tasks"]}


JOB_SHAPES = {
    "serverless-daily": {"params": {"source": "raw"}, "backfill": DailyBackfill("2024-01-01")},
    "classic-hourly": {
        "cluster": SMALL,
        "backfill": HourlyBackfill("2024-01-01T00", tz="Asia/Kolkata", lookback=3),
        "schedule": "0 5 * * * ?",
    },
    "static": {"backfill": StaticBackfill(["us", "eu", "jp"]), "tags": {"owner": "a@b.c"}},
    "plain-scheduled": {"schedule": "0 0 6 ? * MON#1", "max_concurrent_runs": 2},
    "variables": {"params": {"catalog": "${var.catalog}"}, "cluster": SMALL},
}

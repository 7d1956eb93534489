"""The fast typed build of generated jobs (bundle/typed.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from databricks.bundles.jobs import Job

from databricks_bundle_decorators import (
    DailyBackfill,
    Registry,
    RetryPolicy,
    for_each_task,
    job_cluster,
    task,
    task_value,
)
from databricks_bundle_decorators.bundle import job_resource
from databricks_bundle_decorators.bundle.typed import typed_job

from .codegen_jobs import JOB_SHAPES
from .codegen_jobs import sales_job as _job

SMALL = job_cluster("small", spark_version="16.4.x-scala2.12", num_workers=1)


def _rich_job() -> dict[str, Any]:
    registry = Registry()

    @registry.job(
        params={"catalog": "${var.catalog}", "limit": "5"},
        backfill=DailyBackfill("2024-01-01"),
        cluster=SMALL,
        schedule="0 0 6 * * ?",
        email_notifications={"on_failure": ["a@b.c"]},
        queue={"enabled": False},
    )
    def rich() -> None:
        @task(retries=RetryPolicy(2, 10, True), timeout_seconds=60, run_if="ALL_DONE")
        def plan() -> None: ...

        @for_each_task(
            inputs=task_value(plan, "keys"), concurrency=2, libraries=[{"pypi": {"package": "x"}}]
        )
        def each(inputs: str) -> None: ...

        plan()
        each()

    return job_resource(registry.get("rich"), pause_schedules=True)


CASES = {
    **{name: lambda shape=shape: _job(**shape) for name, shape in JOB_SHAPES.items()},
    "rich": _rich_job,
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_the_fast_build_equals_the_library_load(case: str) -> None:
    settings = CASES[case]()
    assert (
        typed_job(copy.deepcopy(settings)).as_dict()
        == Job.from_dict(copy.deepcopy(settings)).as_dict()
    )


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("max_concurrent_runs",), "many"),
        (("tasks", 0, "timeout_seconds"), "soon"),
        (("tasks", 0, "not_a_setting"), 1),
        (("schedule", "timezone"), "UTC"),
    ],
)
def test_values_of_another_shape_still_fail_strictly(path: tuple[Any, ...], value: Any) -> None:
    settings = _job(schedule="0 0 6 * * ?")
    target: Any = settings
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    with pytest.raises(ValueError):
        Job.from_dict(copy.deepcopy(settings))
    with pytest.raises(ValueError):
        typed_job(settings)

"""The fast typed build of generated jobs (bundle/typed.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from databricks.bundles.jobs import Job
from hypothesis import given, settings
from hypothesis import strategies as st

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


_CLUSTER_VALUES = st.one_of(
    st.sampled_from(["16.4.x-scala2.12", "i3.xlarge", "${var.node}", "", "SINGLE_USER"]),
    st.integers(min_value=-1, max_value=8),
    st.booleans(),
    st.none(),
    st.dictionaries(
        st.sampled_from(["spark.x", "TEAM"]),
        st.sampled_from(["1", "${var.v}", 2]),
        max_size=2,
    ),
    st.fixed_dictionaries({"min_workers": st.integers(1, 2), "max_workers": st.integers(2, 4)}),
    st.lists(st.sampled_from(["ssh-ed25519 AAA", "${var.key}"]), max_size=2),
)
_CLUSTER_FIELDS = st.sampled_from(
    [
        "spark_version",
        "node_type_id",
        "num_workers",
        "autotermination_minutes",
        "enable_elastic_disk",
        "spark_conf",
        "spark_env_vars",
        "custom_tags",
        "data_security_mode",
        "runtime_engine",
        "autoscale",
        "ssh_public_keys",
        "policy_id",
        "is_single_node",
        "not_a_cluster_field",
    ]
)


def _loaded(load: Any, settings: dict[str, Any]) -> Any:
    try:
        return load(copy.deepcopy(settings)).as_dict()
    except Exception as exc:  # both sides must refuse the same settings
        return type(exc)


@given(spec=st.dictionaries(_CLUSTER_FIELDS, _CLUSTER_VALUES, max_size=6))
@settings(max_examples=150, deadline=None)
def test_job_clusters_build_as_the_library_loads_them(spec: dict[str, Any]) -> None:
    job = {
        **_job(cluster=SMALL),
        "job_clusters": [{"job_cluster_key": "small", "new_cluster": spec}],
    }
    assert _loaded(typed_job, job) == _loaded(Job.from_dict, job)


def test_a_job_cluster_of_plain_fields_is_built_without_the_strict_loader(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = _job(cluster=SMALL)
    expected = Job.from_dict(copy.deepcopy(settings)).as_dict()

    def refused(cls: type, value: Any) -> Any:
        raise AssertionError(f"strict load of {sorted(value)}")

    monkeypatch.setattr(Job, "from_dict", classmethod(refused))
    assert typed_job(settings).as_dict() == expected

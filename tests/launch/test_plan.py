"""Backfill plans: keys, batching into ranged runs, order, parameters, rerun selection."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators.definitions import Registry
from databricks_bundle_decorators.errors import UsageError
from databricks_bundle_decorators.launch.plan.history import KeyHistory, RerunMode
from databricks_bundle_decorators.launch.plan.plan import build_plan


def test_batches_are_consecutive_keys_with_start_and_end(registry: Registry) -> None:
    plan = build_plan(registry.get("nightly"), start="2024-01-30", end="2024-02-03", batch_size=2)
    assert [s.keys for s in plan.slices] == [
        ("2024-01-30", "2024-01-31"),
        ("2024-02-01", "2024-02-02"),
        ("2024-02-03",),
    ]
    assert plan.parameters(plan.slices[0]) == {
        "backfill_key": "2024-01-31",
        "backfill_start_key": "2024-01-30",
        "backfill_exact": "false",
    }
    assert plan.parameters(plan.slices[2])["backfill_start_key"] == ""


def test_a_batch_never_spans_an_unselected_key(registry: Registry) -> None:
    keys = ["2024-01-01", "2024-01-02", "2024-01-04", "2024-01-05", "2024-01-06"]
    plan = build_plan(registry.get("nightly"), keys=keys, batch_size=3)
    assert [s.keys for s in plan.slices] == [
        ("2024-01-01", "2024-01-02"),
        ("2024-01-04", "2024-01-05", "2024-01-06"),
    ]


def test_reverse_order_exact_params_and_final_sync(registry: Registry) -> None:
    plan = build_plan(
        registry.get("nightly"),
        start="2024-03-01",
        end="2024-03-03",
        order="reverse",
        exact=True,
        final_sync=True,
        params={"source": "s3"},
    )
    assert [s.label for s in plan.slices] == [
        "2024-03-03",
        "2024-03-02",
        "2024-03-01",
        "final sync",
    ]
    assert plan.parameters(plan.slices[-1]) == {
        "source": "s3",
        "backfill_key": "",
        "backfill_start_key": "",
        "backfill_exact": "true",
    }


def test_static_plans_use_positions_in_the_declared_list(registry: Registry) -> None:
    plan = build_plan(registry.get("regions"), start="eu", end="jp", batch_size=2)
    assert [s.keys for s in plan.slices] == [("eu", "jp")]
    keys = build_plan(registry.get("regions"), keys=["au", "us"]).keys
    assert keys == ["us", "au"]  # declared order, not the order given


def test_keys_are_deduplicated_and_sorted(registry: Registry) -> None:
    plan = build_plan(registry.get("nightly"), keys=["2024-01-03", "2024-01-01", "2024-01-03"])
    assert plan.keys == ["2024-01-01", "2024-01-03"]


def test_rerun_modes_select_from_history(registry: Registry) -> None:
    history: KeyHistory = {
        "2024-01-01": "succeeded",
        "2024-01-02": "failed",
        "2024-01-03": "running",
    }
    job = registry.get("nightly")

    def pick(mode: RerunMode) -> list[str]:
        plan = build_plan(job, start="2024-01-01", end="2024-01-04", rerun=mode, history=history)
        return plan.keys

    assert pick("failed") == ["2024-01-02"]
    assert pick("missing") == ["2024-01-04"]
    assert pick("all") == ["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"keys": ["2024-01-01"], "start": "2024-01-01"}, "--keys cannot be combined"),
        (
            {"start": "2024-02-01", "end": "2024-01-01"},
            "--start/--end: start '2024-02-01' is after end",
        ),
        ({"end": "2025-01-01"}, "--end: end '2025-01-01' is after the backfill's end_date"),
        ({"keys": ["2024-13-01"]}, "--keys: key '2024-13-01'"),
        ({"batch_size": 0}, "--batch-size must be at least 1"),
        ({"rerun": "failed"}, "--rerun failed needs the job's run history"),
        ({"params": {"nope": "1"}}, "--param 'nope' is not a parameter of job 'nightly'"),
    ],
)
def test_bad_plans_are_usage_errors(
    registry: Registry, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(UsageError) as info:
        build_plan(registry.get("nightly"), **kwargs)  # type: ignore[arg-type]
    assert message in info.value.render()


def test_a_job_without_backfill_cannot_be_planned(registry: Registry) -> None:
    with pytest.raises(UsageError, match="has no backfill definition"):
        build_plan(registry.get("plain"))


@given(
    days=st.sets(st.integers(min_value=0, max_value=365), min_size=1, max_size=60),
    batch=st.integers(min_value=1, max_value=10),
    reverse=st.booleans(),
)
def test_every_selected_key_is_in_exactly_one_contiguous_batch(
    registry: Registry, days: set[int], batch: int, reverse: bool
) -> None:
    job = registry.get("nightly")
    universe = job.backfill.keys()  # type: ignore[union-attr]
    chosen = [universe[d] for d in sorted(days)]
    plan = build_plan(job, keys=chosen, batch_size=batch, order="reverse" if reverse else "forward")
    assert sorted(plan.keys) == chosen
    for s in plan.slices:
        assert 1 <= len(s.keys) <= batch
        first = universe.index(s.keys[0])
        assert list(s.keys) == universe[first : first + len(s.keys)]  # ranged run == its keys
    firsts = [s.keys[0] for s in plan.slices]
    assert firsts == sorted(firsts, reverse=reverse)
    assert [s.index for s in plan.slices] == list(range(len(plan.slices)))

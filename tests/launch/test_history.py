"""Key states from runs: the latest run decides, a running run wins, ranged runs count."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from databricks_bundle_decorators.backfill import DailyBackfill, StaticBackfill
from databricks_bundle_decorators.backfill.wire import (
    ORDER_PARAM,
    KeyRange,
    PresenceOrder,
    UndoOrder,
    encode_order,
)
from databricks_bundle_decorators.launch.plan.history import (
    RunObservation,
    key_history,
    keys_of_parameters,
    keys_without_success,
    select_keys,
    state_of,
)


def test_latest_run_decides_and_running_wins() -> None:
    history = key_history(
        [
            RunObservation(("a", "b"), "failed", 1.0),
            RunObservation(("a",), "succeeded", 2.0),
            RunObservation(("b",), "running", 0.5),
            RunObservation(("c",), "succeeded", 3.0),
            RunObservation(("c",), "failed", 4.0),
        ]
    )
    assert history == {"a": "succeeded", "b": "running", "c": "failed"}
    keys = ["a", "b", "c", "d"]
    assert select_keys(keys, history, "failed") == ["c"]
    assert select_keys(keys, history, "missing") == ["d"]
    assert keys_without_success(keys, history) == ["c", "d"]


def test_keys_of_parameters_for_single_ranged_and_scheduled_runs() -> None:
    daily = DailyBackfill(start_date="2024-01-01", end_date="2024-12-31")
    assert keys_of_parameters(daily, {"backfill_key": "2024-02-01"}) == ("2024-02-01",)
    assert keys_of_parameters(
        daily, {"backfill_key": "2024-02-03", "backfill_start_key": "2024-02-01"}
    ) == ("2024-02-01", "2024-02-02", "2024-02-03")
    started = datetime(2024, 5, 6, 3, tzinfo=timezone.utc).timestamp()
    assert keys_of_parameters(daily, {"backfill_key": ""}, started=started) == ("2024-05-06",)
    assert keys_of_parameters(daily, {"backfill_key": "2030-01-01"}) == ()  # outside: ignored
    assert keys_of_parameters(StaticBackfill(keys=["x"]), {"backfill_key": ""}, started=1.0) == ()


@pytest.mark.parametrize(
    "parameters",
    [
        pytest.param(
            {ORDER_PARAM: encode_order(UndoOrder("b1", ("11", "12"))), "backfill_key": ""},
            id="undo",
        ),
        pytest.param(
            {
                ORDER_PARAM: encode_order(PresenceOrder(KeyRange("2024-01-01", "2024-05-06"))),
                "backfill_key": "",
            },
            id="presence",
        ),
    ],
)
def test_an_undo_or_presence_run_writes_no_key(parameters: dict[str, str]) -> None:
    daily = DailyBackfill(start_date="2024-01-01", end_date="2024-12-31")
    started = datetime(2024, 5, 6, 3, tzinfo=timezone.utc).timestamp()
    assert keys_of_parameters(daily, parameters, started=started) == ()
    observed = RunObservation(
        keys_of_parameters(daily, parameters, started=started), "succeeded", started
    )
    history = key_history([observed])
    assert state_of(history, "2024-05-06") == "missing"
    assert keys_without_success(["2024-05-05", "2024-05-06"], history) == [
        "2024-05-05",
        "2024-05-06",
    ]


def test_a_blank_undo_or_presence_parameter_is_an_ordinary_scheduled_run() -> None:
    daily = DailyBackfill(start_date="2024-01-01", end_date="2024-12-31")
    started = datetime(2024, 5, 6, 3, tzinfo=timezone.utc).timestamp()
    blank = {"backfill_key": "", ORDER_PARAM: " "}
    assert keys_of_parameters(daily, blank, started=started) == ("2024-05-06",)

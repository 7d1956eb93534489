"""params and task values read the run context; outside a run they fail clearly."""

from __future__ import annotations

from typing import Any

import pytest

from databricks_bundle_decorators import get_task_value, params, set_task_value
from databricks_bundle_decorators.backfill import RunContext, run_context
from databricks_bundle_decorators.definitions import use_task_value_store


class DictStore:
    def __init__(self) -> None:
        self.values: dict[tuple[str, str], Any] = {}

    def set(self, task_key: str, key: str, value: Any) -> None:
        self.values[(task_key, key)] = value

    def get(self, task_key: str, key: str, default: Any = ...) -> Any:
        if (task_key, key) in self.values:
            return self.values[(task_key, key)]
        if default is ...:
            raise KeyError(key)
        return default


def test_params_reads_current_run() -> None:
    assert dict(params) == {}
    with run_context(RunContext(params={"url": "https://example.test"})):
        assert params["url"] == "https://example.test"
        with pytest.raises(KeyError, match="'missing' is not set; parameters: url"):
            params["missing"]


def test_task_values_round_trip_through_store() -> None:
    store = DictStore()
    with use_task_value_store(store):
        with run_context(RunContext(task_key="discover")):
            set_task_value("regions", ["us", "eu"])
        with run_context(RunContext(task_key="process")):
            assert get_task_value("discover", "regions") == ["us", "eu"]
            assert get_task_value("discover", "absent", default=None) is None
    assert store.values == {("discover", "regions"): ["us", "eu"]}


def test_task_value_must_be_json_and_small() -> None:
    with use_task_value_store(DictStore()), run_context(RunContext(task_key="t")):
        with pytest.raises(ValueError, match="not JSON-serialisable"):
            set_task_value("when", object())
        with pytest.raises(ValueError, match=r"limit is 49152 bytes"):
            set_task_value("big", "x" * 50_000)


def test_task_values_outside_run() -> None:
    with pytest.raises(RuntimeError, match="only available inside a task run"):
        set_task_value("k", 1)
    with pytest.raises(RuntimeError, match="no task value store"):
        get_task_value("t", "k")

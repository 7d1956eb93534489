"""The local task value store: JSON files per run, atomic, size-limited."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators.runtime import DbutilsTaskValueStore, LocalTaskValueStore

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=10,
)


@given(value=json_values, key=st.text(min_size=1, max_size=10))
def test_values_round_trip(
    tmp_path_factory: pytest.TempPathFactory, value: object, key: str
) -> None:
    store = LocalTaskValueStore(tmp_path_factory.mktemp("values") / "run-1")
    store.set("discover", key, value)
    assert store.get("discover", key) == value
    assert [p.name for p in store.folder.iterdir()] == ["discover.json"]  # no temp files left


def test_missing_values_and_limits(tmp_path: Path) -> None:
    store = LocalTaskValueStore(tmp_path / "run")
    store.set("a", "n", 1)
    assert store.get("a", "missing", default=None) is None
    with pytest.raises(
        KeyError, match="task 'a' set no value 'missing' in this run \\(values: n\\)"
    ):
        store.get("a", "missing")
    with pytest.raises(ValueError, match="limit is 49152 bytes"):
        store.set("a", "big", "x" * 50_000)
    with pytest.raises(ValueError, match="not JSON-serialisable"):
        store.set("a", "obj", object())
    assert store.get("a", "n") == 1  # failed sets leave earlier values intact


class FakeTaskValues:
    """Stands in for ``dbutils.jobs.taskValues`` (a plain recorder, not a mock of Spark)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, object]]] = []

    def set(self, **kwargs: object) -> None:
        self.calls.append(("set", kwargs))

    def get(self, **kwargs: object) -> object:
        self.calls.append(("get", kwargs))
        return "v"


def test_dbutils_store_uses_task_values_api() -> None:
    values = FakeTaskValues()
    dbutils = type("D", (), {"jobs": type("J", (), {"taskValues": values})()})()
    store = DbutilsTaskValueStore(dbutils)
    store.set("t", "k", [1])
    assert store.get("up", "k") == "v"
    store.get("up", "k", default=0)
    assert values.calls == [
        ("set", {"key": "k", "value": [1]}),
        ("get", {"taskKey": "up", "key": "k"}),
        ("get", {"taskKey": "up", "key": "k", "default": 0, "debugValue": 0}),
    ]
    with pytest.raises(ValueError, match="limit"):
        store.set("t", "big", "x" * 50_000)

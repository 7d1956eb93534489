"""Quarantine rules that need no Spark (tests/launch/test_relative_checks.py writes real
quarantine tables)."""

from __future__ import annotations

import pytest

from databricks_bundle_decorators.checks import Expect
from databricks_bundle_decorators.runtime.checks.checking import TaskChecks
from databricks_bundle_decorators.runtime.checks.quarantine import quarantine_name
from databricks_bundle_decorators.runtime.core.errors import TaskRunError
from databricks_bundle_decorators.runtime.storage.table_name import TableName


def test_the_quarantine_table_sits_beside_its_table() -> None:
    name = quarantine_name(TableName.parse("main.sales.orders"))
    assert str(name) == "main.sales.orders__quarantine"


def test_an_output_without_a_table_refuses_a_quarantining_check() -> None:
    checks = TaskChecks("clean", (Expect("amount >= 0", on_fail="quarantine"),))
    with pytest.raises(TaskRunError) as refused:
        checks.evaluate(object(), label="2024-01-01")
    assert str(refused.value) == (
        "task 'clean': check expect(amount >= 0) has on_fail='quarantine', which needs a "
        "SparkTableIoManager output (rows go to <table>__quarantine)"
    )

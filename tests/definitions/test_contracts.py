"""Task options meet their contracts when they are written: IoManager, Check, stored edges."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators import DefinitionError, Registry, task, task_value
from databricks_bundle_decorators.checks import MinRowCount
from databricks_bundle_decorators.definitions import contracts, for_each_task

from .stores import STORED

SOURCE_LINES = Path(__file__).read_text().splitlines()


def _where(marker: str) -> str:
    """``file:line`` of the line holding ``marker`` (the decorator of a task)."""
    line = next(n for n, text in enumerate(SOURCE_LINES, 1) if marker in text)
    return f"{__file__}:{line}"


def test_an_io_manager_that_is_not_one_fails_when_the_job_is_traced() -> None:
    registry = Registry()

    @registry.job
    def sales() -> None:
        @task(io_manager=42)  # type: ignore[arg-type]  # marker: bad-io
        def extract() -> None: ...

        extract()

    with pytest.raises(DefinitionError) as raised:
        _ = sales.graph
    assert raised.value.render() == (
        "job 'sales', task 'extract': io_manager must be an IoManager such as "
        f"SparkTableIoManager(...), got int ({_where('marker: bad-io')})"
    )


def test_a_check_that_is_not_one_fails_at_decoration() -> None:
    with pytest.raises(DefinitionError) as raised:

        @task(checks=[MinRowCount(1), object()])  # marker: bad-check
        def clean() -> None: ...

    assert raised.value.render() == (
        "task 'clean': checks must be Check objects such as MinRowCount(1), got object "
        f"({_where('marker: bad-check')})"
    )


def test_checks_must_be_a_list() -> None:
    with pytest.raises(DefinitionError, match=r"task 'clean': checks must be a list of checks"):

        @task(checks=MinRowCount(1))  # type: ignore[arg-type]
        def clean() -> None: ...


def test_an_input_from_a_task_without_io_manager_is_a_definition_error() -> None:
    registry = Registry()

    @registry.job
    def sales() -> None:
        @task
        def extract() -> None: ...

        @task  # marker: reads-unstored
        def report(rows: Any) -> None: ...

        report(extract())

    with pytest.raises(DefinitionError) as raised:
        _ = sales.graph
    assert raised.value.render() == (
        "job 'sales', task 'report': argument 'rows' reads the output of task 'extract', "
        "which has no io_manager to store it; give that task an io_manager "
        "(e.g. SparkTableIoManager(...)), or use depends_on=[extract] to run after it "
        f"without its output ({_where('marker: reads-unstored')})"
    )
    assert [str(d) for d in registry.check()] == [raised.value.render()]


def test_control_edges_and_task_values_need_no_io_manager() -> None:
    registry = Registry()

    @registry.job
    def sales() -> None:
        @task
        def discover() -> None: ...

        @task(io_manager=STORED)
        def extract() -> None: ...

        @for_each_task(inputs=task_value(discover, "regions"))
        def load(inputs: str, rows: Any) -> None: ...

        @task(depends_on=[discover])
        def notify() -> None: ...

        discover()
        load(rows=extract())
        notify()

    assert sales.graph.topological_order() == ["discover", "extract", "load", "notify"]


def test_the_runtime_implements_the_contracts_declared_with_the_definitions() -> None:
    from databricks_bundle_decorators import checks, io_managers
    from databricks_bundle_decorators.runtime import io
    from databricks_bundle_decorators.runtime.checks import shipped as runtime_checks

    assert io.IoManager is io_managers.IoManager is contracts.IoManager
    assert runtime_checks.Check is checks.Check is contracts.Check
    assert issubclass(io.SparkTableIoManager, contracts.IoManager)
    for check in (checks.MinRowCount, checks.Unique, checks.Expect, checks.FrameCheck):
        assert issubclass(check, contracts.Check)

"""The emulated Statement Execution API through the SDK's ``statement_execution``:
answer shapes, chunks, named typed parameters, asynchronous mode and refusals."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

import pytest
from databricks.sdk import WorkspaceClient
from databricks.sdk.errors import InvalidParameterValue, NotFound, Unauthenticated
from databricks.sdk.service.sql import (
    Disposition,
    Format,
    StatementParameterListItem,
    StatementState,
)

from databricks_bundle_decorators.testing import JobsEmulator

UTC = timezone.utc
WAREHOUSE = "abc123"
SELECT = (
    "SELECT record_id, usage_quantity, usage_start_time, usage_metadata.job_run_id AS run "
    "FROM system.billing.usage WHERE usage_start_time >= :since AND sku_name = :sku "
    "ORDER BY record_id"
)


def _usage(record_id: str, quantity: str, day: int, run: str | None) -> dict[str, Any]:
    return {
        "record_id": record_id,
        "sku_name": "JOBS",
        "usage_quantity": Decimal(quantity),
        "usage_start_time": datetime(2024, 1, day, 10, tzinfo=UTC),
        "usage_metadata": {"job_run_id": run},
    }


@pytest.fixture(scope="module")
def emu(spark: Any) -> Iterator[JobsEmulator]:
    with JobsEmulator(token="dapi-good") as emulator:
        emulator.statements.add_warehouse(WAREHOUSE)
        usage = [
            _usage("a", "1.5", 1, "7"),
            _usage("b", "-0.25", 2, None),
            _usage("c", "2", 3, "8"),
        ]
        emulator.statements.load_billing(spark, usage, [])
        yield emulator


@pytest.fixture
def w(emu: JobsEmulator) -> WorkspaceClient:
    return emu.workspace_client()


def _params(since: str) -> list[StatementParameterListItem]:
    return [
        StatementParameterListItem(name="since", value=since, type="TIMESTAMP"),
        StatementParameterListItem(name="sku", value="JOBS"),  # no type: STRING
    ]


def test_a_result_has_the_documented_shape_in_chunks(w: WorkspaceClient) -> None:
    answer = w.statement_execution.execute_statement(
        SELECT, WAREHOUSE, parameters=_params("2024-01-01T00:00:00Z"), wait_timeout="50s"
    )
    assert answer.status is not None and answer.status.state == StatementState.SUCCEEDED
    manifest = answer.manifest
    assert manifest is not None and manifest.schema is not None
    assert manifest.format == Format.JSON_ARRAY
    columns = [
        (c.name, c.type_name.value if c.type_name else None, c.type_text, c.position)
        for c in manifest.schema.columns or []
    ]
    assert columns == [
        ("record_id", "STRING", "STRING", 0),
        ("usage_quantity", "DECIMAL", "DECIMAL(38,18)", 1),
        ("usage_start_time", "TIMESTAMP", "TIMESTAMP", 2),
        ("run", "STRING", "STRING", 3),
    ]
    assert (manifest.total_row_count, manifest.total_chunk_count) == (3, 2)
    first = answer.result
    assert first is not None and first.next_chunk_index == 1
    second = w.statement_execution.get_statement_result_chunk_n(str(answer.statement_id), 1)
    assert second.next_chunk_index is None
    # every value a string (or null), as the JSON_ARRAY format says
    assert [*(first.data_array or []), *(second.data_array or [])] == [
        ["a", "1.500000000000000000", "2024-01-01T10:00:00.000Z", "7"],
        ["b", "-0.250000000000000000", "2024-01-02T10:00:00.000Z", None],
        ["c", "2.000000000000000000", "2024-01-03T10:00:00.000Z", "8"],
    ]


def test_asynchronous_mode_answers_pending_and_a_failure_is_a_200_with_failed(
    emu: JobsEmulator, w: WorkspaceClient
) -> None:
    answer = w.statement_execution.execute_statement(
        "SELECT no_such_column FROM system.billing.usage", WAREHOUSE, wait_timeout="0s"
    )
    assert answer.status is not None and answer.status.state == StatementState.PENDING
    statement_id = str(answer.statement_id)
    assert emu.statements.wait_until_done(statement_id) == "FAILED"
    polled = w.statement_execution.get_statement(statement_id)
    assert polled.status is not None and polled.status.state == StatementState.FAILED
    assert polled.status.error is not None and "no_such_column" in (
        polled.status.error.message or ""
    )
    assert polled.result is None


def test_a_value_its_type_cannot_read_fails_the_statement(w: WorkspaceClient) -> None:
    answer = w.statement_execution.execute_statement(
        SELECT, WAREHOUSE, parameters=_params("yesterday"), wait_timeout="50s"
    )
    assert answer.status is not None and answer.status.state == StatementState.FAILED
    assert "is not a TIMESTAMP" in str(answer.status.error)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        pytest.param({"warehouse_id": "nope"}, NotFound, id="unknown-warehouse"),
        pytest.param({"wait_timeout": "3s"}, InvalidParameterValue, id="wait-timeout"),
        pytest.param(
            {"disposition": Disposition.INLINE, "format": Format.CSV},
            InvalidParameterValue,
            id="csv-inline",
        ),
    ],
)
def test_refused_requests_are_http_errors(
    w: WorkspaceClient, kwargs: dict[str, Any], error: type[Exception]
) -> None:
    args: dict[str, Any] = {"warehouse_id": WAREHOUSE, **kwargs}
    with pytest.raises(error):
        w.statement_execution.execute_statement("SELECT 1", **args)


def test_a_wrong_token_is_unauthenticated(emu: JobsEmulator) -> None:
    from databricks.sdk.config import Config

    client = WorkspaceClient(config=Config(host=emu.url, token="dapi-bad", auth_type="pat"))
    with pytest.raises(Unauthenticated):
        client.statement_execution.execute_statement("SELECT 1", WAREHOUSE)

"""Reading a job's billing records through a SQL warehouse: one statement over
``system.billing.usage`` for the given runs and, for the job and time span, the records
that name no run, each with the effective list prices in force when it ended; every
value a named parameter.

Sources: Statement Execution API (https://docs.databricks.com/api/workspace/statementexecution,
databricks-sdk ``StatementExecutionAPI``: ``wait_timeout`` 5-50 s, polled with
``get_statement``, a failed statement is a 200 with state ``FAILED``, results in chunks);
https://docs.databricks.com/aws/en/admin/system-tables/billing;
https://docs.databricks.com/aws/en/admin/system-tables/pricing (``effective_list``; a
price is in force from ``price_start_time`` until ``price_end_time``, null while current:
the join of the sample cost queries).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from decimal import Decimal
from typing import TYPE_CHECKING

from ...errors import DbxdecError, UsageError
from .workspace import statement_rows, workspace_errors

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

_UTC = timezone.utc

BILLING_STATEMENT = """\
SELECT u.record_id, u.usage_metadata.job_run_id AS job_run_id,
       u.usage_metadata.job_id AS job_id, u.sku_name, u.usage_unit, u.record_type,
       u.usage_start_time, u.usage_quantity,
       p.pricing.effective_list.default AS list_price, p.currency_code
FROM system.billing.usage AS u
LEFT JOIN system.billing.list_prices AS p
  ON p.sku_name = u.sku_name AND p.cloud = u.cloud AND p.usage_unit = u.usage_unit
  AND u.usage_end_time >= p.price_start_time
  AND (p.price_end_time IS NULL OR u.usage_end_time < p.price_end_time)
WHERE array_contains(split(:run_ids, ','), u.usage_metadata.job_run_id)
   OR (u.usage_metadata.job_id = :job_id AND u.usage_metadata.job_run_id IS NULL
       AND u.usage_start_time >= :since AND u.usage_start_time < :until)"""

_COLUMNS = (
    "record_id",
    "job_run_id",
    "job_id",
    "sku_name",
    "usage_unit",
    "record_type",
    "usage_start_time",
    "usage_quantity",
    "list_price",
    "currency_code",
)


class BillingUnreadable(DbxdecError):
    """The statement failed on the warehouse (exit 1, with the warehouse's message)."""


@dataclass(frozen=True, slots=True)
class BillingRecord:
    """One ``system.billing.usage`` record (``run_id``: ``usage_metadata.job_run_id``;
    ``record_type``: ``ORIGINAL``, ``RETRACTION`` or ``RESTATEMENT``) with its list prices
    per unit, by currency (empty when none was in force)."""

    record_id: str
    run_id: str | None
    sku_name: str
    usage_unit: str
    record_type: str
    usage_start: datetime
    quantity: Decimal
    prices: tuple[tuple[str, Decimal], ...] = ()


def read_billing(
    client: WorkspaceClient,
    warehouse_id: str,
    *,
    run_ids: Iterable[str],
    job_id: int | None,
    since: datetime,
    until: datetime,
    poll_interval: float = 1.0,
) -> list[BillingRecord]:
    """The billing records of ``run_ids``, and those of job ``job_id`` without a run id
    that started in ``[since, until)``; one record per ``record_id``.

    Raises:
        UsageError: the warehouse refused the statement (unknown warehouse, bad request).
        BillingUnreadable: the statement failed on the warehouse.
        WorkspaceRejected, WorkspaceUnreachable: refused, or no answer.
    """
    from databricks.sdk.errors.base import DatabricksError
    from databricks.sdk.service.sql import StatementParameterListItem as Param

    parameters = [
        Param(name="run_ids", value=",".join(sorted(set(run_ids)))),
        Param(name="job_id", value=str(job_id) if job_id is not None else None),
        Param(name="since", value=since.astimezone(_UTC).isoformat(), type="TIMESTAMP"),
        Param(name="until", value=until.astimezone(_UTC).isoformat(), type="TIMESTAMP"),
    ]
    with workspace_errors(client.config.host):
        try:
            names, rows = statement_rows(
                client,
                warehouse_id,
                BILLING_STATEMENT,
                parameters,
                poll_interval=poll_interval,
                purpose="reading system.billing",
                failed=BillingUnreadable,
            )
        except DatabricksError as exc:
            if getattr(exc, "error_code", "") in ("PERMISSION_DENIED", "UNAUTHENTICATED"):
                raise
            raise UsageError(
                f"SQL warehouse {warehouse_id!r} refused the billing query: {exc} "
                "(pass --warehouse-id, or set DATABRICKS_WAREHOUSE_ID)"
            ) from None
    if names and names != list(_COLUMNS):
        raise BillingUnreadable(f"the billing query answered columns {names}, not {_COLUMNS}")
    return _records(dict(zip(_COLUMNS, values, strict=True)) for values in rows)


def _records(rows: Iterable[dict[str, str | None]]) -> list[BillingRecord]:
    """One record per ``record_id``: the join repeats a record once per currency."""
    found: dict[str, BillingRecord] = {}
    for row in rows:
        record_id = row["record_id"] or ""
        price = row["list_price"], row["currency_code"]
        record = found.get(record_id) or BillingRecord(
            record_id,
            row["job_run_id"],
            row["sku_name"] or "",
            row["usage_unit"] or "",
            row["record_type"] or "ORIGINAL",
            datetime.fromisoformat(row["usage_start_time"] or ""),
            Decimal(row["usage_quantity"] or "0"),
        )
        if price[0] is not None and price[1] is not None:
            record = replace(record, prices=(*record.prices, (price[1], Decimal(price[0]))))
        found[record_id] = record
    return list(found.values())

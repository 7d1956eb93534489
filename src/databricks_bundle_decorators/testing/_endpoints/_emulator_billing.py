"""The billing system tables the emulated Statement Execution API reads, and the
conversions between its JSON and local Spark (see :mod:`._emulator_statements`).

Column names and types follow the system tables reference:

* ``system.billing.usage``: https://docs.databricks.com/aws/en/admin/system-tables/billing
  (``usage_quantity`` is a decimal; ``usage_metadata.job_id`` and ``job_run_id`` are
  strings, set only for jobs compute and serverless jobs; ``record_type`` is ``ORIGINAL``,
  ``RETRACTION`` or ``RESTATEMENT``). The reference says decimal without a precision:
  ``decimal(38,18)`` here.
* ``system.billing.list_prices``:
  https://docs.databricks.com/aws/en/admin/system-tables/pricing (``price_start_time``,
  ``price_end_time`` -- null while the price is in force -- ``currency_code`` and the
  ``pricing`` struct: ``default`` the list price per unit, ``effective_list.default`` the
  effective one, promotions applied).

Only the columns below exist here (a subset of the reference's): a statement naming
another one fails, as a misspelt column would.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

_UTC = timezone.utc

__all__ = ["BillingTables", "StatementFailed", "bind_parameters", "column_info", "render_row"]

_USAGE_METADATA = (
    "cluster_id string, job_id string, warehouse_id string, instance_pool_id string, "
    "node_type string, job_run_id string, notebook_id string, dlt_pipeline_id string, "
    "endpoint_name string, endpoint_id string, dlt_update_id string, "
    "dlt_maintenance_id string, run_name string, job_name string, notebook_path string"
)
USAGE_SCHEMA = (
    "record_id string, account_id string, workspace_id string, sku_name string, "
    "cloud string, usage_start_time timestamp, usage_end_time timestamp, usage_date date, "
    "custom_tags map<string,string>, usage_unit string, usage_quantity decimal(38,18), "
    f"usage_metadata struct<{_USAGE_METADATA}>, "
    "identity_metadata struct<run_as string, owned_by string, created_by string>, "
    "record_type string, ingestion_date date, billing_origin_product string, "
    "product_features struct<jobs_tier string, is_serverless boolean, is_photon boolean, "
    "performance_target string>, usage_type string"
)
LIST_PRICES_SCHEMA = (
    "price_start_time timestamp, price_end_time timestamp, account_id string, "
    "sku_name string, cloud string, currency_code string, usage_unit string, "
    "pricing struct<default decimal(38,18), promotional struct<default decimal(38,18)>, "
    "effective_list struct<default decimal(38,18)>>"
)
_DECIMAL_MARK = "~dbxdec-decimal~"
_TABLE = re.compile(r"`?system`?\s*\.\s*`?billing`?\s*\.\s*`?(usage|list_prices)`?(?!\w)", re.I)
_DECIMAL_TYPE = re.compile(r"DECIMAL\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)")
_TYPE_NAMES = {
    "StringType": "STRING",
    "LongType": "LONG",
    "IntegerType": "INT",
    "ShortType": "SHORT",
    "ByteType": "BYTE",
    "DoubleType": "DOUBLE",
    "FloatType": "FLOAT",
    "BooleanType": "BOOLEAN",
    "DateType": "DATE",
    "TimestampType": "TIMESTAMP",
    "TimestampNTZType": "TIMESTAMP",
    "DecimalType": "DECIMAL",
    "StructType": "STRUCT",
    "MapType": "MAP",
    "ArrayType": "ARRAY",
    "BinaryType": "BINARY",
    "NullType": "NULL",
}


class StatementFailed(Exception):
    """The statement failed (a 200 answer with state FAILED), with an error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class BillingTables:
    """The fixture's two tables as temporary views on ``spark``."""

    spark: Any
    views: Mapping[str, str]  # "usage" / "list_prices" -> temporary view name

    @classmethod
    def create(
        cls,
        spark: Any,
        usage: Sequence[Mapping[str, Any]],
        list_prices: Sequence[Mapping[str, Any]],
        *,
        suffix: str,
    ) -> BillingTables:
        """Register ``usage`` and ``list_prices`` (dicts of documented columns; a missing
        column is null) as views named apart from any other emulator's."""
        views: dict[str, str] = {}
        folder = Path(tempfile.mkdtemp(prefix="dbxdec-billing-"))
        for name, schema, rows in (
            ("usage", USAGE_SCHEMA, usage),
            ("list_prices", LIST_PRICES_SCHEMA, list_prices),
        ):
            # JSON lines read with the schema: the rows never pass through a Python worker
            # (Spark starts none), and the cached views answer every statement from memory
            path = folder / f"{name}.json"
            path.write_text("".join(_json_line(row) + "\n" for row in rows), encoding="utf-8")
            view = f"dbxdec_emulated_billing_{name}_{suffix}"
            frame = spark.read.schema(schema).json(str(path), mode="FAILFAST").cache()
            frame.count()
            frame.createOrReplaceTempView(view)
            views[name] = view
        tables = cls(spark, views)
        weakref.finalize(tables, shutil.rmtree, folder, True)  # the files, once unused
        return tables

    def resolve(self, statement: str) -> str:
        """``statement`` reading the fixture's views where it names ``system.billing.*``.

        Open-source Spark has no ``system`` catalog of tables (Spark 4 keeps that name for
        built-in functions and session variables), so the names are replaced here.
        """
        return _TABLE.sub(lambda m: self.views[m.group(1).lower()], statement)


def _json_line(row: Mapping[str, Any]) -> str:
    """``row`` as one JSON line; decimals as JSON numbers, written digit for digit."""

    def plain(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {str(k): plain(v) for k, v in value.items()}
        if isinstance(value, Decimal):
            return f"{_DECIMAL_MARK}{format(value, 'f')}{_DECIMAL_MARK}"
        if isinstance(value, (datetime, date)):
            return value.isoformat()
        return value

    text = json.dumps(plain(row), separators=(",", ":"))
    return re.sub(f'"{_DECIMAL_MARK}(-?[0-9.]+){_DECIMAL_MARK}"', r"\1", text)


def bind_parameters(parameters: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``parameters`` of a request as Spark ``args``: each ``value`` (a string, or
    absent for NULL) read as its ``type`` (default STRING), as ``cast`` would read it
    (SDK docstring of ``execute_statement``)."""
    args: dict[str, Any] = {}
    for item in parameters:
        name, value = item.get("name"), item.get("value")
        if not isinstance(name, str) or not name:
            raise StatementFailed("INVALID_PARAMETER_VALUE", "a parameter has no name")
        kind = str(item.get("type") or "STRING").strip().upper()
        try:
            args[name] = None if value is None else _cast(str(value), kind)
        except (ValueError, InvalidOperation):
            raise StatementFailed(
                "INVALID_PARAMETER_VALUE", f"parameter {name}: {value!r} is not a {kind}"
            ) from None
    return args


def _cast(value: str, kind: str) -> Any:
    if kind == "STRING":
        return value
    if kind in ("INT", "INTEGER", "BIGINT", "LONG", "SMALLINT", "TINYINT"):
        return int(value.strip())
    if kind.startswith("DECIMAL"):
        return Decimal(value.strip())
    if kind in ("DOUBLE", "FLOAT"):
        return float(value)
    if kind == "BOOLEAN":
        if value.strip().lower() not in ("true", "false"):
            raise ValueError(value)
        return value.strip().lower() == "true"
    if kind == "DATE":
        return date.fromisoformat(value.strip())
    if kind == "TIMESTAMP":
        moment = datetime.fromisoformat(value.strip().replace(" ", "T"))
        return moment if moment.tzinfo else moment.replace(tzinfo=_UTC)
    raise ValueError(f"type {kind} is not emulated")


def column_info(position: int, field: Any) -> dict[str, Any]:
    """The ``manifest.schema.columns`` entry of a Spark field."""
    kind = type(field.dataType).__name__
    info: dict[str, Any] = {
        "name": field.name,
        "position": position,
        "type_name": _TYPE_NAMES.get(kind, "USER_DEFINED_TYPE"),
        "type_text": field.dataType.simpleString().upper(),
    }
    found = _DECIMAL_TYPE.fullmatch(info["type_text"])
    if found:
        info["type_precision"], info["type_scale"] = int(found[1]), int(found[2])
    return info


def render_row(row: Any, schema: Any) -> list[str | None]:
    """A result row as ``JSON_ARRAY`` data: every value its string form, or null."""
    return [_text(row[i]) for i in range(len(schema.fields))]


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (dict, list)) or hasattr(value, "asDict"):
        return json.dumps(_plain(value), separators=(",", ":"))
    plain = _plain(value)
    return plain if isinstance(plain, str) else json.dumps(plain)


def _plain(value: Any) -> Any:
    if hasattr(value, "asDict"):
        return {k: _plain(v) for k, v in value.asDict().items()}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, bool):
        return value
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, datetime):
        # PySpark hands back timestamps as naive local times: .timestamp() reads them so
        instant = value if value.tzinfo else datetime.fromtimestamp(value.timestamp(), _UTC)
        return instant.astimezone(_UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    if isinstance(value, date):
        return value.isoformat()
    return str(value) if isinstance(value, (int, float)) else value

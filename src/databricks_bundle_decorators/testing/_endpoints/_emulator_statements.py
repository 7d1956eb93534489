"""The emulated Statement Execution API (``/api/2.0/sql/statements``) over local Spark.

Shapes follow the API reference and databricks-sdk's ``StatementExecutionAPI``
(https://docs.databricks.com/api/workspace/statementexecution):

* ``POST`` (``execute_statement``): ``statement`` and ``warehouse_id`` are required; a
  warehouse not made by :meth:`StatementsModel.add_warehouse` is 404
  ``RESOURCE_DOES_NOT_EXIST`` (the reference does not say which code). ``disposition``
  ``INLINE`` with ``format`` ``JSON_ARRAY`` only; the SDK docstring says ``ARROW_STREAM``
  and ``CSV`` need ``EXTERNAL_LINKS``, which is not emulated: both answer 400.
  ``wait_timeout`` is ``0s`` (answers ``PENDING`` at once) or ``5s``..``50s`` (default
  ``10s``), then ``on_wait_timeout`` ``CONTINUE`` answers the current state and ``CANCEL``
  cancels. ``parameters`` are named ``:name`` markers (no ``type``: STRING, no ``value``:
  NULL). ``row_limit`` trims the result and sets ``manifest.truncated``.
* ``GET .../{id}``, ``GET .../{id}/result/chunks/{n}``, ``POST .../{id}/cancel``.
* A failed execution is a 200 answer with ``status.state`` ``FAILED`` and ``status.error``.
* ``result.data_array`` holds rows of *strings* (or ``null``), as the docstring's
  ``JSON_ARRAY`` example shows.
* "The result can be split into multiple chunks" without saying when, so every result is
  split into chunks of :attr:`StatementsModel.rows_per_chunk` rows (default 2): a client
  that reads only the first chunk loses rows here first.

Tables: :meth:`StatementsModel.load_billing` registers a fixture of ``system.billing.usage``
(https://docs.databricks.com/aws/en/admin/system-tables/billing; ``usage_quantity`` a
decimal, here ``decimal(38,18)``, ``usage_metadata.job_id``/``job_run_id`` strings) and
``system.billing.list_prices``
(https://docs.databricks.com/aws/en/admin/system-tables/pricing; ``price_end_time`` null
while the price is in force); only the columns below exist. :meth:`StatementsModel.map_tables`
makes a quoted three-part name stand for the local Delta folder ``FOLDER/c/s/t``.

Not modelled: ``EXTERNAL_LINKS``, ``byte_limit``, ``catalog``/``schema`` defaults,
statement expiry.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import shutil
import tempfile
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from .._store._emulator_records import ApiError, JsonDict, invalid

STATEMENTS_PREFIX = "/api/2.0/sql/statements"
_WAIT = re.compile(r"(\d+)s")
_CHUNK = re.compile(r"/([^/]+)/result/chunks/(\d+)")
_TERMINAL = frozenset({"SUCCEEDED", "FAILED", "CANCELED", "CLOSED"})
_THREE_PART = re.compile(r"`((?:[^`]|``)+)`\.`((?:[^`]|``)+)`\.`((?:[^`]|``)+)`")


def _table_folder(match: re.Match[str], folder: Path) -> Path:
    """The local folder of a quoted three-part name (see ``map_tables``)."""
    return folder.joinpath(*(match.group(i).replace("``", "`") for i in (1, 2, 3)))


def _local_table(match: re.Match[str], folder: Path) -> str:
    """The Delta table that stands for a quoted three-part name."""
    path = str(_table_folder(match, folder)).replace("`", "``")
    return f"delta.`{path}`"


def _refuse_missing(statement: str, folder: Path) -> None:
    """A mapped table with no Delta table in its folder does not exist: a statement that
    names it fails as Unity Catalog's does, with the error class
    ``TABLE_OR_VIEW_NOT_FOUND`` first in its message ("The table or view ... cannot be
    found", https://docs.databricks.com/aws/en/error-messages/table-or-view-not-found-error-class),
    where local Delta would say the path is not a Delta table. ``CREATE`` statements
    are left to Spark: they make the table."""
    if statement.lstrip().upper().startswith("CREATE"):
        return
    for match in _THREE_PART.finditer(statement):
        if not (_table_folder(match, folder) / "_delta_log").is_dir():
            raise StatementFailed(
                "TABLE_OR_VIEW_NOT_FOUND",
                f"[TABLE_OR_VIEW_NOT_FOUND] The table or view {match.group(0)} cannot be "
                "found. Verify the spelling and correctness of the schema and catalog.",
            )


@dataclass
class _Statement:
    """One statement: its request, state and (once SUCCEEDED) rendered rows."""

    statement_id: str
    request: JsonDict
    state: str = "PENDING"
    error: JsonDict | None = None
    columns: list[JsonDict] = field(default_factory=list)
    rows: list[list[str | None]] = field(default_factory=list)
    truncated: bool = False
    done: threading.Event = field(default_factory=threading.Event)


class StatementsModel:
    """Warehouses, the billing fixture and the statements run on them (thread-safe)."""

    def __init__(self) -> None:
        self.rows_per_chunk = 2
        self.requests: list[JsonDict] = []  # every execute body, as received
        self._warehouses: set[str] = set()
        self._billing: BillingTables | None = None
        self._tables: tuple[Any, Path] | None = None  # (spark, folder): see map_tables
        self._statements: dict[str, _Statement] = {}
        self._lock = threading.Lock()
        self._rng = random.Random(31)
        self._serial = itertools.count(1)

    def add_warehouse(self, warehouse_id: str) -> None:
        """A SQL warehouse that statements may name."""
        with self._lock:
            self._warehouses.add(warehouse_id)

    def load_billing(
        self,
        spark: Any,
        usage: list[Mapping[str, Any]],
        list_prices: list[Mapping[str, Any]],
    ) -> None:
        """Make ``usage`` and ``list_prices`` (rows as dicts of the documented columns)
        the ``system.billing`` tables that statements read, on ``spark``."""
        tables = BillingTables.create(spark, usage, list_prices, suffix=str(next(self._serial)))
        with self._lock:
            self._billing = tables

    def map_tables(self, spark: Any, folder: Path) -> None:
        """Statements on ``spark`` read and write ```c`.`s`.`t``` as the Delta folder
        ``folder/c/s/t`` (where ``dbxdec run --local`` keeps table ``c.s.t``)."""
        with self._lock:
            self._tables = (spark, folder)

    def wait_until_done(self, statement_id: str, timeout: float = 60.0) -> str:
        """Block until statement ``statement_id`` has ended (tests sync on this, not on
        sleeps); returns its state. Raises ``TimeoutError``, or ``KeyError`` if unknown."""
        with self._lock:
            statement = self._statements[statement_id]
        if not statement.done.wait(timeout):
            raise TimeoutError(f"statement {statement_id} still {statement.state}")
        return statement.state

    def handle(self, method: str, path: str, body: object) -> JsonDict:
        """Answer one request under :data:`STATEMENTS_PREFIX` (raises :class:`ApiError`)."""
        rest = path[len(STATEMENTS_PREFIX) :]
        if method == "POST" and rest in ("", "/"):
            if not isinstance(body, dict):
                raise ApiError(400, "MALFORMED_REQUEST", "Invalid JSON given in the body")
            return self._execute(body)
        chunk = _CHUNK.fullmatch(rest)
        if method == "GET" and chunk is not None:
            found = self._get(chunk.group(1))
            if found.state != "SUCCEEDED":
                raise invalid(f"Statement {found.statement_id} has no result: {found.state}")
            return self._chunk(found, int(chunk.group(2)))
        parts = rest.strip("/").split("/")
        if method == "GET" and len(parts) == 1 and parts[0]:
            return self._response(self._get(parts[0]))
        if method == "POST" and len(parts) == 2 and parts[1] == "cancel":
            statement = self._get(parts[0])
            with self._lock:
                if statement.state not in _TERMINAL:
                    statement.state = "CANCELED"
            return {}
        raise ApiError(404, "ENDPOINT_NOT_FOUND", f"No API found for '{method} {rest}'")

    def _get(self, statement_id: str) -> _Statement:
        with self._lock:
            found = self._statements.get(statement_id)
        if found is None:
            raise ApiError(
                404, "RESOURCE_DOES_NOT_EXIST", f"Statement {statement_id} does not exist."
            )
        return found

    def _execute(self, body: JsonDict) -> JsonDict:
        self.requests.append(dict(body))
        statement_text, warehouse = body.get("statement"), body.get("warehouse_id")
        if not isinstance(statement_text, str) or not statement_text.strip():
            raise invalid("Missing required field: statement")
        if not isinstance(warehouse, str) or not warehouse:
            raise invalid("Missing required field: warehouse_id")
        wait = _wait_seconds(body.get("wait_timeout", "10s"))
        _check_result_shape(body)
        with self._lock:
            if warehouse not in self._warehouses:
                raise ApiError(
                    404, "RESOURCE_DOES_NOT_EXIST", f"Warehouse {warehouse} does not exist."
                )
            statement_id = "01ef" + "".join(self._rng.choice("0123456789abcdef") for _ in range(28))
            statement = _Statement(statement_id, dict(body))
            self._statements[statement_id] = statement
            billing = self._billing
            tables = self._tables
        threading.Thread(
            target=self._run, args=(statement, billing, tables), name="statement", daemon=True
        ).start()
        if wait == 0:
            return {"statement_id": statement_id, "status": {"state": "PENDING"}}
        if not statement.done.wait(wait) and body.get("on_wait_timeout") == "CANCEL":
            with self._lock:
                statement.state = "CANCELED"
        return self._response(statement)

    def _run(
        self,
        statement: _Statement,
        billing: BillingTables | None,
        tables: tuple[Any, Path] | None = None,
    ) -> None:
        with self._lock:
            if statement.state == "CANCELED":
                statement.done.set()
                return
            statement.state = "RUNNING"
        request = statement.request
        try:
            text, spark = str(request["statement"]), None
            if tables is not None:
                spark = tables[0]
                _refuse_missing(text, tables[1])
                text = _THREE_PART.sub(lambda m: _local_table(m, tables[1]), text)
            if billing is not None:
                text, spark = billing.resolve(text), billing.spark
            if spark is None:
                raise StatementFailed(
                    "TABLE_OR_VIEW_NOT_FOUND", "no system.billing tables are loaded"
                )
            args = bind_parameters(request.get("parameters") or [])
            frame = spark.sql(text, args=args)
            limit = int(request.get("row_limit") or 0)
            rows = frame.limit(limit + 1).collect() if limit else frame.collect()
            truncated = bool(limit) and len(rows) > limit
            rendered = [render_row(row, frame.schema) for row in rows[: limit or len(rows)]]
            columns = [column_info(i, f) for i, f in enumerate(frame.schema.fields)]
        except StatementFailed as failed:
            self._end(
                statement, "FAILED", error={"error_code": failed.code, "message": str(failed)}
            )
        except Exception as exc:  # Spark's own refusal: the statement FAILED, not the call
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            self._end(statement, "FAILED", error={"error_code": "BAD_REQUEST", "message": message})
        else:
            self._end(statement, "SUCCEEDED", rows=rendered, columns=columns, truncated=truncated)

    def _end(self, statement: _Statement, state: str, **fields: Any) -> None:
        with self._lock:
            if statement.state != "CANCELED":
                statement.state = state
                for name, value in fields.items():
                    setattr(statement, name, value)
        statement.done.set()

    def _response(self, statement: _Statement) -> JsonDict:
        with self._lock:
            state = statement.state
        answer: JsonDict = {"statement_id": statement.statement_id, "status": {"state": state}}
        if state == "FAILED" and statement.error is not None:
            answer["status"]["error"] = dict(statement.error)
        if state != "SUCCEEDED":
            return answer
        chunks = self._chunk_bounds(statement)
        answer["manifest"] = {
            "format": "JSON_ARRAY",
            "schema": {"column_count": len(statement.columns), "columns": statement.columns},
            "total_row_count": len(statement.rows),
            "total_chunk_count": len(chunks),
            "chunks": [
                {"chunk_index": i, "row_offset": start, "row_count": end - start}
                for i, (start, end) in enumerate(chunks)
            ],
            "truncated": statement.truncated,
        }
        answer["result"] = self._chunk(statement, 0)
        return answer

    def _chunk_bounds(self, statement: _Statement) -> list[tuple[int, int]]:
        size, total = max(1, self.rows_per_chunk), len(statement.rows)
        return [(start, min(start + size, total)) for start in range(0, total, size)] or [(0, 0)]

    def _chunk(self, statement: _Statement, index: int) -> JsonDict:
        chunks = self._chunk_bounds(statement)
        if not 0 <= index < len(chunks):
            raise invalid(f"Invalid chunk index {index}: the result has {len(chunks)} chunk(s)")
        start, end = chunks[index]
        data: JsonDict = {"chunk_index": index, "row_offset": start, "row_count": end - start}
        if end > start:
            data["data_array"] = statement.rows[start:end]
        if index + 1 < len(chunks):
            data["next_chunk_index"] = index + 1
            data["next_chunk_internal_link"] = (
                f"{STATEMENTS_PREFIX}/{statement.statement_id}/result/chunks/{index + 1}"
            )
        return data


def _wait_seconds(value: object) -> int:
    """``wait_timeout``: ``0s`` or ``5s``..``50s`` (the SDK docstring), else 400."""
    match = _WAIT.fullmatch(value) if isinstance(value, str) else None
    seconds = int(match.group(1)) if match else -1
    if seconds != 0 and not 5 <= seconds <= 50:
        raise invalid(f"wait_timeout must be 0s or between 5s and 50s, got {value!r}")
    return seconds


def _check_result_shape(body: Mapping[str, Any]) -> None:
    disposition = body.get("disposition", "INLINE")
    result_format = body.get("format", "JSON_ARRAY")
    if disposition not in ("INLINE", "EXTERNAL_LINKS"):
        raise invalid(f"Invalid disposition: {disposition!r}")
    if result_format not in ("JSON_ARRAY", "ARROW_STREAM", "CSV"):
        raise invalid(f"Invalid format: {result_format!r}")
    if disposition == "INLINE" and result_format != "JSON_ARRAY":
        # SDK docstring: ARROW_STREAM and CSV are supported only with EXTERNAL_LINKS
        raise invalid(f"format {result_format} is supported only with EXTERNAL_LINKS")
    if disposition == "EXTERNAL_LINKS":
        raise invalid("disposition EXTERNAL_LINKS is not emulated (use INLINE)")


# -- the billing fixture and Spark <-> JSON ---------------------------------------------

_UTC = timezone.utc

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
_SQL_TYPES = "STRING LONG SHORT BYTE DOUBLE FLOAT BOOLEAN DATE TIMESTAMP DECIMAL STRUCT MAP"
_TYPE_NAMES = {"IntegerType": "INT", "TimestampNTZType": "TIMESTAMP"} | {
    f"{name.title()}Type": name for name in (*_SQL_TYPES.split(), "ARRAY", "BINARY", "NULL")
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
        """``statement`` reading the fixture's views where it names ``system.billing.*``
        (open-source Spark has no ``system`` catalog of tables)."""
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

"""The emulated Statement Execution API (``/api/2.0/sql/statements``) over local Spark.

A statement runs on the test session's local Spark, over a fixture of the billing system
tables that :meth:`StatementsModel.load_billing` registers (``system.billing.usage`` and
``system.billing.list_prices``, with the column types of the system tables reference; see
:mod:`._emulator_billing`). Requests and answers have the shapes of the API reference and
of databricks-sdk's ``StatementExecutionAPI``
(https://docs.databricks.com/api/workspace/statementexecution):

* ``POST /api/2.0/sql/statements`` (``execute_statement``): ``statement`` and
  ``warehouse_id`` are required; the warehouse must be one :meth:`add_warehouse` made, else
  404 ``RESOURCE_DOES_NOT_EXIST`` (the reference lists the error codes but not which one an
  unknown warehouse gets, so clients must treat any error answer alike).
  ``disposition`` ``INLINE`` with ``format`` ``JSON_ARRAY`` only (the defaults); the SDK
  docstring says ``ARROW_STREAM`` and ``CSV`` need ``EXTERNAL_LINKS``, which is not
  emulated: both answer 400.  ``wait_timeout`` is ``0s`` or ``5s``..``50s`` (default
  ``10s``), as the docstring says: ``0s`` answers ``PENDING`` at once, whatever the
  statement's progress; otherwise the call waits for the end up to the timeout, then
  ``on_wait_timeout`` ``CONTINUE`` (default) answers the current state and ``CANCEL``
  cancels.  ``parameters`` are named ``:name`` markers (``{name, value, type}``; no
  ``type`` means STRING, no ``value`` means NULL; a value its type's ``cast`` cannot read
  fails the statement); ``?`` markers are not supported by the API: Spark, given named
  arguments only, fails such a statement too.
  ``row_limit`` trims the result and sets ``manifest.truncated``.
* ``GET /api/2.0/sql/statements/{id}`` (``get_statement``): the state; on ``SUCCEEDED`` the
  manifest and the first chunk.  ``GET .../{id}/result/chunks/{n}``
  (``get_statement_result_chunk_n``): chunk ``n``.  ``POST .../{id}/cancel``.
* A failed execution is a 200 answer with ``status.state`` ``FAILED`` and
  ``status.error`` (the SDK docstring), never an HTTP error.
* ``result.data_array`` is an array of rows of *strings* (or ``null``), as the docstring's
  ``JSON_ARRAY`` example shows; ``manifest.schema.columns`` gives ``name``,
  ``position``, ``type_name``, ``type_text`` (and precision and scale for decimals).
* The docs say "the result can be split into multiple chunks" without saying when, so the
  emulator splits every result into chunks of :attr:`StatementsModel.rows_per_chunk` rows
  (default 2): a client that reads only the first chunk loses rows here first.

Unity Catalog tables: :meth:`StatementsModel.map_tables` makes a backtick-quoted
three-part name (```c`.`s`.`t```) stand for the local Delta folder ``FOLDER/c/s/t``
(open-source Spark has no Unity Catalog); statements then need no billing fixture. A
name whose folder holds no Delta table fails as an unknown table does
(``TABLE_OR_VIEW_NOT_FOUND``), except in a ``CREATE`` statement.

Not modelled: ``EXTERNAL_LINKS``, ``byte_limit``, ``catalog``/``schema`` defaults,
statement expiry (results kept one hour, statements 12 hours after the end).
"""

from __future__ import annotations

import itertools
import random
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._store._emulator_records import ApiError, JsonDict, invalid
from ._emulator_billing import (
    BillingTables,
    StatementFailed,
    bind_parameters,
    column_info,
    render_row,
)

__all__ = ["STATEMENTS_PREFIX", "StatementsModel"]

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

    # -- HTTP --------------------------------------------------------------------------

    def handle(
        self, method: str, path: str, body: object, *, authorized: bool = True
    ) -> tuple[int, JsonDict]:
        """Answer one request under :data:`STATEMENTS_PREFIX`; ``(status, JSON body)``."""
        if not authorized:
            return 401, {"error_code": "UNAUTHENTICATED", "message": "Invalid access token."}
        try:
            return 200, self._handle(method, path[len(STATEMENTS_PREFIX) :], body)
        except ApiError as err:
            return err.status, err.body()

    def _handle(self, method: str, rest: str, body: object) -> JsonDict:
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

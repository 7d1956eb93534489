"""A schema's column list as Spark SQL DDL, built from ``schema.jsonValue()``: the
serverless environment 2 client (Databricks Connect 15.4) has no ``StructType.toDDL()``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..core.predicates import quote_identifier, quote_literal

_SIMPLE_NAMES: Mapping[str, str] = {
    # JSON type names whose DDL spelling differs; every other simple type is its JSON name
    # in capitals (string, boolean, date, timestamp_ntz, decimal(10,2), binary, ...).
    "integer": "INT",
    "long": "BIGINT",
    "short": "SMALLINT",
    "byte": "TINYINT",
}
_SIMPLE = re.compile(r"[a-z_]+(?:\(\s*\d+\s*(?:,\s*\d+\s*)?\))?|interval [a-z ]+", re.ASCII)


def schema_ddl(schema: Mapping[str, Any]) -> str:
    """The column list of a ``struct`` schema in its JSON form (``schema.jsonValue()``).

    Example:
        >>> schema_ddl({"type": "struct", "fields": [
        ...     {"name": "day", "type": "string", "nullable": False, "metadata": {}},
        ...     {"name": "n", "type": {"type": "array", "elementType": "long",
        ...      "containsNull": True}, "nullable": True, "metadata": {"comment": "it's"}}]})
        "`day` STRING NOT NULL, `n` ARRAY<BIGINT> COMMENT 'it\\\\'s'"

    Raises:
        ValueError: not a struct schema, or a type this function does not know.
    """
    if not isinstance(schema, Mapping) or schema.get("type") != "struct":
        raise ValueError("a schema's DDL needs a struct type (schema.jsonValue())")
    return ", ".join(_field(field, " ") for field in schema.get("fields", ()))


def _field(field: Mapping[str, Any], separator: str) -> str:
    text = f"{quote_identifier(str(field['name']))}{separator}{type_ddl(field['type'])}"
    if not field.get("nullable", True):
        text += " NOT NULL"
    comment = (field.get("metadata") or {}).get("comment")
    if isinstance(comment, str):
        text += f" COMMENT {quote_literal(comment)}"
    return text


def type_ddl(data_type: str | Mapping[str, Any]) -> str:
    """One data type in its JSON form as DDL (``ARRAY<...>``, ``MAP<...>``, ``STRUCT<...>``).

    Raises:
        ValueError: a type this function does not know (e.g. a user-defined type).
    """
    if isinstance(data_type, str):
        if _SIMPLE.fullmatch(data_type) is None:
            raise ValueError(f"unknown Spark type {data_type!r} in a schema")
        return _SIMPLE_NAMES.get(data_type, data_type.upper())
    kind = data_type.get("type")
    if kind == "array":
        return f"ARRAY<{type_ddl(data_type['elementType'])}>"
    if kind == "map":
        return f"MAP<{type_ddl(data_type['keyType'])}, {type_ddl(data_type['valueType'])}>"
    if kind == "struct":
        return f"STRUCT<{', '.join(_field(f, ': ') for f in data_type.get('fields', ()))}>"
    raise ValueError(f"unknown Spark type {kind!r} in a schema")

"""The DDL built from a schema's JSON (serverless environment 2's client has no
``StructType.toDDL``) parses back to the same schema as ``toDDL()``'s."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from databricks_bundle_decorators.runtime.storage.ddl import schema_ddl, type_ddl

pytestmark = pytest.mark.spark

NAMES = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=8
)
COMMENTS = st.none() | st.text(st.sampled_from("ab '\\\"`;"), max_size=6)
SIMPLE = st.sampled_from(
    [
        "string",
        "integer",
        "long",
        "short",
        "byte",
        "double",
        "float",
        "boolean",
        "binary",
        "date",
        "timestamp",
        "timestamp_ntz",
        "decimal(10,2)",
        "decimal(38,0)",
    ]
)


def _struct(children: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    field = st.fixed_dictionaries(
        {"name": NAMES, "type": children, "nullable": st.booleans(), "comment": COMMENTS}
    )
    return st.lists(field, min_size=1, max_size=3, unique_by=lambda f: f["name"].lower()).map(
        lambda fields: {
            "type": "struct",
            "fields": [
                {
                    "name": f["name"],
                    "type": f["type"],
                    "nullable": f["nullable"],
                    "metadata": {} if f["comment"] is None else {"comment": f["comment"]},
                }
                for f in fields
            ],
        }
    )


TYPES = st.recursive(
    SIMPLE,
    lambda inner: st.one_of(
        inner.map(lambda t: {"type": "array", "elementType": t, "containsNull": True}),
        st.tuples(SIMPLE, inner).map(
            lambda kv: {
                "type": "map",
                "keyType": kv[0],
                "valueType": kv[1],
                "valueContainsNull": True,
            }
        ),
        _struct(inner),
    ),
    max_leaves=6,
)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_struct(TYPES))
def test_the_built_ddl_parses_to_the_schema_to_ddl_gives(spark: Any, schema_json: Any) -> None:
    from pyspark.sql.types import StructType

    schema = StructType.fromJson(schema_json)
    built = schema_ddl(schema.jsonValue())
    assert StructType.fromDDL(built) == schema  # names, types, nullability, comments
    assert spark.createDataFrame([], built).schema == spark.createDataFrame([], schema).schema
    if not any(c in json.dumps(schema_json) for c in ("\\\\", "'")):
        # toDDL() writes a comment's backslash and quote unescaped (it does not parse back)
        assert StructType.fromDDL(built) == StructType.fromDDL(schema.toDDL())


def test_names_are_quoted_and_unknown_types_refused() -> None:
    field = {"name": "a`b c", "type": "long", "nullable": False, "metadata": {}}
    assert schema_ddl({"type": "struct", "fields": [field]}) == "`a``b c` BIGINT NOT NULL"
    assert type_ddl({"type": "map", "keyType": "string", "valueType": "integer"}) == (
        "MAP<STRING, INT>"
    )
    with pytest.raises(ValueError, match="unknown Spark type 'udt'"):
        type_ddl({"type": "udt", "class": "x"})
    with pytest.raises(ValueError, match="unknown Spark type"):
        type_ddl("string; DROP TABLE t")
    with pytest.raises(ValueError, match="needs a struct type"):
        schema_ddl({"type": "array"})

"""Nothing on the Databricks path sets a Spark property serverless compute does not let a
job set: the source scan, the conf wrapper, and each shown able to fail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.runtime.session import serverless_rules
from databricks_bundle_decorators.runtime.session import spark as spark_module
from databricks_bundle_decorators.runtime.session.serverless_rules import (
    SETTABLE_CONFS,
    ServerlessConfError,
    check_conf,
)
from tests.serverless_guard import PACKAGE, guarded_conf, violations

SRC = Path(serverless_rules.__file__).parents[2]  # the package: runtime/session/ is two down


def modules() -> list[tuple[str, str]]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found.append((name, path.read_text()))
    return found


def test_no_module_of_the_databricks_path_changes_a_session_setting() -> None:
    scanned = modules()
    assert len(scanned) > 100  # the whole package was read
    assert [v for name, text in scanned for v in violations(text, name)] == []


@pytest.mark.parametrize(
    ("planted", "what"),
    [
        pytest.param("spark.conf.set('spark.x', '1')", "conf.set(...)", id="conf-set"),
        pytest.param("session.conf.unset('spark.x')", "conf.unset(...)", id="conf-unset"),
        pytest.param("builder.config('spark.x', '1')", ".config(...)", id="builder-config"),
        pytest.param("spark.sql('SET spark.x = 1')", "SQL literal 'SET spark.x = 1'", id="set-sql"),
        pytest.param("spark.sql(f'SET {k} = 1')", "SQL literal 'SET '", id="set-f-string"),
    ],
)
def test_the_scan_finds_a_planted_setting(planted: str, what: str) -> None:
    source = f"def write(spark, session, builder, k):\n    {planted}\n"
    assert violations(source, f"{PACKAGE}.runtime.storage.delta") == [
        f"{PACKAGE}.runtime.storage.delta:2: {what}"
    ]
    # the same line in the local session builder is allowed, and nowhere else in its module
    local = source.replace("def write", "def _local_spark_session")
    assert violations(local, f"{PACKAGE}.runtime.session.spark") == []
    assert violations(source, f"{PACKAGE}.runtime.session.spark") != []


def test_alter_table_set_is_no_session_setting() -> None:
    assert violations("q = 'ALTER TABLE t SET TBLPROPERTIES (a = 1)'\n", PACKAGE) == []


def test_the_list_and_its_source() -> None:
    assert "spark.sql.session.timeZone" in SETTABLE_CONFS
    assert serverless_rules.READ_ON == "2026-11-24"
    assert all(url.startswith("https://docs.databricks.com/") for url in serverless_rules.SOURCES)
    check_conf("spark.sql.shuffle.partitions")
    with pytest.raises(ServerlessConfError, match="partitionOverwriteMode' is not settable"):
        check_conf("spark.sql.sources.partitionOverwriteMode")
    # what configure() sets on a Databricks session is on the list
    assert set(spark_module.SQL_CONF) <= SETTABLE_CONFS


def _planted_write(spark: Any) -> None:
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")


@pytest.mark.spark
@pytest.mark.connect_lane  # the wrapper covers Connect sessions too (tests/connect_lane.py)
def test_the_conf_wrapper_refuses_dbxdec_code_and_lets_tests_set_local_settings(
    spark: Any,
) -> None:
    # a function of dbxdec's Databricks path that sets an off-list property fails...
    planted = type(spark_module)("databricks_bundle_decorators.runtime.io.planted")
    exec(
        compile("def write(spark):\n    " + _PLANTED + "\n", "planted.py", "exec"), planted.__dict__
    )
    with guarded_conf():
        with pytest.raises(ServerlessConfError, match="partitionOverwriteMode"):
            planted.write(spark)
        spark_module.configure(spark)  # timeZone only: allowed
        _planted_write(spark)  # test code: a local setting, allowed
        spark_module.local_spark_session()  # the local builder may set its local settings
    # and tests/conftest.py wraps every test on the Spark session, this one too
    with pytest.raises(ServerlessConfError, match="partitionOverwriteMode"):
        planted.write(spark)


_PLANTED = 'spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")'

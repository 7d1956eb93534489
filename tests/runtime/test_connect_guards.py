"""The Databricks path uses nothing serverless compute refuses and OSS Spark Connect
accepts: no unguarded cache, no ``DeltaTable``, no session setting off the serverless
list; each guard shown able to fail on a planted use."""

from __future__ import annotations

import pytest

from tests.connect_guard import caching_violations, delta_table_violations
from tests.databricks_path import LOCAL_ONLY_MODULES, PACKAGE, databricks_path_modules
from tests.serverless_guard import violations as conf_violations

MODULE = f"{PACKAGE}.runtime.storage.delta"


def test_the_databricks_path_is_the_runtime_and_what_it_imports() -> None:
    names = [name for name, _ in databricks_path_modules()]
    assert len(names) > 60
    assert MODULE in names and f"{PACKAGE}.runtime.running.dispatch" in names
    assert f"{PACKAGE}.examples.sales_pipeline" in names
    assert not set(LOCAL_ONLY_MODULES) & set(names)
    assert not [n for n in names if n.startswith((f"{PACKAGE}.launch", f"{PACKAGE}.cli"))]


def test_the_databricks_path_has_no_unguarded_cache_no_delta_table_and_no_setting() -> None:
    found = [
        v
        for name, text in databricks_path_modules()
        for check in (caching_violations, delta_table_violations, conf_violations)
        for v in check(text, name)
    ]
    assert found == []


@pytest.mark.parametrize(
    ("planted", "what"),
    [
        pytest.param("frame = frame.persist()", "unguarded persist()", id="persist"),
        pytest.param("frame.cache()", "unguarded cache()", id="cache"),
        pytest.param("spark.catalog.cacheTable('t')", "unguarded cacheTable()", id="cache-table"),
        pytest.param(
            "try:\n        frame.persist()\n    except ValueError:\n        pass",
            "unguarded persist()",
            id="narrow-except",
        ),
        pytest.param(
            "try:\n        pass\n    except Exception:\n        frame.persist()",
            "unguarded persist()",
            id="in-the-handler",
        ),
        pytest.param(
            "try:\n        g = lambda: frame.persist()\n    except Exception:\n        pass",
            "unguarded persist()",
            id="deferred-in-a-lambda",
        ),
    ],
)
def test_the_cache_guard_finds_a_planted_unguarded_cache(planted: str, what: str) -> None:
    source = f"def stage(spark, frame):\n    {planted}\n"
    found = caching_violations(source, MODULE)
    assert len(found) == 1 and found[0].endswith(what), found


def test_a_cache_whose_failure_is_caught_is_allowed() -> None:
    source = (
        "def stage(frame):\n    try:\n        return frame.persist()\n"
        "    except Exception:  # serverless: no cache\n        return frame\n"
    )
    assert caching_violations(source, MODULE) == []


@pytest.mark.parametrize(
    "planted",
    [
        "from delta.tables import DeltaTable",
        "from delta import DeltaTable",
        "import delta.tables",
        "import delta\ndelta.tables.DeltaTable.forPath(spark, '/t')",
        "from delta import tables",
    ],
)
def test_the_delta_table_guard_finds_a_planted_use(planted: str) -> None:
    assert delta_table_violations(planted + "\n", MODULE) != []


def test_the_conf_guard_finds_a_planted_setting_off_the_list() -> None:
    source = (
        "def write(spark):\n    spark.conf.set('spark.sql.sources.partitionOverwriteMode', 'x')\n"
    )
    assert conf_violations(source, MODULE) == [f"{MODULE}:2: conf.set(...)"]

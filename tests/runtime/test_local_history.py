"""A local table's history read from its log (no JVM) is what ``DESCRIBE HISTORY`` says:
the same versions, operations, ``userMetadata`` and commit times (issue 40: ``undo
--dry-run`` of a local backfill starts no Spark)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.runtime.storage.delta_history import read_log_commits

pytestmark = pytest.mark.spark


def test_the_log_reader_agrees_with_describe_history(spark: Any, tmp_path: Path) -> None:
    folder = tmp_path / "t"
    rows = spark.createDataFrame([(1, "a"), (2, "b")], "id INT, day STRING")
    rows.write.format("delta").option("userMetadata", "dbxdec:one").save(str(folder))
    rows.write.format("delta").mode("append").save(str(folder))  # no userMetadata
    rows.write.format("delta").mode("overwrite").option("userMetadata", "dbxdec:two").save(
        str(folder)
    )
    spark.sql(f"RESTORE TABLE delta.`{folder}` TO VERSION AS OF 1")
    history = spark.sql(f"DESCRIBE HISTORY delta.`{folder}`").collect()
    expected = sorted((int(r["version"]), str(r["operation"]), r["userMetadata"]) for r in history)
    got = [(c.version, c.operation, c.metadata) for c in read_log_commits(folder)]
    assert got == expected
    assert [g[1] for g in got] == ["WRITE", "WRITE", "WRITE", "RESTORE"]
    assert all(c.at.endswith("Z") for c in read_log_commits(folder))
    assert read_log_commits(tmp_path / "absent") == ()

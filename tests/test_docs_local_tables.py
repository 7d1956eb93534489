"""docs/guides/run.md "Look at the local tables": the page's snippet, run as written from a
project folder whose warehouse holds the table (issue 40: no documented way to look at
local Delta tables outside a task)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "guides" / "run.md"

pytestmark = pytest.mark.spark


def test_the_snippet_reads_a_local_table_outside_a_task(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    snippet = re.search(
        r"<!-- test: local tables -->\n```python\n(.*?)```", PAGE.read_text("utf-8"), re.S
    )
    assert snippet is not None, "the page's snippet is marked"
    folder = tmp_path / ".dbxdec" / "warehouse" / "main" / "my_project" / "daily_orders"
    rows = [("2024-01-02", 10.5), ("2024-01-01", 2.0)]
    spark.createDataFrame(rows, "order_date string, total_price double").write.format("delta").save(
        str(folder)
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DBXDEC_WAREHOUSE", raising=False)
    exec(compile(snippet[1], str(PAGE), "exec"), {})
    shown = capsys.readouterr().out
    assert shown.index("2024-01-01") < shown.index("2024-01-02")
    assert "12.5" in shown

"""Issue 40 item 6: every definition mistake names the user's file and line, never one of
dbxdec's own files: a wrong time zone, a weekly start that is not a week key, a bad source
name (the cron error already did)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import databricks_bundle_decorators
from databricks_bundle_decorators.definitions import Registry
from databricks_bundle_decorators.definitions.loader import load_pipelines
from databricks_bundle_decorators.errors import DefinitionError

OWN = str(Path(databricks_bundle_decorators.__file__).resolve().parent)
MISTAKES = {
    "zone": ('DailyBackfill(start_date="2024-01-01", tz="Europe/Pari")', "Europe/Pari"),
    "weekly": ('WeeklyBackfill(start_date="2024-01-01")', "not a valid weekly key"),
    "hourly": ('HourlyBackfill(start_date="2024-03-30")', "not a valid hourly key"),
    "source": ('source("orders")', "must be catalog.schema.table"),
    "column": ('source("a.b.c", event_time="order date")', "is not a column name"),
}


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    sys.path.insert(0, str(tmp_path))
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.startswith("user_line_")]:
            del sys.modules[name]


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_the_error_names_the_users_line(folder: Path, mistake: str) -> None:
    call, said = MISTAKES[mistake]
    module = f"user_line_{mistake}"
    text = (
        "from databricks_bundle_decorators import (\n"
        "    DailyBackfill, HourlyBackfill, WeeklyBackfill, source)\n"
        "\n"
        f"DEFINITION = {call}\n"
    )
    (folder / f"{module}.py").write_text(text)
    (diagnostic,) = load_pipelines([module], registry=Registry())
    assert said in str(diagnostic), str(diagnostic)
    assert diagnostic.location == f"{folder / module}.py:4", str(diagnostic)
    assert OWN not in str(diagnostic)


BODY_MISTAKES = {
    "lookback": ('DailyBackfill("2024-01-01", lookback=-1)', "lookback must be a whole number"),
    "zone": ('WeeklyBackfill("2024-01-01", tz="Europe/Pari")', "Europe/Pari"),
    "source": ('source("orders")', "must be catalog.schema.table"),
}


@pytest.mark.parametrize("mistake", list(BODY_MISTAKES))
def test_a_mistake_in_the_job_body_names_its_line(folder: Path, mistake: str) -> None:
    # the body is traced when the job is first used, not at import: the same line is named
    call, said = BODY_MISTAKES[mistake]
    module = f"user_line_body_{mistake}"
    text = (
        "from databricks_bundle_decorators import (\n"
        "    DailyBackfill, Registry, WeeklyBackfill, source, task)\n"
        "\n"
        "registry = Registry()\n"
        "\n"
        "\n"
        "@registry.job\n"
        "def daily():\n"
        f"    definition = {call}\n"
        "\n"
        "    @task\n"
        "    def first() -> None: ...\n"
        "\n"
        "    first()\n"
    )
    (folder / f"{module}.py").write_text(text)
    imported = importlib.import_module(module)
    with pytest.raises(DefinitionError) as caught:
        _ = imported.registry.get("daily").graph
    rendered = caught.value.render()
    assert said in rendered, rendered
    assert rendered.endswith(f"({folder / module}.py:9)"), rendered
    assert OWN not in rendered

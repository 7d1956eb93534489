"""``FileArrival(keys=...)``: bad patterns and values fail at definition in one line;
the generated job carries the file-arrival location reference."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators import (
    DailyBackfill,
    FileArrival,
    KeyFromColumn,
    KeyFromPath,
    Registry,
    StaticBackfill,
    job,
    task,
)
from databricks_bundle_decorators.backfill.wire.trigger import (
    TRIGGER_LOCATION_PARAM,
    triggered_location,
)
from databricks_bundle_decorators.bundle.codegen import job_resource
from databricks_bundle_decorators.bundle.validate import SchemaValidator
from databricks_bundle_decorators.errors import DefinitionError

from ..bundle.projects import schema_path

URL = "/Volumes/main/raw/landing/"


def _job(trigger: object, backfill: Any = None) -> Any:
    @job(
        registry=Registry(), backfill=backfill or DailyBackfill("2024-01-01"), triggered_by=trigger
    )
    def landing() -> None:
        @task
        def load() -> None:
            return None

        load()

    return landing


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: KeyFromPath("date=/"), "needs exactly one {key}"),
        (lambda: KeyFromPath("{key}/{key}"), "needs exactly one {key}"),
        (lambda: KeyFromPath(""), "give a template with {key}"),
        (lambda: KeyFromPath(r"(?P<key>\d+"), "is not a regular expression"),
        (lambda: KeyFromPath(r"date=(\d{4})"), "needs exactly one {key}"),
        (lambda: KeyFromColumn("event date"), "not a column name"),
        (lambda: KeyFromColumn("d", file_format="xml"), "file_format='xml'"),  # type: ignore[arg-type]
        (lambda: FileArrival(URL, keys="date={key}/"), "must be KeyFromPath"),  # type: ignore[arg-type]
        (lambda: FileArrival(URL, keys=KeyFromColumn("d"), max_keys=0), "max_keys=0"),
        (lambda: FileArrival(URL, state_table="a.b"), "state_table='a.b'"),
    ],
    ids=[
        "no-placeholder", "two-placeholders", "empty", "bad-regex", "regex-without-key",
        "column", "format", "keys-type", "max-keys", "state-table",
    ],
)  # fmt: skip
def test_bad_patterns_and_values_fail_at_definition_in_one_line(make: Any, words: str) -> None:
    with pytest.raises(DefinitionError) as caught:
        make()
    assert words in str(caught.value)
    assert "\n" not in str(caught.value)


def test_keys_from_files_need_a_time_backfill() -> None:
    with pytest.raises(DefinitionError, match="needs a time-based backfill"):
        _job(FileArrival(URL, keys=KeyFromPath("date={key}/")), backfill=StaticBackfill(["a"]))


def test_the_job_passes_the_location_reference_and_validates() -> None:
    trigger = FileArrival(URL, keys=KeyFromPath("date={key}/"), wait_after_last_change=60)
    settings = job_resource(_job(trigger), package_name="p")
    assert settings["trigger"] == {
        "file_arrival": {"url": URL, "wait_after_last_change_seconds": 60}
    }
    params = {p["name"]: p["default"] for p in settings["parameters"]}
    assert params[TRIGGER_LOCATION_PARAM] == "{{job.trigger.file_arrival.location}}"
    assert triggered_location(params) is None  # unrendered: not a file-triggered run
    assert SchemaValidator(schema_path()).problems("landing", settings) == []
    # Without keys: today's behaviour, no parameter.
    plain = job_resource(_job(FileArrival(URL)), package_name="p")
    assert TRIGGER_LOCATION_PARAM not in {p["name"] for p in plain.get("parameters", [])}


def test_state_table_and_local_folder_defaults() -> None:
    trigger = FileArrival(URL, keys=KeyFromPath("date={key}/"), local="landing")
    assert trigger.state_table == "main.raw.dbxdec_trigger_state"  # the volume's schema
    assert trigger.local is not None and Path(trigger.local).is_absolute()
    assert Path(trigger.local).name == "landing"
    assert FileArrival("s3://bucket/in", local="file:///tmp/in").local == "/tmp/in"
    assert FileArrival("s3://bucket/in").state_table == ""  # beside the first output

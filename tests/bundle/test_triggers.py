"""``@job(triggered_by=TableUpdate(...)/FileArrival(...))``: values checked at definition, the
generated ``trigger`` block valid against the bundle schema, the trigger references as
job parameters, and the emulator firing a table-update trigger over HTTP."""

from __future__ import annotations

import json
from typing import Any

import pytest
from databricks.sdk import WorkspaceClient

from databricks_bundle_decorators import DailyBackfill, Registry, StaticBackfill, job, task
from databricks_bundle_decorators.backfill.wire.trigger import (
    TRIGGER_TABLES_PARAM,
    TRIGGER_VERSIONS_PARAM,
    triggered_versions,
)
from databricks_bundle_decorators.bundle.codegen import job_resource
from databricks_bundle_decorators.bundle.options import CodegenOptions
from databricks_bundle_decorators.bundle.validate import SchemaValidator
from databricks_bundle_decorators.definitions import source
from databricks_bundle_decorators.definitions.triggers import FileArrival, TableUpdate
from databricks_bundle_decorators.errors import DefinitionError
from databricks_bundle_decorators.testing import JobsEmulator

from .projects import schema_path

ORDERS = source("main.raw.orders", event_time="ts")
RETURNS = source("main.raw.returns", event_time="ts")


def _job(registry: Registry, trigger: object, backfill: Any = None) -> Any:
    """A job triggered by ``trigger``: a raw dict is the Databricks ``trigger`` setting,
    anything else goes to ``triggered_by``."""
    raw = isinstance(trigger, dict)
    typed = {"trigger": trigger} if raw else {"triggered_by": trigger}

    @job(
        registry=registry,
        backfill=backfill or DailyBackfill("2024-01-01", lookback=2),
        **typed,  # type: ignore[arg-type]
    )
    def sales() -> None:
        @task
        def clean() -> None:
            return None

        clean()

    return sales


def test_table_update_generates_the_documented_block_without_the_default_condition() -> None:
    trigger = TableUpdate([ORDERS, RETURNS], max_keys=7, wait_after_last_change=120)
    settings = job_resource(_job(Registry(), trigger), package_name="p")
    assert settings["trigger"] == {
        "table_update": {
            "table_names": ["main.raw.orders", "main.raw.returns"],
            "wait_after_last_change_seconds": 120,
        }
    }
    params = {p["name"]: p["default"] for p in settings["parameters"]}
    assert params[TRIGGER_TABLES_PARAM] == "{{job.trigger.table_update.updated_tables}}"
    assert params[TRIGGER_VERSIONS_PARAM] == ",".join(
        f"{t}={{{{job.trigger.table_update.`{t}`.version}}}}@"
        f"{{{{job.trigger.table_update.`{t}`.commit_timestamp.iso_datetime}}}}"
        for t in ("main.raw.orders", "main.raw.returns")
    )
    assert SchemaValidator(schema_path()).problems("sales", settings) == []


def test_all_updated_file_arrival_and_paused_blocks_validate() -> None:
    validator = SchemaValidator(schema_path())
    every = TableUpdate([ORDERS], condition="ALL_UPDATED", min_time_between_triggers=60)
    paused = CodegenOptions(package_name="p", pause_schedules=True)
    settings = job_resource(_job(Registry(), every), options=paused)
    assert settings["trigger"] == {
        "pause_status": "PAUSED",
        "table_update": {
            "table_names": ["main.raw.orders"],
            "condition": "ALL_UPDATED",
            "min_time_between_triggers_seconds": 60,
        },
    }
    assert validator.problems("sales", settings) == []
    files = job_resource(_job(Registry(), FileArrival("/Volumes/m/r/landing/")), package_name="p")
    assert files["trigger"] == {"file_arrival": {"url": "/Volumes/m/r/landing/"}}
    assert validator.problems("sales", files) == []


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: TableUpdate([]), "non-empty list of source"),
        (lambda: TableUpdate([source("m.r.o")]), "has no event_time"),
        (lambda: TableUpdate([ORDERS], condition="SOME"), "condition='SOME'"),  # type: ignore[arg-type]
        (lambda: TableUpdate([ORDERS], max_keys=0), "max_keys=0"),
        (lambda: TableUpdate([ORDERS], wait_after_last_change=59), "at least 60"),
        (lambda: TableUpdate([ORDERS], state_table="x.y"), "state_table='x.y'"),
        (lambda: FileArrival("landing/"), "url='landing/'"),
    ],
)
def test_bad_values_fail_at_definition_with_one_line(make: Any, words: str) -> None:
    with pytest.raises(DefinitionError) as caught:
        make()
    assert words in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_table_update_needs_a_time_backfill() -> None:
    with pytest.raises(DefinitionError, match="needs a time-based backfill"):
        _job(Registry(), TableUpdate([ORDERS]), backfill=StaticBackfill(["a"]))


def test_a_typed_trigger_under_the_databricks_setting_name_is_refused() -> None:
    """``trigger=`` is Databricks' own setting: a typed value there names ``triggered_by``."""
    with pytest.raises(DefinitionError, match=r"write triggered_by=TableUpdate\(\.\.\.\)"):

        @job(
            registry=Registry(), backfill=DailyBackfill("2024-01-01"), trigger=TableUpdate([ORDERS])
        )
        def sales() -> None: ...


def test_triggered_by_and_a_raw_trigger_together_are_refused() -> None:
    with pytest.raises(DefinitionError, match="not both"):

        @job(
            registry=Registry(),
            backfill=DailyBackfill("2024-01-01"),
            triggered_by=TableUpdate([ORDERS]),
            trigger={"periodic": {"interval": 1, "unit": "HOURS"}},
        )
        def sales() -> None: ...


def test_triggered_by_refuses_a_value_of_another_type() -> None:
    with pytest.raises(DefinitionError, match="triggered_by must be TableUpdate"):
        _job(Registry(), "orders")


def test_a_raw_trigger_dict_passes_through_with_a_warning_naming_table_update() -> None:
    raw = {"table_update": {"table_names": ["main.raw.orders"]}}
    with pytest.warns(UserWarning, match=r"TableUpdate\(\.\.\.\)"):
        definition = _job(Registry(), raw)
    assert definition.trigger is None
    settings = job_resource(definition, package_name="p")
    assert settings["trigger"] == raw
    assert TRIGGER_VERSIONS_PARAM not in {p["name"] for p in settings["parameters"]}


def test_the_emulator_renders_the_references_of_a_fired_table_update() -> None:
    definition = _job(Registry(), TableUpdate([ORDERS, RETURNS]))
    settings = job_resource(definition, package_name="p")
    with JobsEmulator() as emulator:
        w: WorkspaceClient = emulator.workspace_client()
        created = w.api_client.do("POST", "/api/2.2/jobs/create", body=settings)
        assert isinstance(created, dict)
        job_id = int(created["job_id"])
        manual = w.jobs.run_now(job_id).run_id
        fired = emulator.fire_table_update(
            job_id,
            {"main.raw.orders": 12},
            commit_times={"main.raw.orders": "2024-05-01T10:00:00Z"},
        )
        by_hand, triggered = w.jobs.get_run(manual), w.jobs.get_run(fired)
    assert triggered.trigger is not None and triggered.trigger.value == "TABLE"
    params = {p.name: p.value or "" for p in triggered.job_parameters or []}
    assert json.loads(params[TRIGGER_TABLES_PARAM]) == ["main.raw.orders"]
    assert params[TRIGGER_VERSIONS_PARAM] == (
        "main.raw.orders=12@2024-05-01T10:00:00Z,main.raw.returns=@"
    )
    assert triggered_versions(params) == {"main.raw.orders": 12}
    manual_params = {p.name: p.value or "" for p in by_hand.job_parameters or []}
    assert triggered_versions(manual_params) is None  # a run-now is not table-triggered


def test_a_table_name_needing_quotes_unescaped_is_refused_by_the_emulator() -> None:
    """The page's form writes the name as it is (accepted: issue 39 item 5); a name part
    with other characters than letters, digits and ``_`` needs backticks."""
    with JobsEmulator() as emulator:
        w = emulator.workspace_client()
        body = {
            "name": "x",
            "parameters": [
                {"name": "v", "default": "{{job.trigger.table_update.main.raw.or-ders.version}}"}
            ],
            "tasks": [{"task_key": "t", "notebook_task": {"notebook_path": "/x"}}],
        }
        with pytest.raises(Exception, match="Invalid dynamic value reference"):
            w.api_client.do("POST", "/api/2.2/jobs/create", body=body)


def test_a_paused_trigger_does_not_fire() -> None:
    paused = CodegenOptions(package_name="p", pause_schedules=True)
    settings = job_resource(_job(Registry(), TableUpdate([ORDERS])), options=paused)
    with JobsEmulator() as emulator:
        created = emulator.workspace_client().api_client.do(
            "POST", "/api/2.2/jobs/create", body=settings
        )
        assert isinstance(created, dict)
        with pytest.raises(ValueError, match="paused"):
            emulator.fire_table_update(int(created["job_id"]), {"main.raw.orders": 3})


def test_the_emulator_renders_the_location_of_a_fired_file_arrival() -> None:
    from databricks_bundle_decorators import KeyFromPath
    from databricks_bundle_decorators.backfill.wire.trigger import triggered_location

    trigger = FileArrival("/Volumes/m/r/landing/", keys=KeyFromPath("date={key}/"))
    settings = job_resource(_job(Registry(), trigger), package_name="p")
    with JobsEmulator() as emulator:
        w: WorkspaceClient = emulator.workspace_client()
        created = w.api_client.do("POST", "/api/2.2/jobs/create", body=settings)
        assert isinstance(created, dict)
        job_id = int(created["job_id"])
        manual = w.jobs.run_now(job_id).run_id
        fired = emulator.fire_file_arrival(job_id)
        by_hand, triggered = w.jobs.get_run(manual), w.jobs.get_run(fired)
        with pytest.raises(ValueError, match="no file_arrival trigger"):
            emulator.fire_file_arrival(
                int(w.api_client.do(
                    "POST", "/api/2.2/jobs/create",
                    body=job_resource(_job(Registry(), TableUpdate([ORDERS])), package_name="p"),
                )["job_id"])  # type: ignore[index]
            )  # fmt: skip
    assert triggered.trigger is not None and triggered.trigger.value == "FILE_ARRIVAL"
    params = {p.name: p.value or "" for p in triggered.job_parameters or []}
    assert triggered_location(params) == "/Volumes/m/r/landing/"
    manual_params = {p.name: p.value or "" for p in by_hand.job_parameters or []}
    assert triggered_location(manual_params) is None  # a run-now is not file-triggered

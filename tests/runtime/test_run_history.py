"""``CatchUp(since="last_success")`` without Spark: the newest successful run that counts,
read from ``jobs/runs/list`` on the emulator in either documented order and across pages;
the job's id as a declared job parameter; the refusals, each in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators import CatchUp, DailyBackfill, Registry, task
from databricks_bundle_decorators.backfill.wire.params import JOB_ID_PARAM, job_id_of
from databricks_bundle_decorators.bundle.codegen import job_resource
from databricks_bundle_decorators.bundle.validate import SchemaValidator
from databricks_bundle_decorators.errors import UsageError
from databricks_bundle_decorators.runtime.core.job_auth import job_run_client
from databricks_bundle_decorators.runtime.triggers.run_history import (
    ListedRun,
    newest_success,
    run_key,
)
from databricks_bundle_decorators.runtime.triggers.trigger_state import StoredRun
from databricks_bundle_decorators.testing import JobsEmulator

from ..bundle.projects import schema_path
from .run_history_setup import NEWEST_SUCCESS_KEY, TOKEN, build_history

DAILY = DailyBackfill("2024-03-01")


@pytest.mark.parametrize("order", ["start_time", "end_time"])
def test_the_newest_successful_run_is_found_in_either_order_on_a_later_page(
    order: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with JobsEmulator(token=TOKEN) as emu:
        emu.runs_list_order = order
        job_id, newest = build_history(emu, "history_job")
        monkeypatch.setenv("DATABRICKS_HOST", emu.url)  # as a job run's environment does
        monkeypatch.setenv("DATABRICKS_TOKEN", TOKEN)
        emu.requests.clear()
        found = newest_success(job_run_client(), job_id)
        assert found is not None and found.run_id == newest
        assert run_key(DAILY, found, None) == NEWEST_SUCCESS_KEY
        assert emu.requests["/api/2.2/jobs/runs/list"] == 2  # B is on the second page


def test_a_scheduled_runs_key_is_its_stored_last_key_else_the_key_current_at_its_time() -> None:
    scheduled = ListedRun(7, 1_710_000_000_000, {"backfill_key": "", "backfill_run_time": ""})
    stored = StoredRun(("2024-03-02", "2024-03-03"), ("2024-03-03",), {}, ("2024-03-04",))
    assert run_key(DAILY, scheduled, stored) == "2024-03-03"  # capped: its last written key
    assert run_key(DAILY, scheduled, None) == "2024-03-09"  # 1_710_000_000_000 ms: 03-09
    timed = ListedRun(7, 1_710_000_000_000, {"backfill_run_time": "2024-03-05T06:00:00Z"})
    assert run_key(DAILY, timed, None) == "2024-03-05"
    old = ListedRun(7, 0, {"backfill_key": "2023-12-31"})  # before start_date: no key
    assert run_key(DAILY, old, None) is None


def _catching_up(registry: Registry, name: str, catch_up: CatchUp) -> Any:
    @registry.job(name=name, backfill=DailyBackfill("2024-03-01", catch_up=catch_up))
    def body() -> None:
        @task
        def t() -> None:
            return None

        t()

    return body


def test_last_success_declares_the_job_id_parameter_and_the_job_validates() -> None:
    registry = Registry()
    declares = _catching_up(registry, "declares", CatchUp(since="last_success", max_keys=3))
    settings = job_resource(declares, package_name="p")
    params = {p["name"]: p["default"] for p in settings["parameters"]}
    assert params[JOB_ID_PARAM] == "{{job.id}}"  # a documented dynamic value reference
    assert SchemaValidator(schema_path()).problems("declares", settings) == []
    plain = _catching_up(registry, "plain", CatchUp(max_keys=3))  # from the data: no id
    assert JOB_ID_PARAM not in plain.params
    assert job_id_of(declares.params) is None  # unrendered: no id
    assert job_id_of({JOB_ID_PARAM: "812"}) == 812


def test_bad_catch_up_values_are_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match=r"^CatchUp: since='last_run' must be") as bad:
        CatchUp(since="last_run")  # type: ignore[arg-type]
    assert "\n" not in str(bad.value)
    with pytest.raises(ValueError, match="secret_scope goes with since='last_success' only"):
        CatchUp(secret_scope="dbxdec")
    with pytest.raises(ValueError, match="must be a non-empty string"):
        CatchUp(since="last_success", secret_scope=" ")


def test_no_credentials_in_a_job_run_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("DATABRICKS_HOST", "DATABRICKS_TOKEN", "DATABRICKS_CONFIG_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATABRICKS_CONFIG_FILE", str(tmp_path / "absent.cfg"))
    with pytest.raises(UsageError) as refused:
        job_run_client()
    assert "\n" not in str(refused.value)
    assert "set DATABRICKS_HOST and DATABRICKS_TOKEN" in str(refused.value)

"""One run, one set of keys: every task of a run resolves the keys of the run's trigger
time, in separate ``dbxdec-run`` processes, whatever the machine's clock says.

The generated job's parameters are rendered the way Databricks renders them (the
trigger time as epoch milliseconds, or a value from the native Backfill dialog), and the
entry point runs under Debian's ``faketime`` with a clock years away.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.backfill import RunContext, resolve_keys
from databricks_bundle_decorators.bundle.codegen import job_resource

from .clock_pipeline import DAILY, HOURLY, daily_clock, hourly_clock

REPO = Path(__file__).resolve().parents[2]
DBXDEC_RUN = Path(sys.executable).with_name("dbxdec-run")
FAKETIME = shutil.which("faketime")
WRONG_CLOCK = "2031-06-15 12:00:00"
# 2024-03-31 01:30 UTC is 03:30 in Berlin: the morning the clocks skip 02:00-03:00.
DST_MORNING = datetime(2024, 3, 31, 1, 30, tzinfo=timezone.utc)


def _render(value: str, params: dict[str, str], trigger: datetime, run_id: str) -> str:
    """What Databricks substitutes into a named parameter at run time."""
    value = value.replace("{{job.trigger.time.timestamp_ms}}", str(int(trigger.timestamp() * 1000)))
    value = value.replace("{{job.run_id}}", run_id).replace("{{job.repair_count}}", "0")
    return re.sub(r"\{\{job\.parameters\.([\w.-]+)\}\}", lambda m: params[m.group(1)], value)


def _run_task(
    job: Any, task_key: str, run_time: str | None, trigger: datetime, state: Path, *, fake: bool
) -> dict[str, Any]:
    resource = job_resource(job, package_name="tests")
    params = {p["name"]: p["default"] for p in resource["parameters"]}
    params = {k: _render(v, params, trigger, "") for k, v in params.items()}
    if run_time is not None:  # the Backfill dialog overrides the parameter
        params["backfill_run_time"] = run_time
    (task,) = [t for t in resource["tasks"] if t["task_key"] == task_key]
    wheel = task.get("python_wheel_task")  # a task-value task: a notebook, same parameters
    named = task["notebook_task"]["base_parameters"] if wheel is None else wheel["named_parameters"]
    named = {**named, **params}  # job parameters pushed down
    run_id = f"{job.name}-{abs(hash((run_time, trigger))) % 10**8}"
    args = [f"--{k}={_render(v, params, trigger, run_id)}" for k, v in named.items()]
    env = {**os.environ, "PYTHONPATH": str(REPO), "DBXDEC_STATE_DIR": str(state)}
    env.pop("DATABRICKS_RUNTIME_VERSION", None)
    command = [str(DBXDEC_RUN), *args]
    if fake:
        assert FAKETIME is not None
        command = [FAKETIME, WRONG_CLOCK, *command]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    recorded = state / "task_values" / f"{run_id}-0" / f"{task_key}.json"
    return dict(json.loads(recorded.read_text(encoding="utf-8")))


def _expected(backfill: Any, job: Any, instant: datetime) -> list[str]:
    context = RunContext(job.name, None, {}, backfill, None, instant)
    return list(resolve_keys(context).keys)


needs_faketime = pytest.mark.skipif(
    FAKETIME is None, reason="Debian's faketime is not installed (make test installs it)"
)


@needs_faketime
@pytest.mark.slow
@pytest.mark.parametrize(
    ("run_time", "instant"),
    [
        (None, DST_MORNING),  # {{job.trigger.time.timestamp_ms}}, the default
        ("2024-03-31T01:30:00Z", DST_MORNING),  # {{backfill.iso_datetime}} with Z
        ("2024-03-31T03:30:00+02:00", DST_MORNING),  # an offset
        ("2024-03-31T01:30:00", DST_MORNING),  # no offset: read as UTC
        ("2024-03-31", datetime(2024, 3, 30, 23, 0, tzinfo=timezone.utc)),  # Berlin midnight
    ],
    ids=["trigger-ms", "iso-z", "iso-offset", "iso-naive-utc", "iso-date-berlin"],
)
def test_every_task_resolves_the_keys_of_the_trigger_instant(
    tmp_path: Path, run_time: str | None, instant: datetime
) -> None:
    expected = _expected(DAILY, daily_clock, instant)
    # data_lag=1, lookback=1: the key before the instant's day, and the one before it
    assert len(expected) == 2
    first = _run_task(daily_clock, "first", run_time, DST_MORNING, tmp_path, fake=True)
    assert first["keys"] == expected
    assert first["written"] == expected[1:]
    if run_time is None:  # a second process of the same run, on the real clock
        second = _run_task(daily_clock, "second", run_time, DST_MORNING, tmp_path, fake=False)
        assert second == first


@needs_faketime
@pytest.mark.slow
def test_an_hourly_run_on_the_dst_morning_resolves_the_hour_after_the_gap(tmp_path: Path) -> None:
    recorded = _run_task(hourly_clock, "only", None, DST_MORNING, tmp_path, fake=True)
    assert recorded["keys"] == ["2024-03-31T03"] == _expected(HOURLY, hourly_clock, DST_MORNING)
    assert recorded["logical_date"] == "2024-03-31T03:00:00+02:00"


@needs_faketime
def test_faketime_moves_the_clock_of_a_python_child() -> None:
    """The wrong clock above is real: without the pinned run time a task would see 2031."""
    assert FAKETIME is not None
    done = subprocess.run(
        [FAKETIME, WRONG_CLOCK, sys.executable, "-c", "import time; print(time.time())"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    seen = datetime.fromtimestamp(float(done.stdout), timezone.utc)
    assert seen.year == 2031

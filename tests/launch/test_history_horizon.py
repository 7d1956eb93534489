"""Run history beyond 60 days: ``status``, ``catchup`` and ``--rerun`` on Databricks.

The workspace removes runs after 60 days (the Jobs API reference; the emulator does the
same on a clock the tests move with ``advance_days``). A key that neither ``runs/list``
nor a local ledger records, and whose window ended before the horizon, is ``unknown``:
never ``missing``, and catch-up leaves it alone unless it is named.
"""

from __future__ import annotations

import io
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from databricks_bundle_decorators.backfill import DailyBackfill
from databricks_bundle_decorators.definitions import Registry
from databricks_bundle_decorators.launch.launcher import (
    BackfillRequest,
    Pacing,
    plan_backfill,
    run_backfill,
)
from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
)
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice
from databricks_bundle_decorators.launch.plan.request import Connection
from databricks_bundle_decorators.launch.plan.states import KeyState
from databricks_bundle_decorators.launch.status.observed import RUN_RETENTION, with_unknown
from databricks_bundle_decorators.launch.status.progress import JsonReporter
from databricks_bundle_decorators.launch.status.status import job_status, partition_grid
from databricks_bundle_decorators.launch.status.status_grid import build_grid, grid_html, grid_table
from databricks_bundle_decorators.launch.status.status_view import fold_grid, fold_note
from databricks_bundle_decorators.testing import JobsEmulator
from tests.launch.conftest import BACKFILL_PARAMS
from tests.launch.test_presence import deploy, stand_in_cluster
from tests.runtime.test_presence import FIVE_DAYS, REGISTRY, write_days

NIGHTLY_PARAMS = {**BACKFILL_PARAMS, "source": "x"}
DAYS = ["2024-03-01", "2024-03-02", "2024-03-03", "2024-03-04", "2024-03-05", "2024-03-06"]
LATER = timedelta(days=90)


def run_elsewhere(emu: JobsEmulator, job_id: int, keys: list[str]) -> None:
    """Runs no ledger on this machine knows of (another laptop, the jobs UI)."""
    client = emu.workspace_client()
    for key in keys:
        client.jobs.run_now(job_id, job_parameters={"backfill_key": key})
    emu.wait_until_idle()


def states(
    emu: JobsEmulator, registry: Registry, root: Path, job_id: int, now: datetime
) -> dict[str, str]:
    """``dbxdec status nightly`` over :data:`DAYS` at ``now``."""
    job = registry.get("nightly")
    found = job_status(
        job, Connection(job_id=job_id), root=root, now=now, client=emu.workspace_client()
    )
    grid, _ = partition_grid(job, found, start=DAYS[0], end=DAYS[-1])
    return dict(grid.states)


def planned(
    emu: JobsEmulator, registry: Registry, root: Path, job_id: int, now: datetime, **options: Any
) -> tuple[list[str], list[str]]:
    """The keys a dry run of the request plans at ``now``, and its warnings."""
    bounds: dict[str, Any] = {} if "keys" in options else {"start": DAYS[0], "end": DAYS[-1]}
    request = BackfillRequest("nightly", connection=Connection(job_id=job_id), **bounds, **options)
    prepared = plan_backfill(
        request,
        root=root,
        registry=registry,
        warehouse=root,
        client=emu.workspace_client(),
        dry_run=True,
        now=now,
    )
    return [key for s in prepared.plan.slices for key in s.keys], prepared.warnings


def test_keys_whose_runs_expired_are_unknown_and_catchup_launches_none(
    emu: JobsEmulator, registry: Registry, root: Path
) -> None:
    job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS)
    emu.set_outcome(DAYS[1], result="FAILED", message="bad day")
    run_elsewhere(emu, job_id, DAYS[:3])
    now = datetime.now(timezone.utc)
    # a job younger than 60 days: runs/list is its whole history
    assert list(states(emu, registry, root, job_id, now).values()) == [
        "succeeded", "failed", "succeeded", "missing", "missing", "missing",
    ]  # fmt: skip
    assert planned(emu, registry, root, job_id, now, catchup=True)[0] == [DAYS[1], *DAYS[3:]]

    emu.advance_days(90)
    later = now + LATER
    assert set(states(emu, registry, root, job_id, later).values()) == {"unknown"}
    keys, warnings = planned(emu, registry, root, job_id, later, catchup=True)
    assert keys == []
    assert any("6 keys ended more than 60 days ago" in w and "--by data" in w for w in warnings)
    assert planned(emu, registry, root, job_id, later, rerun="missing")[0] == []
    assert planned(emu, registry, root, job_id, later, rerun="failed")[0] == []
    # named keys and a plain backfill launch what they are told
    assert (
        planned(emu, registry, root, job_id, later, catchup=True, keys=tuple(DAYS[3:5]))[0]
        == DAYS[3:5]
    )
    assert planned(emu, registry, root, job_id, later)[0] == DAYS

    run_elsewhere(emu, job_id, [DAYS[3]])  # a run inside the 60 days is listed again
    after = states(emu, registry, root, job_id, later)
    assert after[DAYS[3]] == "succeeded"
    assert [after[key] for key in DAYS if key != DAYS[3]] == ["unknown"] * 5


def test_keys_in_a_local_ledger_of_an_earlier_backfill_are_not_unknown(
    emu: JobsEmulator, registry: Registry, root: Path
) -> None:
    job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=2)
    emu.set_outcome(DAYS[1], result="FAILED", message="bad day")
    request = BackfillRequest(
        "nightly",
        start=DAYS[0],
        end=DAYS[2],
        connection=Connection(job_id=job_id),
        pacing=Pacing(max_concurrent=2, poll_interval=0.01),
    )
    client = emu.workspace_client()
    prepared = plan_backfill(request, root=root, registry=registry, warehouse=root, client=client)
    assert run_backfill(prepared, JsonReporter(io.StringIO())).exit_code == 1

    emu.advance_days(90)
    later = datetime.now(timezone.utc) + LATER
    assert states(emu, registry, root, job_id, later) == {
        DAYS[0]: "succeeded",
        DAYS[1]: "failed",
        DAYS[2]: "succeeded",
        DAYS[3]: "unknown",
        DAYS[4]: "unknown",
        DAYS[5]: "unknown",
    }
    assert planned(emu, registry, root, job_id, later, catchup=True)[0] == [DAYS[1]]
    assert planned(emu, registry, root, job_id, later, rerun="failed")[0] == [DAYS[1]]


def test_a_local_backfill_or_another_job_s_ledger_is_no_record_on_databricks(
    emu: JobsEmulator, registry: Registry, root: Path
) -> None:
    job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS)
    plan = BackfillPlan("nightly", (Slice(0, (DAYS[0],)), Slice(1, (DAYS[1],))))
    other = BackendSpec("databricks", job_id + 1)
    for spec, key in ((BackendSpec("local"), 0), (other, 1)):  # --local wrote other tables
        ledger = Ledger.create(root, plan, backend=spec, options=LaunchOptions())
        done = Attempt(1, "t", "succeeded", "7", submitted_at=10.0)
        ledger.update(ledger.slices[key].with_attempt(done))
        ledger.save()
        ledger.close()
    emu.advance_days(90)
    later = datetime.now(timezone.utc) + LATER
    assert set(states(emu, registry, root, job_id, later).values()) == {"unknown"}


DAILY = DailyBackfill(start_date="2024-01-01", end_date="2024-12-31")
ALL_DAYS = DAILY.keys()


@given(
    now=st.datetimes(
        min_value=datetime(2024, 1, 1),
        max_value=datetime(2025, 6, 1),
        timezones=st.just(timezone.utc),
    ),
    recorded=st.sets(st.sampled_from(ALL_DAYS), max_size=20),
)
def test_unknown_is_exactly_the_unrecorded_keys_ended_before_the_horizon(
    now: datetime, recorded: set[str]
) -> None:
    horizon = now - RUN_RETENTION
    history: dict[str, KeyState] = dict.fromkeys(recorded, "succeeded")
    marked = with_unknown(history, DAILY, ALL_DAYS, horizon)
    for key in ALL_DAYS:
        window = DAILY.window(key)
        ended = window.end.timestamp() <= horizon.timestamp()
        expected = "succeeded" if key in recorded else "unknown" if ended else None
        assert marked.get(key) == expected, key


@pytest.mark.spark
def test_catchup_by_data_launches_exactly_the_absent_keys_beyond_the_horizon(
    spark: Any, warehouse: Path, root: Path, emu: JobsEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = deploy(emu)
    run_elsewhere(emu, job_id, FIVE_DAYS)  # their runs expire below
    write_days(warehouse, [FIVE_DAYS[0]])
    write_days(warehouse, FIVE_DAYS[3:])  # one ranged run over consecutive keys
    emu.advance_days(90)
    later = datetime.now(timezone.utc) + LATER

    def catchup(by: str) -> list[str]:
        request = BackfillRequest(
            "presence_orders",
            start=FIVE_DAYS[0],
            end=FIVE_DAYS[-1],
            catchup=True,
            by=by,  # type: ignore[arg-type]
            connection=Connection(job_id=job_id),
            pacing=Pacing(poll_interval=0.05),
        )
        prepared = plan_backfill(
            request,
            root=root,
            registry=REGISTRY,
            warehouse=warehouse,
            client=emu.workspace_client(),
            dry_run=True,
            now=later,
        )
        return [key for s in prepared.plan.slices for key in s.keys]

    assert catchup("runs") == []  # every key unknown: left alone
    with stand_in_cluster(emu, job_id, warehouse, monkeypatch) as errors:
        assert catchup("data") == FIVE_DAYS[1:3]
    assert errors == []


def test_unknown_is_a_state_of_its_own_in_the_grid_the_legend_and_the_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    states: dict[str, KeyState] = {DAYS[0]: "succeeded", DAYS[1]: "unknown", DAYS[2]: "unknown"}
    grid = build_grid("nightly", "daily", DAYS[:4], states)
    console = Console(file=io.StringIO(), width=80)
    console.print(grid_table(grid))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    row = next(line for line in text.splitlines() if line.startswith("2024-03"))
    assert row.split()[1:] == ["■", "?", "?", "·"]
    assert "· missing 1  ? unknown 2" in text
    page = grid_html(grid)
    cells = re.findall(r'<td class="(\w+)" title="([^"]*)">([^<]*)</td>', page)
    assert (cells[1][0], cells[1][2]) == ("unknown", "?")
    assert '<span class="unknown">&nbsp;?&nbsp;</span> unknown 2' in page  # the legend
    assert re.search(r"td\.unknown, span\.unknown \{[^}]*dotted", page)  # not colour alone
    folded = fold_grid(grid, "week")
    assert "? unknown" in fold_note(grid, folded)
    worst = [c.worst for row in folded.rows for c in row.cells if c is not None]
    assert worst == ["unknown", "missing"]  # ISO weeks 9 (1-3 March) and 10 (4 March)

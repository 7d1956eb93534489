"""The emulated ``runs/list`` lists in a documented order, never by run id."""

from __future__ import annotations

import pytest

from databricks_bundle_decorators.testing import JobsEmulator

PARAMS = {"backfill_key": ""}


def listed_ids(emu: JobsEmulator, job_id: int, *, completed_only: bool = False) -> list[int]:
    runs = emu.workspace_client().jobs.list_runs(job_id=job_id, completed_only=completed_only)
    return [r.run_id or 0 for r in runs]


def test_end_time_order_lists_the_last_run_to_end_first(emu: JobsEmulator) -> None:
    emu.runs_list_order = "end_time"
    job_id = emu.create_job("j", parameters=PARAMS, max_concurrent_runs=10)
    w = emu.workspace_client()
    for key in ("a", "b", "c"):
        emu.set_outcome(key, hold=True)
    a, b, c = (w.jobs.run_now(job_id, job_parameters={"backfill_key": k}).run_id for k in "abc")
    emu.release("c")
    emu.release("a")
    ends = {r.run_id: r.ended for r in emu.runs(job_id)}
    assert ends[a] is not None and ends[c] is not None and ends[b] is None
    # b has not ended: it is placed by its start time, the earliest of all
    expected = sorted(
        (r for r in w.jobs.list_runs(job_id=job_id)),
        key=lambda r: (-(r.end_time or r.start_time or 0), r.run_id or 0),
    )
    assert listed_ids(emu, job_id) == [r.run_id for r in expected]
    assert listed_ids(emu, job_id, completed_only=True)[-1] in (a, c)
    assert listed_ids(emu, job_id)[-1] == b


def test_pages_follow_the_order_and_ties_list_the_lowest_id_first(emu: JobsEmulator) -> None:
    job_id = emu.create_job("j", parameters=PARAMS, max_concurrent_runs=100)
    w = emu.workspace_client()
    emu.set_next_run_id(20_000)
    late_high = w.jobs.run_now(job_id).run_id  # the first run has the highest id
    emu.set_next_run_id(100)
    ids = [late_high] + [w.jobs.run_now(job_id).run_id for _ in range(6)]
    emu.wait_until_idle()
    for order in ("start_time", "end_time"):
        emu.runs_list_order = order
        runs = list(w.jobs.list_runs(job_id=job_id, limit=2))  # four pages by token
        field = "end_time" if order == "end_time" else "start_time"
        expected = sorted(runs, key=lambda r: (-(getattr(r, field) or 0), r.run_id or 0))
        assert [r.run_id for r in runs] == [r.run_id for r in expected]
        assert sorted(r.run_id or 0 for r in runs) == sorted(ids)


def test_the_order_and_next_id_settings_refuse_bad_values(emu: JobsEmulator) -> None:
    with pytest.raises(ValueError, match="start_time"):
        emu.runs_list_order = "run_id"
    emu.create_job("j")
    run_id = emu.workspace_client().jobs.run_now(emu.create_job("k")).run_id
    assert run_id is not None
    with pytest.raises(ValueError, match="taken"):
        emu.set_next_run_id(run_id)


def test_unordered_lists_neither_by_time_nor_by_id_and_pages_stay_stable(
    emu: JobsEmulator,
) -> None:
    emu.runs_list_order = "unordered"
    job_id = emu.create_job("j", parameters=PARAMS, max_concurrent_runs=100)
    w = emu.workspace_client()
    started = [
        w.jobs.run_now(job_id, job_parameters={"backfill_key": str(i)}).run_id for i in range(60)
    ]
    emu.wait_until_idle()
    listed = listed_ids(emu, job_id)  # three pages of 25, 25 and 10

    assert sorted(listed) == sorted(started)  # each once, across the pages
    assert listed not in (started, started[::-1], sorted(started), sorted(started, reverse=True))
    assert listed_ids(emu, job_id) == listed  # the same order every time

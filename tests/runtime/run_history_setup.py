"""A job's run history in the Jobs API emulator, for ``CatchUp(since="last_success")``.

In start order, the runs are (oldest first):

- A ``2024-03-04``: succeeds, but is held and ends after every other run;
- B ``2024-03-05..2024-03-06``: succeeds -- the newest successful run that counts;
- C ``2024-03-09``: fails;
- D an undo run (no key), E a ``dbxdec backfill`` run of ``2024-03-10`` (its backfill id):
  both succeed and do not count;
- 25 failed runs of ``2024-03-11``: B is on the second ``runs/list`` page in either order.

Each run starts a second after the one before (the emulator's clock is moved, no sleep).
"""

from __future__ import annotations

from typing import Any

from databricks_bundle_decorators.testing import JobsEmulator

TOKEN = "dapi-run-history"
PARAMS = {
    "backfill_key": "",
    "backfill_start_key": "",
    "backfill_exact": "false",
    "backfill_run_time": "",
    "dbxdec_order": "",
}
NEWEST_SUCCESS_KEY = "2024-03-06"
FAILED_AFTER = 25


def build_history(emu: JobsEmulator, name: str) -> tuple[int, int]:
    """Create job ``name`` with the runs above; return its id and B's run id."""
    emu.default_duration = 0.01
    job_id = emu.create_job(name, parameters=PARAMS, max_concurrent_runs=100)
    emu.set_outcome("2024-03-04", job_id=job_id, hold=True)
    emu.set_outcome("2024-03-09", job_id=job_id, result="FAILED")
    emu.set_outcome("2024-03-11", job_id=job_id, result="FAILED")
    client = emu.workspace_client()
    runs: list[dict[str, Any]] = [
        {"backfill_key": "2024-03-04"},
        {"backfill_start_key": "2024-03-05", "backfill_key": "2024-03-06"},
        {"backfill_key": "2024-03-09"},
        {"dbxdec_order": '{"kind": "undo", "backfill_id": "bf-0"}'},
        {"backfill_key": "2024-03-10", "dbxdec_order": '{"kind": "task", "backfill_id": "bf-1"}'},
        *([{"backfill_key": "2024-03-11"}] * FAILED_AFTER),
    ]
    ids = []
    for params in runs:
        ids.append(client.jobs.run_now(job_id, job_parameters=params).run_id)
        emu.advance_days(1 / 86_400)  # the next run starts a second later
    emu.wait_for(
        lambda rs: sum(not r.active for r in rs) == len(runs) - 1,
        job_id=job_id,
        what="every run but the held one ended",
    )
    emu.advance_days(1 / 86_400)
    emu.release("2024-03-04")  # A ends last: first in end-time order
    emu.wait_until_idle()
    return job_id, int(ids[1])

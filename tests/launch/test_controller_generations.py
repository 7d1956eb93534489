"""A detached backfill resumed after its controller runs were removed (60 days) starts a
fresh generation: the idempotency token of a removed run cannot start a run again.

"Runs are automatically removed after 60 days" and "If a run with the provided token is
deleted, an error is returned" (databricks-sdk ``JobsAPI.get_run_output`` /
``JobsAPI.run_now``; the emulator follows both). The generation a start used is recorded
beside the journal, so the next one is counted from the record when the listing forgot.
"""

from __future__ import annotations

import pytest
from databricks.sdk.errors import InvalidParameterValue

from databricks_bundle_decorators.backfill.wire.controller import handover_token
from databricks_bundle_decorators.launch.control.controller import start_controller
from databricks_bundle_decorators.launch.ledger.journal import journal_folder
from databricks_bundle_decorators.launch.steer.steering import (
    next_generation,
    recorded_generation,
)
from databricks_bundle_decorators.testing import JobsEmulator

BACKFILL = "nightly-20240101T000000-ab12"


def test_a_backfill_resumed_after_its_runs_were_removed_starts_a_fresh_generation(
    emu: JobsEmulator,
) -> None:
    client = emu.workspace_client()
    controller, job_id = emu.create_job("dbxdec_controller"), emu.create_job("nightly")
    client.workspace.mkdirs(journal_folder(job_id, BACKFILL))
    first = start_controller(client, controller, backfill_id=BACKFILL, job_id=job_id, generation=1)
    emu.wait_for(
        lambda runs: any(r.run_id == first.run_id and not r.active for r in runs),
        what="the first controller run ended",
    )
    assert recorded_generation(client, job_id, BACKFILL) == 1

    emu.advance_days(61)  # the run is removed: the listing no longer shows it
    assert list(client.jobs.list_runs(job_id=controller)) == []
    with pytest.raises(InvalidParameterValue, match="was deleted"):  # its token is spent
        client.jobs.run_now(controller, idempotency_token=handover_token(BACKFILL, 1))

    generation = next_generation(client, controller, job_id=job_id, backfill_id=BACKFILL)
    assert generation == 2  # counted from the record (the listing alone gave 1)
    run = start_controller(
        client, controller, backfill_id=BACKFILL, job_id=job_id, generation=generation
    )
    assert run.generation == 2 and recorded_generation(client, job_id, BACKFILL) == 2

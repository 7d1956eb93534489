"""The controller runs of a detached backfill: runs of the ``dbxdec_controller`` job with
its ``backfill_id``; *active* while ``runs/list?active_only=true`` lists one ("An active
run is a run in the QUEUED, PENDING, RUNNING, or TERMINATING", databricks-sdk
``JobsAPI.list_runs``). Each start records its generation beside the journal
(``generation.json``): "Runs are automatically removed after 60 days"
(``JobsAPI.get_run_output``), and a removed run's token cannot start one again
(``JobsAPI.run_now``), so the next generation is above both the listing and the record.
"""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING

from ...backfill.wire.controller import CONTROLLER_JOB, controller_token
from ...errors import DbxdecError
from ...runtime.triggers.run_history import run_parameters
from ..backends.databricks_backend import find_job
from ..ledger.journal import journal_place
from ..status.journal_status import JournalPlace
from ..workspace.workspace import workspace_errors

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient
    from databricks.sdk.service.jobs import BaseRun
GENERATION_FILE = "generation.json"


def controller_job_id(place: JournalPlace) -> int:
    """The deployed controller job of ``place``'s deployment (:class:`UsageError`: not
    deployed)."""
    remote = find_job(
        place.client, CONTROLLER_JOB, name_prefix=place.name_prefix, dev_mode=place.dev_mode
    )
    return remote.job_id


def controller_runs(
    client: WorkspaceClient, controller_id: int, backfill_id: str, *, active_only: bool
) -> list[BaseRun]:
    """The controller job's runs for backfill ``backfill_id`` (its active ones only)."""
    with workspace_errors(client.config.host):
        runs = client.jobs.list_runs(job_id=controller_id, active_only=active_only or None)
        return [run for run in runs if run_parameters(run).get("backfill_id") == backfill_id]


def next_generation(
    client: WorkspaceClient, controller_id: int, *, job_id: int, backfill_id: str
) -> int:
    """One more than the highest generation of the backfill's controller runs listed or
    recorded (1 when none)."""
    runs = controller_runs(client, controller_id, backfill_id, active_only=False)
    seen = [int(g) for run in runs if (g := run_parameters(run).get("generation", "")).isdigit()]
    return max([*seen, recorded_generation(client, job_id, backfill_id)]) + 1


def recorded_generation(client: WorkspaceClient, job_id: int, backfill_id: str) -> int:
    """The highest generation recorded as started (0: none, or a damaged record)."""
    with workspace_errors(client.config.host):
        text = journal_place(client, job_id, backfill_id).read(GENERATION_FILE)
    try:
        return int(json.loads(text or "{}").get("generation", 0))
    except (ValueError, TypeError, AttributeError):
        return 0


def record_generation(client: WorkspaceClient, job_id: int, backfill_id: str, number: int) -> None:
    """Record that generation ``number`` started (best effort)."""
    with contextlib.suppress(DbxdecError, OSError):  # SDK errors are OSErrors
        if number > recorded_generation(client, job_id, backfill_id):
            place = journal_place(client, job_id, backfill_id)
            place.write(GENERATION_FILE, json.dumps({"generation": number}) + "\n")


def start_controller(place: JournalPlace, controller_id: int, *, suffix: str) -> int:
    """Run-now the controller for ``place``'s backfill with token
    ``dbxdec-ctl-<id>-<suffix>``; the run id."""
    client = place.client
    generation = next_generation(
        client, controller_id, job_id=place.job_id, backfill_id=place.backfill_id
    )
    with workspace_errors(client.config.host):
        waiter = client.jobs.run_now(
            controller_id,
            job_parameters={
                "backfill_id": place.backfill_id,
                "job_id": str(place.job_id),
                "generation": str(generation),
            },
            idempotency_token=controller_token(place.backfill_id, suffix),
        )
    record_generation(client, place.job_id, place.backfill_id, generation)
    return int(waiter.run_id)

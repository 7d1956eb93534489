"""The controller runs of a detached backfill, seen from a steering command.

The controller is a run of the job ``dbxdec_controller`` that ``dbxdec generate`` adds
to the bundle, with job parameters ``backfill_id``, ``job_id`` and ``generation``. Its
deployment is found like any job's (the target's name prefix). A backfill's controller
is *active* while a run of that job with its ``backfill_id`` is QUEUED, PENDING,
RUNNING, BLOCKED or the like: ``runs/list?active_only=true`` ("If active_only is true,
only active runs are included in the results; otherwise, lists both active and
completed runs. An active run is a run in the QUEUED, PENDING, RUNNING, or TERMINATING",
databricks-sdk-py ``JobsAPI.list_runs``), so a controller still queued counts too.

Generations: each start of a controller run records its generation beside the journal
(``generation.json``), because the listing forgets: "Runs are automatically removed after
60 days" (``JobsAPI.get_run_output``), and a generation's idempotency token whose run was
removed cannot start a run again ("If a run with the provided token is deleted, an error
is returned", ``JobsAPI.run_now``). So the next generation is one more than the highest
of the listing and the record: a backfill paused for months resumes with a fresh token.
"""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING

from ...backfill.wire.controller import CONTROLLER_JOB, controller_token
from ...errors import DbxdecError
from ...runtime.triggers.run_history import run_parameters
from ..backends.databricks_backend import find_job
from ..ledger.journal_read import journal_place
from ..status.journal_status import JournalPlace
from ..workspace.workspace import workspace_errors

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient
    from databricks.sdk.service.jobs import BaseRun


def controller_job_id(place: JournalPlace) -> int:
    """The deployed controller job of ``place``'s deployment.

    Raises:
        UsageError: it is not deployed (the message says how to deploy it).
    """
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


GENERATION_FILE = "generation.json"


def next_generation(
    client: WorkspaceClient, controller_id: int, *, job_id: int, backfill_id: str
) -> int:
    """One more than the highest generation of the backfill's controller runs listed or
    recorded (1 when none), so a controller started now and its handovers reuse no
    earlier run's token, even one whose run was removed."""
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
    """Record that generation ``number`` started (best effort: a record lost in an outage
    is written again by the next start, long before the listing forgets the run)."""
    with contextlib.suppress(DbxdecError, OSError):  # SDK errors are OSErrors
        if number > recorded_generation(client, job_id, backfill_id):
            place = journal_place(client, job_id, backfill_id)
            place.write(GENERATION_FILE, json.dumps({"generation": number}) + "\n")


def start_controller(place: JournalPlace, controller_id: int, *, suffix: str) -> int:
    """Run-now the controller for ``place``'s backfill with token
    ``dbxdec-ctl-<id>-<suffix>`` (the same steering request sent twice starts one run);
    return the run id."""
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

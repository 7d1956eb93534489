"""Starting a controller run: by ``--detach`` (generation 1) and by a handover (g + 1).

Every start is a ``run-now`` of the controller job with the idempotency token
:func:`~...backfill.wire.controller.handover_token` of the backfill and generation: a
reply lost and re-sent, or two runs of one generation handing over at once, start one
run (the Jobs API answers a token it has seen with the run it started: databricks-sdk
``JobsAPI.run_now``, ``idempotency_token``). A token can only name a run that already
ended -- that generation lost its start to a run of the generation before it, which
then went on -- so the next generation number is tried (a few at most).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...backfill.wire.controller import (
    BACKFILL_ID_PARAM,
    CONTROLLER_JOB,
    GENERATION_PARAM,
    JOB_ID_PARAM,
    handover_token,
)
from ...errors import UsageError
from ..backends.databricks_backend import find_job
from ..steer.controller_runs import record_generation
from ..workspace.workspace import workspace_errors

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

_ENDED = ("TERMINATED", "SKIPPED", "INTERNAL_ERROR")
_GENERATIONS_TRIED = 5


@dataclass(frozen=True, slots=True)
class ControllerRun:
    """A started controller run: which run, of which generation."""

    run_id: int
    generation: int


def controller_job_id(
    client: WorkspaceClient, *, name_prefix: str | None = None, dev_mode: bool = False
) -> int:
    """The deployed ``dbxdec_controller`` job's id.

    Raises:
        UsageError: it is not deployed (one line: what to do).
    """
    try:
        return find_job(client, CONTROLLER_JOB, name_prefix=name_prefix, dev_mode=dev_mode).job_id
    except UsageError:
        raise UsageError(
            f"no deployed job {CONTROLLER_JOB!r}, which --detach runs: generate and deploy "
            "the bundle again (dbxdec deploy -t TARGET), or run without --detach"
        ) from None


def start_controller(
    client: WorkspaceClient,
    controller_job: int,
    *,
    backfill_id: str,
    job_id: int,
    generation: int,
    parameters: dict[str, str] | None = None,
) -> ControllerRun:
    """``run-now`` generation ``generation`` of the backfill's controller (or the next
    generation whose token has not started a run that already ended).

    Args:
        parameters: More job parameters (tests: a short handover time).
    """
    with workspace_errors(client.config.host):
        for number in range(generation, generation + _GENERATIONS_TRIED):
            job_parameters = {
                **(parameters or {}),
                BACKFILL_ID_PARAM: backfill_id,
                JOB_ID_PARAM: str(job_id),
                GENERATION_PARAM: str(number),
            }
            run_id = client.jobs.run_now(
                controller_job,
                job_parameters=job_parameters,
                idempotency_token=handover_token(backfill_id, number),
            ).run_id
            state = client.jobs.get_run(run_id).state
            life_cycle = state.life_cycle_state.value if state and state.life_cycle_state else ""
            if life_cycle not in _ENDED:
                record_generation(client, job_id, backfill_id, number)
                return ControllerRun(int(run_id), number)
    raise UsageError(
        f"could not start a controller run of backfill {backfill_id}: generations "
        f"{generation}..{number} have all ended; start one with: dbxdec backfill --resume "
        f"{backfill_id} --detach"
    )

"""``--detach``: hand a planned backfill to a controller run in the workspace and return.
Its keys are claimed and at once released (an overlap is refused here), its journal is
created and generation 1 of its controller started; this process launches nothing.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import UsageError
from ..backends.databricks_backend import DatabricksBackend
from ..guard.pause.pause_permission import require_pausable
from ..guard.pause.trigger_pause import release_triggers_detached
from ..ledger.claims import this_host, this_user
from ..ledger.journal import JournalStore, create_journal
from ..prepare.prepared import PreparedBackfill
from ..run.blocking import ledger_jobs
from ..steer.steering import next_generation
from ..workspace.job_access import runs_as
from ..workspace.target import read_target
from ..workspace.workspace import workspace_errors
from .controller import ControllerRun, controller_job_id, plan_hold, start_controller, start_hold

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

LOCAL_REFUSAL = (
    "--detach hands the backfill to a controller run in the workspace; a --local backfill "
    "runs on this machine: drop --detach or --local"
)


@dataclass(frozen=True, slots=True)
class Detached:
    """A backfill handed to its controller run."""

    backfill_id: str
    job_id: int
    controller: ControllerRun
    run_page: str
    target: str | None = None

    @property
    def follow(self) -> str:
        """The command that follows the backfill from any machine (with the backfill's
        ``-t TARGET``: it finds the deployed jobs)."""
        where = f" -t {shlex.quote(self.target)}" if self.target else ""
        return f"dbxdec backfill watch {self.backfill_id}{where}"


def detach_backfill(
    prepared: PreparedBackfill, *, root: Path, client: WorkspaceClient | None = None
) -> Detached:
    """Create the journal of ``prepared`` and start its controller; a ``--downstream``
    backfill's dependants' triggers are paused here (:func:`.controller.start_hold`) once the
    controller job's principal is known to hold CAN MANAGE on each.

    Raises:
        UsageError: a local backfill; the keys are claimed by another backfill; no
            deployed controller job; a dependant's trigger could not be paused.
        WorkspaceRejected, WorkspaceUnreachable: refused (nothing was started), or no
            answer.
    """
    ledger, backend, spec = prepared.ledger, prepared.backend, prepared.ledger.backend
    downstream = prepared.workspace
    remote = isinstance(backend, DatabricksBackend) or downstream is not None
    if spec.kind == "local" or not remote:
        raise UsageError(LOCAL_REFUSAL)
    job_id = spec.job_id
    assert job_id is not None
    if downstream is not None:  # the controller finds every job from the journal alone
        ledger.backend = spec = replace(spec, job_ids=dict(downstream.job_ids))
        ledger.dirty = True
        client = client or downstream.client
    elif isinstance(backend, DatabricksBackend):
        client = client or backend.client
    assert client is not None
    try:
        target = read_target(root, spec.target) if spec.target else None
        controller_job = controller_job_id(
            client,
            name_prefix=target.name_prefix if target else None,
            dev_mode=bool(target and target.dev_mode),
        )
        hold = None
        if downstream is not None:  # its controller runs hold the triggers: before anything
            # starts, their principal must be able to edit each dependant
            hold = plan_hold(downstream.registry, ledger_jobs(ledger), downstream.job_ids)
            if hold.dependants:
                require_pausable(
                    client,
                    hold.dependants,
                    option="--downstream",
                    what="trigger",
                    principal=runs_as(client, controller_job),
                    whose="the controller job's principal",
                )
        if prepared.guard is not None:  # an overlapping backfill is refused now
            with prepared.guard.hold(ledger, lambda _: None):
                pass
        generation = 1
        if isinstance(ledger.bound_store, JournalStore):  # --resume ID --detach of a
            # detached backfill: its journal exists; the next controller generation goes on
            ledger.save_if_dirty()
            generation = next_generation(
                client, controller_job, job_id=job_id, backfill_id=ledger.id
            )
        else:
            create_journal(client, ledger, job_id=job_id, writer=f"cli:{this_user()}@{this_host()}")
        if hold is not None:  # the dependants' triggers: paused now (start_hold)
            with workspace_errors(client.config.host):
                start_hold(
                    client,
                    hold,
                    job_id=job_id,
                    backfill_id=ledger.id,
                    controller_job_id=controller_job,
                )
        try:
            run = start_controller(
                client,
                controller_job,
                backfill_id=ledger.id,
                job_id=job_id,
                generation=generation,
            )
        except BaseException:
            if hold is not None:  # no controller holds them: put them back
                release_triggers_detached(client, backfill_id=ledger.id, jobs=hold.dependants)
            raise
    finally:
        if backend is not None:
            backend.close()
    page = f"{str(client.config.host or '').rstrip('/')}/jobs/{controller_job}/runs/{run.run_id}"
    return Detached(ledger.id, job_id, run, page, spec.target)

"""What ``dbxdec backfill``, ``catchup`` and ``--resume`` were asked to do, as records.

The CLI builds one of these from its options and hands it to :mod:`.launcher`; nothing
else crosses that seam. A test or a script builds the same records without a terminal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from .history import RerunMode
from .options import Pacing, default_of
from .plan import Order

CatchupBy = Literal["runs", "data"]
BatchSize = int | Literal["auto"]
"""Keys per run, or ``"auto"``: chosen from the job's run durations (:mod:`.auto_batch`)."""
CATCHUP_BY: tuple[CatchupBy, ...] = ("runs", "data")


@dataclass(frozen=True, slots=True)
class Connection:
    """Where runs go: ``local``, or a workspace (host/profile) and how to find the job.

    A value of the request; reaching the workspace is ``guard.connection.connect_job``.
    """

    local: bool = False
    target: str | None = None
    job_id: int | None = None
    profile: str | None = None
    host: str | None = None


@dataclass(frozen=True, slots=True)
class BackfillRequest:
    """A new backfill (``dbxdec backfill JOB``) or catch-up (``dbxdec catchup JOB``).

    Attributes:
        job: The job name.
        start, end, keys, order, batch_size, exact, final_sync, params: The plan (see
            :func:`.plan.build_plan`).
        rerun: All keys, only failed ones, or only keys never run.
        catchup: Only keys without a success (``by="runs"``: in the run history) or
            without data (``by="data"``: partitions missing or empty in the job's
            output tables).
        canary: The first this many runs go alone; the rest only if they all
            succeed (see :mod:`..policy.canary`).
        connection: Where the runs go.
        pacing: Concurrency, retries and polling.
        context_args: The CLI arguments that select the project (``--project``,
            ``--pipelines``), repeated in printed rerun and resume commands.
        force: Take over expired claims of other backfills on the same keys.
        new: Start afresh although the last backfill of the keys did not finish
            (see :mod:`.reruns`).
        pause_schedule: Pause the job's schedule while the backfill runs.
        dbu_per_hour: DBU per hour of one run, for the dry run's estimate.
        force_rewrite: Append-once outputs rewrite the keys they already hold
            (``backfill_force_rewrite=true`` in every run; see
            :mod:`..runtime.io.append_once`).
        full_refresh: Rebuild the job's tables in staging tables and swap them in at
            the end, all at once (see :mod:`.full_refresh`).
        target_run_seconds: The run length ``batch_size="auto"`` aims at.
        checks: Whether the runs judge their checks (``False``: ``--no-checks``,
            ``backfill_checks=off`` in every run).
        tasks, skip_tasks: Run only these tasks, or all but these (see
            :mod:`..runtime.programs.task_subset`); empty: every task.
    """

    job: str
    start: str | None = None
    end: str | None = None
    keys: tuple[str, ...] = ()
    order: Order = "forward"
    batch_size: BatchSize = 1
    rerun: RerunMode = "all"
    catchup: bool = False
    by: CatchupBy = "runs"
    exact: bool = False
    final_sync: bool = False
    params: Mapping[str, str] = field(default_factory=dict)
    canary: int = 0
    diff_gate: float | None = None
    connection: Connection = field(default_factory=Connection)
    pacing: Pacing = field(default_factory=Pacing)
    context_args: tuple[str, ...] = ()
    force: bool = False
    new: bool = False
    pause_schedule: bool = False
    dbu_per_hour: float | None = None
    force_rewrite: bool = False
    full_refresh: bool = False
    target_run_seconds: float = default_of("target_run_seconds")
    checks: bool = True
    downstream: bool = False  # --downstream: also every job reading what the keys write
    tasks: tuple[str, ...] = ()
    skip_tasks: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ResumeRequest:
    """``dbxdec backfill --resume ID``: finish a backfill from its ledger.

    Only the pacing may change; ``connection`` may name another host or profile for
    the same workspace. ``force`` and ``context_args`` as in :class:`BackfillRequest`.
    """

    backfill_id: str
    connection: Connection = field(default_factory=Connection)
    pacing: Pacing = field(default_factory=Pacing)
    context_args: tuple[str, ...] = ()
    force: bool = False

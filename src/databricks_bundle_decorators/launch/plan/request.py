"""What ``dbxdec backfill``, ``catchup`` and ``--resume`` were asked to do, as records.

The CLI builds one of these from its options and hands it to :mod:`.launcher`; nothing
else crosses that seam. A test or a script builds the same records without a terminal.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Literal

from ...definitions import JobDefinition
from .history import KeyHistory, RerunMode
from .options import LaunchOptions, Pacing
from .plan import BackfillPlan, build_plan, with_options

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
        start, end, keys, batch_size: The keys and keys per run (see
            :func:`.plan.build_plan`); ``batch_size="auto"``: chosen from past runs.
        rerun: All keys, only failed ones, or only keys never run.
        catchup: Only keys without a success (``by="runs"``: in the run history) or
            without data (``by="data"``: partitions missing or empty in the job's
            output tables).
        options: The backfill's options as the ledger keeps them (order, exact, final
            sync, params, canary, diff gate, schedule pause, force rewrite, full
            refresh, checks, the target run length); the launcher fills in the
            concurrency, keys per run, tasks and pacing.
        connection: Where the runs go.
        pacing: Concurrency, retries and polling.
        context_args: The CLI arguments that select the project (``--project``,
            ``--pipelines``), repeated in printed rerun and resume commands.
        force: Take over expired claims of other backfills on the same keys.
        new: Start afresh although the last backfill of the keys did not finish
            (see :mod:`.reruns`).
        dbu_per_hour: DBU per hour of one run, for the dry run's estimate.
        downstream: Also every job reading what the keys write.
        tasks, skip_tasks: Run only these tasks, or all but these (see
            :mod:`..runtime.programs.task_subset`); empty: every task.
    """

    job: str
    start: str | None = None
    end: str | None = None
    keys: tuple[str, ...] = ()
    batch_size: BatchSize = 1
    rerun: RerunMode = "all"
    catchup: bool = False
    by: CatchupBy = "runs"
    options: LaunchOptions = field(default_factory=LaunchOptions)
    connection: Connection = field(default_factory=Connection)
    pacing: Pacing = field(default_factory=Pacing)
    context_args: tuple[str, ...] = ()
    force: bool = False
    new: bool = False
    dbu_per_hour: float | None = None
    downstream: bool = False
    tasks: tuple[str, ...] = ()
    skip_tasks: tuple[str, ...] = ()

    def plan(
        self,
        job: JobDefinition,
        history: KeyHistory | None = None,
        only: Collection[str] | None = None,
        *,
        batch_size: int = 1,
    ) -> BackfillPlan:
        """The plan of the request's keys (``history``, ``only``: those selected from them).

        Raises:
            UsageError: bad keys or options; a job without a backfill definition.
        """
        options = self.options
        plan = build_plan(
            job,
            start=self.start,
            end=self.end,
            keys=self.keys,
            order=options.order,
            batch_size=batch_size,
            rerun=self.rerun if history is not None else "all",
            history=history,
            exact=options.exact,
            final_sync=options.final_sync or options.full_refresh,  # a full refresh's swap
            params=options.params,
            only=None if only is None else frozenset(only),
        )
        return with_options(plan, checks=options.checks)


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

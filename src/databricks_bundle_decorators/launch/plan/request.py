"""What ``dbxdec backfill``, ``catchup`` and ``--resume`` were asked to do, as records the
CLI (or a test) builds and hands to :mod:`..launcher`.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Literal

from ...definitions import JobDefinition, Registry
from .history import KeyHistory, RerunMode
from .options import LaunchOptions, Pacing
from .plan import BackfillPlan, build_plan, with_options

CatchupBy = Literal["runs", "data"]
BatchSize = int | Literal["auto"]
"""Keys per run, or ``"auto"``: chosen from the job's run durations (:mod:`.auto_batch`)."""
CATCHUP_BY: tuple[CatchupBy, ...] = ("runs", "data")


@dataclass(frozen=True, slots=True)
class Connection:
    """Where runs go: ``local``, or a workspace (target, host, profile) and the job's id."""

    local: bool = False
    target: str | None = None
    job_id: int | None = None
    profile: str | None = None
    host: str | None = None


@dataclass(frozen=True, slots=True)
class BackfillRequest:
    """A new backfill (``dbxdec backfill JOB``) or catch-up (``dbxdec catchup JOB``).

    Attributes:
        start, end, keys, batch_size: The keys (see :func:`.plan.build_plan`) and keys
            per run (``"auto"``: chosen from past runs).
        catchup: Only keys without a success (``by="runs"``) or without data (``"data"``).
        options: The options the ledger keeps; the launcher fills in the concurrency,
            keys per run, tasks and pacing.
        context_args: The CLI arguments that select the project, repeated in printed
            rerun and resume commands.
        force: Take over expired claims of other backfills on the same keys.
        new: Start afresh although the last backfill of the keys did not finish.
        dbu_per_hour: DBU per hour of one run, for the dry run's estimate.
        downstream: Also every job reading what the keys write.
        allow_missing_upstream: Go on although upstream jobs have no data for keys the
            job's windows read (else refused before launching).
        tasks, skip_tasks: Run only these tasks, or all but these.
        started_by: Who launches it, as the ledger records it (default: this machine's
            user; the backfill app: the viewer's workspace identity).
        because: Why it is launched, as the ledger records it (``dbxdec restate
            --because``; ``""``: not said).
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
    allow_missing_upstream: bool = False
    started_by: str = ""
    because: str = ""

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
    """``dbxdec backfill --resume ID``: finish a backfill from its ledger; only the pacing may
    change, and ``connection`` may name another host or profile of the workspace.
    """

    backfill_id: str
    connection: Connection = field(default_factory=Connection)
    pacing: Pacing = field(default_factory=Pacing)
    context_args: tuple[str, ...] = ()
    force: bool = False


def full_range_runs(registry: Registry, request: BackfillRequest) -> int | None:
    """The number of runs of ``request`` when it launches every key of its job's
    definition, so the command can ask first (the keys with ``--batch-size auto``);
    ``None`` when it names a range or keys, or picks keys from history.

    Raises:
        UsageError: an unknown job, a job without a backfill definition.
    """
    named = request.start is not None or request.end is not None or bool(request.keys)
    if named or request.rerun != "all" or request.catchup:
        return None
    size = request.batch_size if isinstance(request.batch_size, int) else 1
    return len(request.plan(registry.get(request.job), batch_size=size).slices)

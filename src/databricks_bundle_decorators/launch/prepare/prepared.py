"""A backfill made ready to run: what ``plan_backfill`` and ``prepare_resume`` both return.

Here, below the facade, so that :mod:`.resume` returns it without importing
:mod:`..launcher` (the facade imports the rooms, never the other way).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from ..backends.backends import Backend
from ..estimate.auto_batch import BatchChoice
from ..estimate.estimate import Estimate
from ..guard.downstream_workspace import DownstreamWorkspace
from ..guard.pause.schedule_pause import SchedulePause
from ..ledger.claims import BackfillGuard
from ..ledger.ledger import Ledger
from ..plan.options import LaunchOptions
from ..plan.plan import BackfillPlan
from ..plan.slice_graph import SliceGraph
from .rebatch import Rebatcher


@dataclass
class RunOutcome:
    """How the runs of a :class:`PreparedBackfill` ended, for its ``hold``:
    ``finished``: the scheduler ran to the end (not interrupted, no exception)."""

    finished: bool = False


Hold = Callable[[Callable[[str], None], RunOutcome], AbstractContextManager[None]]
"""Entered around the runs, under the claims (``--downstream`` on Databricks: its
dependants' triggers paused, caught up at the end); gets a function that says a line
and the outcome, filled in before the block is left."""


@dataclass
class PreparedBackfill:
    """A planned backfill with its ledger and a connected backend, ready to run;
    ``guard`` claims its keys while it runs (none for a dry run); ``pause`` pauses
    the job's schedule while it runs (``--pause-schedule``); a dry run has the
    ``estimate`` of its wall time from the job's past runs. With ``--batch-size auto``,
    ``batch_choice`` says which size was chosen and why, and ``rebatcher`` re-chooses
    it as the backfill's runs end. ``unreached``: why a dry run could not reach the workspace.
    ``slice_graph``: a ``--downstream`` backfill's slices across jobs, for its dry run."""

    plan: BackfillPlan
    ledger: Ledger
    backend: Backend | None
    options: LaunchOptions
    warnings: list[str] = field(default_factory=list)
    context_args: tuple[str, ...] = ()
    guard: BackfillGuard | None = None
    pause: SchedulePause | None = None
    estimate: Estimate | None = None
    batch_choice: BatchChoice | None = None
    rebatcher: Rebatcher | None = None
    unreached: str | None = None
    slice_graph: SliceGraph | None = None  # --downstream: the cross-job plan
    hold: Hold | None = None  # --downstream on Databricks: the dependants' triggers
    workspace: DownstreamWorkspace | None = None  # --downstream on Databricks: its jobs

"""A backfill made ready to run: what ``plan_backfill`` and ``prepare_resume`` return."""

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
    """Whether the runs of a :class:`PreparedBackfill` ran to the end, for its ``hold``."""

    finished: bool = False


Hold = Callable[[Callable[[str], None], RunOutcome], AbstractContextManager[None]]
"""Entered around the runs, under the claims (``--downstream`` on Databricks: the
dependants' triggers); given a function that says a line, and the outcome.
"""


@dataclass
class PreparedBackfill:
    """A planned backfill with its ledger and connected backend, ready to run: ``guard``
    claims its keys (none for a dry run), ``pause`` pauses the schedule; a dry run's
    ``estimate`` and ``unreached`` (why the workspace was not reached); ``batch_choice`` and
    ``rebatcher`` for ``--batch-size auto``.
    """

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

"""What a dry run looks at besides the plan: the job's past runs and the estimate made
from them (moved out of :mod:`.launcher`, which stays the facade the CLI calls)."""

from __future__ import annotations

from pathlib import Path

from ...definitions import JobDefinition
from ..guard.connection import ConnectedJob
from ..plan.plan import BackfillPlan
from .billed_estimate import with_past_dbus
from .compute import compute_of_job
from .estimate import (
    Estimate,
    PastRun,
    estimate,
    past_runs_databricks,
    past_runs_local,
)

__all__ = ["dry_run_estimate", "past_runs_of"]


def past_runs_of(job: JobDefinition, root: Path, found: ConnectedJob | None) -> list[PastRun]:
    """The job's past runs: the workspace's, or the local ledgers' for a local backfill
    (and for a dry run that could not reach the workspace)."""
    if found is None:
        return past_runs_local(root, job.name)
    return past_runs_databricks(found.client, found.remote.job_id, job.backfill)


def dry_run_estimate(
    plan: BackfillPlan,
    runs: list[PastRun],
    found: ConnectedJob | None,
    cap: int,
    dbu_per_hour: float | None,
) -> Estimate:
    """The dry run's estimate from the job's past ``runs``."""
    if found is None:
        return estimate(plan, runs, max_concurrent=cap, compute=None)
    compute = compute_of_job(found.client, found.remote.job_id)
    guess = estimate(plan, runs, max_concurrent=cap, compute=compute, dbu_per_hour=dbu_per_hour)
    # a rate the user gave wins; else past DBUs per key, when billing is readable
    return guess if dbu_per_hour is not None else with_past_dbus(guess, plan, found.client, runs)

"""Spark's start-up in a local dry run's estimate: a past local backfill's first run
(which started Spark) minus the median of its others, the median over the project's
latest local backfills; added once when no session runs in this process yet.
"""

from __future__ import annotations

import importlib.util
import statistics
from dataclasses import dataclass, fields
from pathlib import Path

from ..ledger.ledger import list_ledgers
from .estimate import Estimate, format_seconds

__all__ = ["LocalEstimate", "spark_started", "spark_startup_seconds", "with_spark_startup"]

BACKFILLS = 5
"""How many of the latest local backfills the start-up is measured from."""


def spark_startup_seconds(root: Path) -> float | None:
    """Seconds the local Spark took to start in the project's latest local backfills
    (``None``: none with two successful runs).
    """
    found: list[float] = []
    for ledger in list_ledgers(root):  # newest first
        if ledger.backend.kind != "local":
            continue
        runs = sorted(
            (a.submitted_at, a.ended_at - a.submitted_at)
            for record in ledger.slices
            for a in record.attempts
            if a.state == "succeeded" and a.submitted_at is not None and a.ended_at is not None
        )
        if len(runs) >= 2:
            rest = statistics.median(seconds for _, seconds in runs[1:])
            found.append(max(0.0, runs[0][1] - rest))
        if len(found) == BACKFILLS:
            break
    return statistics.median(found) if found else None


def spark_started() -> bool:
    """Whether this process runs a SparkContext already (its runs need no start-up)."""
    if importlib.util.find_spec("pyspark") is None:
        return False
    from pyspark import SparkContext

    return SparkContext._active_spark_context is not None


@dataclass(frozen=True)
class LocalEstimate(Estimate):
    """An :class:`Estimate` of a local backfill whose first run starts Spark
    (``spark_startup_seconds``: ``None`` when not measured yet).
    """

    spark_startup_seconds: float | None = None

    @property
    def wall_seconds(self) -> float:
        return super().wall_seconds + (self.spark_startup_seconds or 0.0)

    @property
    def wall_p90_seconds(self) -> float:
        return super().wall_p90_seconds + (self.spark_startup_seconds or 0.0)

    def lines(self) -> list[str]:
        out = super().lines()
        if not self.sample or not self.runs:
            return out
        startup = self.spark_startup_seconds
        if startup is None:
            out[0] += ", plus the local Spark's start-up (not measured yet)"
        else:
            out[0] += (
                f", of which ~{format_seconds(startup)} the local Spark's start-up "
                "(measured: earlier local backfills' first runs)"
            )
        return out


def with_spark_startup(found: Estimate, root: Path, *, started: bool | None = None) -> Estimate:
    """``found`` with Spark's start-up when a local backfill will start Spark (``started``:
    whether a session runs already; default: asks this process).
    """
    if spark_started() if started is None else started:
        return found
    same = {f.name: getattr(found, f.name) for f in fields(found)}
    return LocalEstimate(**same, spark_startup_seconds=spark_startup_seconds(root))

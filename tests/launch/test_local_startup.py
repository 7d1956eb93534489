"""A local dry run's estimate includes Spark's start-up, measured from past local backfills."""

from __future__ import annotations

from pathlib import Path

from databricks_bundle_decorators.launch.estimate.estimate import (
    PastRun,
    estimate,
    spark_startup_seconds,
    with_spark_startup,
)
from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
)
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice


def plan_of(days: int) -> BackfillPlan:
    return BackfillPlan("daily", tuple(Slice(i, (f"2024-01-{i + 1:02d}",)) for i in range(days)))


def past_backfill(root: Path, seconds: list[float], *, kind: str = "local") -> None:
    """A finished backfill whose runs lasted ``seconds``, one after another."""
    spec = BackendSpec("local") if kind == "local" else BackendSpec("databricks", 1)
    ledger = Ledger.create(root, plan_of(len(seconds)), backend=spec, options=LaunchOptions())
    at = 1000.0
    for record, length in zip(ledger.slices, seconds, strict=True):
        done = Attempt(1, f"t{record.index}", "succeeded", submitted_at=at, ended_at=at + length)
        ledger.update(record.with_attempt(done))
        at += length
    ledger.save()


def test_start_up_is_the_first_runs_excess_over_the_others(tmp_path: Path) -> None:
    assert spark_startup_seconds(tmp_path) is None
    past_backfill(tmp_path, [20.0, 2.0, 3.0, 2.0])  # 18 s more than the median of the rest
    past_backfill(tmp_path, [90.0, 2.0], kind="databricks")  # not local: left out
    past_backfill(tmp_path, [5.0])  # one run: nothing to compare with
    assert spark_startup_seconds(tmp_path) == 18.0


def test_the_estimate_line_adds_and_says_the_start_up_when_spark_is_not_started(
    tmp_path: Path,
) -> None:
    past_backfill(tmp_path, [20.0, 2.0, 2.0, 2.0])
    runs = [PastRun(0.0, 2.0, 1, "succeeded")] * 5
    plain = estimate(plan_of(3), runs, max_concurrent=1, compute=None)

    cold = with_spark_startup(plain, tmp_path, started=False)
    assert cold.wall_seconds == plain.wall_seconds + 18.0 == 24.0
    assert cold.lines()[0].endswith(
        "= ~24.0s wall time, of which ~18.0s the local Spark's start-up "
        "(measured: earlier local backfills' first runs)"
    )
    assert cold.to_json()["spark_startup_seconds"] == 18.0
    assert with_spark_startup(plain, tmp_path, started=True) is plain  # a session runs


def test_an_unmeasured_start_up_is_said_not_guessed(tmp_path: Path) -> None:
    runs = [PastRun(0.0, 2.0, 1, "succeeded")]
    plain = estimate(plan_of(3), runs, max_concurrent=1, compute=None)
    cold = with_spark_startup(plain, tmp_path, started=False)
    assert cold.wall_seconds == plain.wall_seconds
    assert cold.lines()[0].endswith(", plus the local Spark's start-up (not measured yet)")

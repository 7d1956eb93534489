"""Estimates before launch: wall time from the job's last :data:`SAMPLE` successful runs
(a run's time taken to grow with its keys), rounds of ``max_concurrent`` runs, and compute:
DBUs only from a rate the user gives, else node hours of job clusters (:class:`Compute`).

Example:
    >>> from databricks_bundle_decorators.launch.plan.plan import Slice
    >>> plan = BackfillPlan("nightly", tuple(Slice(i, (f"k{i}",)) for i in range(40)))
    >>> runs = [PastRun(0.0, 372.0, 1, "succeeded")] * 25  # 6m12s each
    >>> found = estimate(plan, runs, max_concurrent=4, compute=None)
    >>> found.rounds, format_seconds(found.wall_seconds)
    (10, '1h02m')
"""

from __future__ import annotations

import importlib.util
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ...backfill.base import BackfillDef
from ...definitions import JobDefinition
from ...errors import UsageError, counted
from ...runtime.triggers.run_history import run_parameters
from ..backends.databricks_backend import RUNS_PAGE, run_status
from ..ledger.ledger import list_ledgers
from ..plan.history import keys_of_parameters
from ..plan.plan import BackfillPlan
from ..plan.states import RunState
from ..workspace.workspace import workspace_errors

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

SAMPLE = 25
"""How many of the latest successful runs an estimate is computed from."""

_FINISHED: dict[str, RunState] = {
    s: s for s in (RunState.SUCCEEDED, RunState.FAILED, RunState.CANCELLED)
}
_FIGURES = ("median_seconds", "p90_seconds", "wall_seconds", "wall_p90_seconds", "run_hours")


@dataclass(frozen=True, slots=True)
class PastRun:
    """A finished run (epoch seconds of the backend's clock, ``started`` after any queueing;
    ``keys``: 1 when unknown; ``run_id``: from the workspace).
    """

    started: float
    ended: float
    keys: int
    state: RunState
    run_id: str | None = None

    @property
    def seconds(self) -> float:
        return max(0.0, self.ended - self.started)


def past_runs_databricks(
    client: WorkspaceClient, job_id: int, backfill: BackfillDef | None, *, limit: int = 50
) -> list[PastRun]:
    """The job's latest ``limit`` finished runs, newest first.

    Raises:
        WorkspaceRejected: the credentials or a permission were refused.
        WorkspaceUnreachable: the workspace did not answer.
    """
    found: list[PastRun] = []
    with workspace_errors(client.config.host):
        for run in client.jobs.list_runs(job_id=job_id, completed_only=True, limit=RUNS_PAGE):
            if len(found) == limit:
                break
            if not run.start_time or not run.end_time:
                continue  # skipped runs never started
            state = _FINISHED.get(run_status(run).state)
            if state is None:
                continue
            started = (run.start_time + (run.queue_duration or 0)) / 1000
            keys: tuple[str, ...] = ()
            if backfill is not None:
                keys = keys_of_parameters(backfill, run_parameters(run), started=started)
            ended, count = run.end_time / 1000, max(1, len(keys))
            found.append(PastRun(started, ended, count, state, str(run.run_id)))
    return found


def past_runs_local(root: Path, job: str) -> list[PastRun]:
    """Finished attempts of ``job``'s ``--local`` ledgers, newest first (a Databricks ledger's
    end times are when the launcher noticed).
    """
    found: list[PastRun] = []
    for ledger in list_ledgers(root, job):
        for record in ledger.slices if ledger.backend.kind == "local" else ():
            for attempt in record.attempts:
                start, end = attempt.submitted_at, attempt.ended_at
                state = _FINISHED.get(attempt.state)
                if start is None or end is None or state is None:
                    continue
                found.append(PastRun(start, end, max(1, len(record.keys)), state))
    return sorted(found, key=lambda run: run.started, reverse=True)


def format_seconds(seconds: float) -> str:
    """``4.2s``, ``6m12s``, ``1h02m`` (as the progress display writes durations)."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def _amount(value: float) -> str:
    if value < 1:
        return f"{value:.2g}"
    return f"{value:.1f}" if value < 100 else f"{value:,.0f}"


@dataclass(frozen=True, slots=True)
class Estimate:
    """How long a plan will take and what it costs, with the numbers it came from: ``runs``
    (the final sync included), ``keys_per_run`` (the largest run's), ``finished`` past runs
    looked at, the ``sample`` of successful ones (0: no estimate) with their median and
    90th percentile seconds and median keys, the compute and a user's DBU rate.
    """

    job: str
    runs: int
    final_sync: bool
    max_concurrent: int
    keys_per_run: int
    finished: int = 0
    sample: int = 0
    median_seconds: float = 0.0
    p90_seconds: float = 0.0
    history_keys_per_run: float = 1.0
    compute: Compute | None = None
    dbu_per_hour: float | None = None

    @property
    def scale(self) -> float:
        """How much longer a planned run is than a past one (keys per run ratio)."""
        return self.keys_per_run / self.history_keys_per_run

    @property
    def rounds(self) -> int:
        """Rounds of ``max_concurrent`` runs, the final sync's own round included."""
        return math.ceil((self.runs - self.final_sync) / self.max_concurrent) + self.final_sync

    def _seconds(self, per_run: float, runs: int) -> float:
        return runs * per_run * self.scale + self.final_sync * per_run

    @property
    def wall_seconds(self) -> float:
        return self._seconds(self.median_seconds, self.rounds - self.final_sync)

    @property
    def wall_p90_seconds(self) -> float:
        return self._seconds(self.p90_seconds, self.rounds - self.final_sync)

    @property
    def run_hours(self) -> float:
        """The planned runs' summed durations, in hours (what compute is billed on)."""
        return self._seconds(self.median_seconds, self.runs - self.final_sync) / 3600

    @property
    def node_hours(self) -> tuple[float, float] | None:
        if self.compute is None or self.compute.nodes is None:
            return None
        low, high = self.compute.nodes
        return self.run_hours * low, self.run_hours * high

    @property
    def dbu(self) -> float | None:
        return None if self.dbu_per_hour is None else self.run_hours * self.dbu_per_hour

    def lines(self) -> list[str]:
        """The estimate for people, one statement a line."""
        if self.runs == 0:
            return ["estimate: nothing to run"]
        if not self.sample:
            among = f" among its last {self.finished} finished runs" if self.finished else ""
            what = "successful" if self.finished else "finished"
            return [f"estimate: no {what} runs of {self.job}{among} to estimate from"]
        rounds = f"{self.rounds - self.final_sync} rounds"
        if self.final_sync:
            rounds += " (+1 for the final sync)"
        wall = f"~{format_seconds(self.wall_seconds)} wall time"
        if self.wall_p90_seconds > self.wall_seconds:
            wall += f" (p90 ~{format_seconds(self.wall_p90_seconds)})"
        out = [
            f"estimate: {counted(self.runs - self.final_sync, 'run')}, "
            f"{self.max_concurrent} at once -> "
            f"{rounds} x median {format_seconds(self.median_seconds)} "
            f"(p90 {format_seconds(self.p90_seconds)}) of the last {self.sample} successful "
            f"runs = {wall}"
        ]
        if self.scale != 1:
            out.append(
                "  assumes a run's time grows with its keys: "
                f"{counted(self.keys_per_run, 'key')} per run "
                f"here, {self.history_keys_per_run:g} in those past runs (x{self.scale:.2g})"
            )
        return out + self._compute_lines()

    def _compute_lines(self) -> list[str]:
        compute = self.compute.description if self.compute is not None else "compute unknown"
        if self.dbu is not None:
            rate = f"{self.dbu_per_hour:g} DBU/h per run"
            return [f"  ~{_amount(self.dbu)} DBU at {rate} ({compute})"]
        hours = self.node_hours
        if hours is not None:
            low, high = (_amount(h) for h in hours)
            span = low if low == high else f"{low}-{high}"
            return [
                f"  ~{span} node hours ({compute}); multiply by your node type's DBU rate, "
                "or give a DBU/h per run for a DBU figure"
            ]
        if self.compute is None:
            return []
        why = _NO_DBU_BECAUSE.get(self.compute.kind, "its compute has no node count")
        on = "" if self.compute.kind == "unknown" else f" for {compute}"
        return [f"  DBU not estimated{on}: {why}; --dbu-per-hour RATE gives a DBU figure"]

    def to_json(self) -> dict[str, Any]:
        """The estimate as JSON values (seconds, hours; ``null`` when not estimated)."""
        hours = self.node_hours
        out: dict[str, Any] = {
            **asdict(self),
            "rounds": self.rounds,
            "wall_seconds": self.wall_seconds,
            "wall_p90_seconds": self.wall_p90_seconds,
            "run_hours": self.run_hours,
            "node_hours": list(hours) if hours is not None else None,
            "dbu": self.dbu,
        }
        if not self.sample:
            out.update(dict.fromkeys((*_FIGURES, "node_hours", "dbu")))
        return {**out, "lines": self.lines()}


def estimate(
    plan: BackfillPlan,
    runs: Sequence[PastRun],
    *,
    max_concurrent: int,
    compute: Compute | None,
    dbu_per_hour: float | None = None,
) -> Estimate:
    """Estimate ``plan`` from the finished ``runs`` of its job (any order).

    Raises:
        UsageError: ``max_concurrent`` is below 1 or ``dbu_per_hour`` is not positive.
    """
    if max_concurrent < 1:
        raise UsageError(f"--max-concurrent must be at least 1, got {max_concurrent}")
    if dbu_per_hour is not None and not (0 < dbu_per_hour < math.inf):
        raise UsageError(f"--dbu-per-hour must be a positive number, got {dbu_per_hour:g}")
    keyed = [s for s in plan.slices if not s.is_final_sync]
    latest = sorted((r for r in runs if r.state == "succeeded"), key=lambda r: -r.started)
    sample = latest[:SAMPLE]
    seconds = sorted(r.seconds for r in sample) or [0.0]
    return Estimate(
        plan.job,
        len(plan.slices),
        len(keyed) < len(plan.slices),
        max_concurrent,
        max((len(s.keys) for s in keyed), default=1),
        finished=len(runs),
        sample=len(sample),
        median_seconds=statistics.median(seconds),
        p90_seconds=seconds[math.ceil(0.9 * len(seconds)) - 1],
        history_keys_per_run=float(statistics.median([r.keys for r in sample] or [1])),
        compute=compute,
        dbu_per_hour=dbu_per_hour,
    )


ComputeKind = Literal["job_cluster", "serverless", "existing_cluster", "mixed", "unknown"]


@dataclass(frozen=True, slots=True)
class Compute:
    """What one run of a job runs on: a ``description`` for people and, for job clusters, the
    fewest and most ``nodes`` of one run, drivers included (autoscale).
    """

    kind: ComputeKind
    description: str
    nodes: tuple[int, int] | None = None


_NO_DBU_BECAUSE: dict[str, str] = {
    "serverless": "serverless compute has no node count to multiply",
    "existing_cluster": "an existing cluster is shared with other work",
    "mixed": "the tasks run on different kinds of compute",
    "unknown": "the job's compute is not known",
}


def compute_of_job(client: WorkspaceClient, job_id: int) -> Compute:
    """The compute of the deployed job ``job_id``, from ``jobs/get``.

    Raises:
        WorkspaceRejected: the credentials or a permission were refused.
        WorkspaceUnreachable: the workspace did not answer.
    """
    with workspace_errors(client.config.host):
        settings = client.jobs.get(job_id).settings
    return compute_of_settings(settings.as_dict() if settings is not None else {})


def compute_of_definition(job: JobDefinition) -> Compute:
    """The compute dbxdec generates for ``job``: its ``job_cluster`` or serverless."""
    if job.cluster is None:
        return Compute("serverless", "serverless")
    spec = {"job_cluster_key": job.cluster.name, "new_cluster": dict(job.cluster.spec)}
    return compute_of_settings({"job_clusters": [spec]})


def compute_of_settings(settings: Mapping[str, Any]) -> Compute:
    """The compute of a job from its JobSettings JSON; a job cluster no task uses is not
    counted, unless there are no tasks.
    """
    declared = {
        str(c.get("job_cluster_key", "")): c.get("new_cluster") or {}
        for c in settings.get("job_clusters") or []
    }
    clusters: dict[str, Mapping[str, Any]] = {}
    existing: set[str] = set()
    serverless = False
    tasks = settings.get("tasks") or []
    for task in tasks:
        if task.get("job_cluster_key"):
            key = str(task["job_cluster_key"])
            clusters[f"job cluster {key}"] = declared.get(key, {})
        elif task.get("new_cluster"):
            clusters[f"task {task.get('task_key', '')} cluster"] = task["new_cluster"]
        elif task.get("existing_cluster_id"):
            existing.add(str(task["existing_cluster_id"]))
        else:
            serverless = True  # environment_key, or no compute at all (serverless default)
    if not tasks:
        clusters = {f"job cluster {key}": spec for key, spec in declared.items()}
        serverless = not clusters and bool(settings.get("environments"))
    parts = [f"{name}: {_describe(spec)}" for name, spec in clusters.items()]
    parts += [f"existing cluster {cid}" for cid in sorted(existing)] + ["serverless"] * serverless
    description = "; ".join(parts) or "unknown"
    if clusters and not existing and not serverless:
        low, high = (sum(_nodes(spec)[i] for spec in clusters.values()) for i in (0, 1))
        return Compute("job_cluster", description, (low, high))
    if bool(clusters) + bool(existing) + serverless != 1:
        return Compute("mixed" if clusters or existing or serverless else "unknown", description)
    return Compute("existing_cluster" if existing else "serverless", description)


def _nodes(spec: Mapping[str, Any]) -> tuple[int, int]:
    autoscale = spec.get("autoscale") or {}
    if autoscale:
        low = int(autoscale.get("min_workers") or 0)
        return low + 1, max(low, int(autoscale.get("max_workers") or 0)) + 1
    workers = int(spec.get("num_workers") or 0)
    return workers + 1, workers + 1


def _describe(spec: Mapping[str, Any]) -> str:
    node = spec.get("node_type_id") or (
        f"pool {spec['instance_pool_id']}" if spec.get("instance_pool_id") else "default node"
    )
    driver = spec.get("driver_node_type_id")
    driver_text = "driver" if not driver or driver == node else f"driver {driver}"
    low, high = _nodes(spec)
    if low == 1 and high == 1:
        return f"single node {driver or node}"
    workers = f"{low - 1}" if low == high else f"{low - 1}-{high - 1} (autoscale)"
    return f"{workers} x {node} + {driver_text}"


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

"""``--batch-size auto``: keys per run from a least-squares fit ``startup + k * per_key`` of
the past successful runs, sized to the target and capped so every slot stays busy.

Example:
    >>> runs = [PastRun(0.0, 180.0, 1, "succeeded"), PastRun(0.0, 420.0, 5, "succeeded")]
    >>> model = fit_model(runs)
    >>> model.startup, model.per_key
    (120.0, 60.0)
    >>> choose_batch_size(model, keys=365, max_concurrent=4, target_seconds=900).size
    13
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from ..plan.options import default_of
from .estimate import SAMPLE, PastRun, format_seconds

STARTUP_SHARE = 0.25
"""The share of a run assumed to be start-up when all past runs wrote as many keys."""

ModelBasis = Literal["fit", "share"]


@dataclass(frozen=True, slots=True)
class RunModel:
    """``startup + k * per_key`` seconds, from ``runs`` past runs of ``fewest_keys`` to
    ``most_keys`` keys; ``basis``: ``fit`` or ``share``.
    """

    startup: float
    per_key: float
    runs: int
    fewest_keys: int
    most_keys: int
    basis: ModelBasis

    def seconds(self, keys: int) -> float:
        """The expected duration of a run of ``keys`` keys."""
        return self.startup + keys * self.per_key

    def describe(self) -> str:
        sizes = (
            f"{self.fewest_keys} key"
            if self.fewest_keys == self.most_keys == 1
            else f"{self.fewest_keys}-{self.most_keys} keys"
            if self.fewest_keys != self.most_keys
            else f"{self.fewest_keys} keys"
        )
        model = (
            f"a run of k keys takes ~{format_seconds(self.startup)} start-up + "
            f"k x {format_seconds(self.per_key)}"
        )
        if self.basis == "fit":
            return f"{model}: least-squares fit to the last {self.runs} successful runs ({sizes})"
        return (
            f"{model}: the last {self.runs} successful runs all wrote {sizes}, so start-up "
            f"is assumed to be {STARTUP_SHARE:.0%} of their median run"
        )


def fit_model(runs: Sequence[PastRun]) -> RunModel | None:
    """The run model of the latest :data:`SAMPLE` successful ``runs``; ``None`` without one."""
    latest = sorted((r for r in runs if r.state == "succeeded"), key=lambda r: -r.started)
    sample = latest[:SAMPLE]
    if not sample:
        return None
    xs = [float(r.keys) for r in sample]
    ys = [r.seconds for r in sample]
    fewest, most = int(min(xs)), int(max(xs))
    if fewest != most:
        mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
        sxx = sum((x - mean_x) ** 2 for x in xs)
        slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sxx
        intercept = mean_y - slope * mean_x
        if intercept < 0:  # no start-up cost: the best line through the origin
            slope = sum(x * y for x, y in zip(xs, ys, strict=True)) / sum(x * x for x in xs)
            intercept = 0.0
        if slope > 0:
            return RunModel(intercept, slope, len(sample), fewest, most, "fit")
    median_seconds = statistics.median(ys)
    median_keys = statistics.median(xs)
    return RunModel(
        STARTUP_SHARE * median_seconds,
        (1 - STARTUP_SHARE) * median_seconds / median_keys,
        len(sample),
        fewest,
        most,
        "share",
    )


def batch_size_for(
    startup: float, per_key: float, *, keys: int, max_concurrent: int, target_seconds: float
) -> int:
    """``max(1, floor((target - startup) / per_key))`` capped at ``keys // max_concurrent``
    (the cap when ``per_key`` is 0).
    """
    cap = max(1, keys // max(1, max_concurrent))
    if per_key <= 0:
        return cap
    return max(1, min(_fitting(startup, per_key, target_seconds), cap))


def _fitting(startup: float, per_key: float, target_seconds: float) -> int:
    """``floor((target - startup) / per_key)``; a huge number for a tiny ``per_key``."""
    ratio = (target_seconds - startup) / per_key
    return math.floor(ratio) if not math.isinf(ratio) else 2**63


@dataclass(frozen=True, slots=True)
class BatchChoice:
    """The keys per run ``--batch-size auto`` chose, the reasons, the target run length and
    the model.
    """

    size: int
    reasons: tuple[str, ...]
    target_seconds: float
    model: RunModel | None = None

    def lines(self) -> list[str]:
        """The choice for people: a headline, then the reasoning indented."""
        noun = "key" if self.size == 1 else "keys"
        return [f"batch size auto: {self.size} {noun} per run"] + [f"  {r}" for r in self.reasons]

    def to_json(self) -> dict[str, Any]:
        model = asdict(self.model) if self.model is not None else None
        return {
            "size": self.size,
            "target_seconds": self.target_seconds,
            "model": model,
            "lines": self.lines(),
        }


def choose_batch_size(
    model: RunModel | None,
    *,
    keys: int,
    max_concurrent: int,
    target_seconds: float = default_of("target_run_seconds"),
    job: str = "the job",
) -> BatchChoice:
    """Keys per run for ``keys`` keys run ``max_concurrent`` at once, aiming at runs of
    ``target_seconds``, with reasons that name every number.
    """
    target = format_seconds(target_seconds)
    if model is None:
        reason = f"no successful past runs of {job} to measure: 1 key per run until some end"
        return BatchChoice(1, (reason,), target_seconds)
    size = batch_size_for(
        model.startup,
        model.per_key,
        keys=keys,
        max_concurrent=max_concurrent,
        target_seconds=target_seconds,
    )
    reasons = [model.describe()]
    if model.per_key <= 0:
        reasons.append("the runs took no measurable time per key")
        fits = size
    else:
        fits = max(1, _fitting(model.startup, model.per_key, target_seconds))
        reasons.append(
            f"target run length {target}: max(1, floor(({target} - "
            f"{format_seconds(model.startup)}) / {format_seconds(model.per_key)})) = {fits}"
        )
        if model.startup >= target_seconds:
            reasons.append("start-up alone takes the target run length: 1 key per run")
    if size < fits:
        reasons.append(
            f"capped at {keys} keys // {max_concurrent} at once = {size}, so every slot stays busy"
        )
    reasons.append(f"expected run length ~{format_seconds(model.seconds(size))}")
    return BatchChoice(size, tuple(reasons), target_seconds, model)


def rechoose(
    pending_keys: int,
    measured: Sequence[PastRun],
    prior: Sequence[PastRun],
    *,
    max_concurrent: int,
    target_seconds: float,
    job: str = "the job",
) -> BatchChoice:
    """The size for the ``pending_keys`` keys not launched yet, from this backfill's
    ``measured`` runs and the ``prior`` ones (the latest :data:`SAMPLE` of them all).
    """
    model = fit_model([*measured, *prior])
    return choose_batch_size(
        model,
        keys=pending_keys,
        max_concurrent=max_concurrent,
        target_seconds=target_seconds,
        job=job,
    )

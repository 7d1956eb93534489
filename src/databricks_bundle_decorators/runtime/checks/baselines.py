"""Baselines of checks that compare keys: a slice measured against its committed
neighbours in the same table.

``median_prev_7`` is the median row count of the 7 nearest committed keys before the
slice's key; ``mean_next_3`` the mean of the 3 nearest after it; ``median_around_6`` the
median of the 3 nearest on each side. Neighbours are the keys the table holds rows for
when the run starts, the run's own keys left out, so the choice never depends on the
order a backfill runs keys in. Keys compare as strings (chronological for every time
key format); a ``STATIC:TIME`` key's neighbours share its static value. With fewer
neighbours than asked there is no baseline: the check passes, saying ``no baseline: ...``.

Example:
    >>> spec = BaselineSpec.parse("median_prev_3")
    >>> spec.neighbours("2024-01-05", ["2024-01-01", "2024-01-04", "2024-01-02", "2024-01-09"])
    ('2024-01-01', '2024-01-02', '2024-01-04')
    >>> spec.neighbours("2024-01-02", ["2024-01-01", "2024-01-04"]) is None
    True
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ...backfill.multi import SEPARATOR as MULTI_SEPARATOR
from ...definitions.contracts import ROWS_METRIC
from .metering import KeyedTable, Measured, table_slice_key

if TYPE_CHECKING:
    from ...definitions.contracts import OutputContext

Statistic = Literal["median", "mean"]
Side = Literal["prev", "next", "around"]
_SPEC = re.compile(r"(?P<stat>median|mean)_(?P<side>prev|next|around)_(?P<n>[1-9][0-9]{0,2})")


@dataclass(frozen=True, slots=True)
class BaselineSpec:
    """Which committed neighbours a key is compared with (``count``: in total, half on
    each side for ``around``), and the statistic of their row counts."""

    statistic: Statistic
    side: Side
    count: int

    @classmethod
    def parse(cls, text: str) -> BaselineSpec:
        """The spec named ``text``, e.g. ``median_prev_7``.

        Raises:
            ValueError: not ``<median|mean>_<prev|next|around>_<n>``, or an odd ``around``.
        """
        match = _SPEC.fullmatch(text) if isinstance(text, str) else None
        if match is None:
            raise ValueError(
                f"baseline {text!r} is not <median|mean>_<prev|next|around>_<n>, "
                "e.g. 'median_prev_7'"
            )
        count = int(match["n"])
        if match["side"] == "around" and count % 2:
            raise ValueError(f"baseline {text!r}: 'around' takes an even number (half each side)")
        return cls(match["stat"], match["side"], count)  # type: ignore[arg-type]

    @property
    def text(self) -> str:
        return f"{self.statistic}_{self.side}_{self.count}"

    @property
    def metric(self) -> str:
        """Where a slice's :class:`Baseline` for this spec is in the check's values."""
        return f"__baseline:{self.text}"

    def neighbours(self, key: str, committed: Iterable[str]) -> tuple[str, ...] | None:
        """The neighbours of ``key`` among the ``committed`` keys, oldest first; ``None``
        when there are fewer than asked."""
        keys = sorted(set(committed) - {key})
        before = [k for k in keys if k < key]
        after = [k for k in keys if k > key]
        if self.side == "prev":
            chosen = before[len(before) - self.count :] if len(before) >= self.count else None
        elif self.side == "next":
            chosen = after[: self.count] if len(after) >= self.count else None
        else:
            half = self.count // 2
            enough = len(before) >= half and len(after) >= half
            chosen = before[len(before) - half :] + after[:half] if enough else None
        return None if chosen is None else tuple(chosen)


@dataclass(frozen=True, slots=True)
class Baseline:
    """A key's neighbours and their committed row counts, or why it has none (``missing``)."""

    spec: BaselineSpec
    counts: tuple[tuple[str, int], ...] = ()
    missing: str = ""

    @property
    def value(self) -> float | None:
        """The statistic of the neighbours' counts (``None``: no baseline)."""
        if self.missing or not self.counts:
            return None
        counts = [n for _, n in self.counts]
        if self.spec.statistic == "median":
            return float(statistics.median(counts))
        return float(statistics.fmean(counts))

    def describe(self) -> str:
        """``median of 2024-01-01=100, 2024-01-02=120``."""
        listed = ", ".join(f"{k}={n}" for k, n in self.counts)
        return f"{self.spec.statistic} of {listed}"


def baseline_for(spec: BaselineSpec, key: str, committed: Mapping[str, int]) -> Baseline:
    """The baseline of ``key`` over the ``committed`` row counts (keys without rows are
    absent); for a ``STATIC:TIME`` key only keys of the same static value count."""
    static, sep, _ = key.rpartition(MULTI_SEPARATOR)
    same = (
        [k for k in committed if k.rpartition(MULTI_SEPARATOR)[0] == static] if sep else committed
    )
    chosen = spec.neighbours(key, same)
    if chosen is None:
        side = {"prev": "before", "next": "after", "around": "around"}[spec.side]
        near = sum(1 for k in same if k != key and _on_side(spec.side, k, key))
        return Baseline(
            spec,
            missing=f"no baseline: {near} committed keys {side} {key}, "
            f"{spec.text} needs {spec.count}",
        )
    return Baseline(spec, tuple((k, int(committed[k])) for k in chosen))


def _on_side(side: Side, other: str, key: str) -> bool:
    if side == "prev":
        return other < key
    return other > key if side == "next" else True


def committed_counts(manager: KeyedTable, context: OutputContext) -> dict[str, int]:
    """Rows per key (``STATIC:TIME`` for a two-dimensional run) in the table's committed
    version, one grouped read of its key columns (empty when it does not exist)."""
    environment = context.environment
    assert manager.partition_column is not None
    frame = manager.table_format(environment).read(
        environment.spark,
        manager.table_ref(environment),
        partition_column=manager.partition_column,
        keys=(),
    )
    if frame is None:
        return {}
    keys = frame.select(table_slice_key(manager, context.scope).alias("key"))
    rows = keys.groupBy("key").count().collect()
    return {str(r[0]): int(r[1]) for r in rows if r[0] is not None}


def with_baselines(
    manager: KeyedTable,
    context: OutputContext,
    measured: Measured,
    keys: Collection[str | None],
) -> Measured:
    """``measured`` with each judged key's :class:`Baseline` per spec the task's checks
    name (unchanged when none compares keys)."""
    wanted = (check.baseline_spec for check in context.checks)
    specs = {spec.text: spec for spec in wanted if isinstance(spec, BaselineSpec)}.values()
    if not specs:
        return measured
    if manager.partition_column is None:
        committed: dict[str, int] = {}
    else:
        own = set(context.scope.keys) if context.scope.bounded else set()
        committed = {k: n for k, n in committed_counts(manager, context).items() if k not in own}
    out: Measured = {k: dict(v) for k, v in measured.items()}
    for key in keys:
        values = out.setdefault(key, {ROWS_METRIC: 0})
        for spec in specs:
            values[spec.metric] = (
                Baseline(spec, missing="no baseline: the output has no keys")
                if key is None
                else baseline_for(spec, key, committed)
            )
    return out


def baseline_in(values: Mapping[str, Any], spec: BaselineSpec) -> Baseline | None:
    """The slice's baseline for ``spec``, if the IoManager added one."""
    found = values.get(spec.metric)
    return found if isinstance(found, Baseline) else None

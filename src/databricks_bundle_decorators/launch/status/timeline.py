"""The timeline of one backfill as inline SVG: a bar per run attempt ``[submitted_at, end)``
(a slice's retries on one row; stragglers: over twice the median) and the runs in
flight over time; outcomes have a colour, a pattern and a label.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, replace
from statistics import median

from ..ledger.ledger import Ledger
from ..plan.states import KeyState, RunState
from .status_grid import HTML_COLOUR

OUTCOMES: tuple[RunState, ...] = (
    RunState.SUCCEEDED,
    RunState.FAILED,
    RunState.CANCELLED,
    RunState.RUNNING,
)
_COLOUR: dict[RunState, str] = {o: HTML_COLOUR[KeyState(o.value)] for o in OUTCOMES}
_PATTERN: dict[RunState, str] = {
    RunState.SUCCEEDED: "",
    RunState.FAILED: '<path d="M0,0 L6,6 M6,0 L0,6" stroke="white" stroke-width="1.2"/>',
    RunState.CANCELLED: '<path d="M0,3 L6,3" stroke="white" stroke-width="1.2"/>',
    RunState.RUNNING: '<circle cx="3" cy="3" r="1.2" fill="white"/>',
}
STRAGGLER_FACTOR = 2.0


@dataclass(frozen=True, slots=True)
class Bar:
    """One attempt: row (slice), attempt number, interval ``[start, end)`` and outcome."""

    row: int
    label: str
    attempt: int
    start: float
    end: float
    outcome: RunState
    straggler: bool = False

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class Timeline:
    """The bars of a backfill, its concurrency cap and the slot steps."""

    backfill_id: str
    max_concurrent: int
    bars: tuple[Bar, ...]

    @property
    def steps(self) -> list[tuple[float, int]]:
        return slot_steps([(b.start, b.end) for b in self.bars])

    @property
    def stragglers(self) -> tuple[Bar, ...]:
        return tuple(b for b in self.bars if b.straggler)


def slot_steps(intervals: Sequence[tuple[float, float]]) -> list[tuple[float, int]]:
    """Runs in flight after each instant where the count changes (a run ending as another
    starts does not overlap it).

    >>> slot_steps([(0, 10), (5, 15), (10, 20)])
    [(0, 1), (5, 2), (10, 2), (15, 1), (20, 0)]
    """
    events: dict[float, int] = {}
    for start, end in intervals:
        if end <= start:
            continue
        events[start] = events.get(start, 0) + 1
        events[end] = events.get(end, 0) - 1
    steps: list[tuple[float, int]] = []
    level = 0
    for instant in sorted(events):
        level += events[instant]
        steps.append((instant, level))
    return steps


def stragglers(durations: Sequence[float], factor: float = STRAGGLER_FACTOR) -> list[bool]:
    """Which durations exceed ``factor`` times the median (none with fewer than 3).

    >>> stragglers([10, 11, 12, 40])
    [False, False, False, True]
    """
    if len(durations) < 3:
        return [False] * len(durations)
    limit = factor * median(durations)
    return [d > limit for d in durations]


def build_timeline(ledger: Ledger, *, now: float) -> Timeline:
    """The timeline of ``ledger``; open attempts run until ``now``, rejected ones are left out."""
    raw: list[Bar] = []
    for record in ledger.slices:
        for attempt in record.attempts:
            if attempt.state == "rejected" or attempt.submitted_at is None:
                continue
            outcome = RunState.RUNNING if attempt.is_open else attempt.state
            end = now if attempt.is_open or attempt.ended_at is None else attempt.ended_at
            end = max(end, attempt.submitted_at)
            raw.append(
                Bar(record.index, record.label, attempt.number, attempt.submitted_at, end, outcome)
            )
    done = [i for i, b in enumerate(raw) if b.outcome != "running"]
    flags = stragglers([raw[i].seconds for i in done])
    slow = {i for i, flag in zip(done, flags, strict=True) if flag}
    bars = tuple(replace(b, straggler=i in slow) for i, b in enumerate(raw))
    return Timeline(ledger.id, ledger.options.max_concurrent, bars)


def _clock(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def timeline_html(timeline: Timeline) -> str:
    """The timeline and the slot chart as an HTML section of inline SVG."""
    esc = html.escape
    if not timeline.bars:
        name = esc(timeline.backfill_id)
        return (
            f"<section class='timeline'><h2>Backfill {name}</h2><p>No runs recorded.</p></section>"
        )
    t0 = min(b.start for b in timeline.bars)
    span = max(max(b.end for b in timeline.bars) - t0, 1.0)
    rows = sorted({b.row for b in timeline.bars})
    row_y = {row: i for i, row in enumerate(rows)}
    labels = {b.row: b.label for b in timeline.bars}
    left, width, row_h = 160, 760, 22

    def x(instant: float) -> float:
        return left + (instant - t0) / span * width

    defs = "".join(
        f'<pattern id="pat-{o}" width="6" height="6" patternUnits="userSpaceOnUse">'
        f'<rect width="6" height="6" fill="{_COLOUR[o]}"/>{_PATTERN[o]}</pattern>'
        for o in OUTCOMES
    )
    parts = [f"<defs>{defs}</defs>"]
    for row in rows:
        y = row_y[row] * row_h + 4
        parts.append(f'<text x="4" y="{y + 14}" font-size="12">{esc(labels[row])}</text>')
    for b in timeline.bars:
        y = row_y[b.row] * row_h + 4
        x0, x1 = x(b.start), x(b.end)
        outline = ' stroke="black" stroke-width="3"' if b.straggler else ""
        title = f"{b.label} attempt {b.attempt}: {b.outcome}, {_clock(b.seconds)}"
        title += " (straggler)" if b.straggler else ""
        parts.append(
            f'<g class="bar {b.outcome}{" straggler" if b.straggler else ""}" '
            f'data-slice="{esc(b.label)}" data-attempt="{b.attempt}" data-outcome="{b.outcome}">'
            f"<title>{esc(title)}</title>"
            f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 2):.1f}" height="{row_h - 6}" '
            f'fill="url(#pat-{b.outcome})"{outline}/>'
            f'<text x="{x0 + 3:.1f}" y="{y + 13}" font-size="10" fill="black" '
            f'stroke="white" stroke-width="3" paint-order="stroke">'
            f"#{b.attempt} {b.outcome}{' straggler' if b.straggler else ''}</text></g>"
        )
    height = len(rows) * row_h + 8
    bars_svg = (
        f'<svg class="attempts" xmlns="http://www.w3.org/2000/svg" width="{left + width + 20}" '
        f'height="{height}" role="img" aria-label="run attempts">{"".join(parts)}</svg>'
    )
    steps = timeline.steps
    peak = max((n for _, n in steps), default=0)
    top = max(peak, timeline.max_concurrent, 1)
    chart_h = 120

    def level_y(count: int) -> float:
        return 10 + (1 - count / top) * (chart_h - 20)

    points = [f"{x(t0):.1f},{level_y(0):.1f}"]
    level = 0
    for instant, count in steps:
        points.append(f"{x(instant):.1f},{level_y(level):.1f}")
        points.append(f"{x(instant):.1f},{level_y(count):.1f}")
        level = count
    cap_y = level_y(timeline.max_concurrent)
    slots_svg = (
        f'<svg class="slots" xmlns="http://www.w3.org/2000/svg" width="{left + width + 20}" '
        f'height="{chart_h}" role="img" aria-label="runs in flight" data-peak="{peak}" '
        f'data-max-concurrent="{timeline.max_concurrent}">'
        f'<line x1="{left}" x2="{left + width}" y1="{cap_y:.1f}" y2="{cap_y:.1f}" '
        f'stroke="#cf222e" stroke-dasharray="6 3"/>'
        f'<text x="4" y="{cap_y + 4:.1f}" font-size="12">'
        f"max_concurrent {timeline.max_concurrent}</text>"
        f'<polyline fill="none" stroke="#0969da" stroke-width="2" points="{" ".join(points)}"/>'
        f'<text x="4" y="{chart_h - 4}" font-size="12">peak in flight {peak}</text></svg>'
    )
    used = "reached" if peak >= timeline.max_concurrent else "not reached"
    legend = " ".join(
        f'<svg width="14" height="14"><rect width="14" height="14" fill="url(#pat-{o})"/></svg> {o}'
        for o in OUTCOMES
    )
    slow = "".join(
        f"<li class='straggler'>{esc(b.label)} attempt {b.attempt}: {_clock(b.seconds)}</li>"
        for b in timeline.stragglers
    )
    slow_html = (
        f"<h3>Stragglers (over {STRAGGLER_FACTOR:g}&times; the median run)</h3><ul>{slow}</ul>"
        if slow
        else "<p>No stragglers.</p>"
    )
    return (
        f"<section class='timeline'><h2>Backfill {esc(timeline.backfill_id)}: timeline</h2>"
        f"<p class='legend'>{legend} (straggler: thick outline)</p>{bars_svg}"
        f"<h3>Runs in flight: peak {peak} of max_concurrent {timeline.max_concurrent} "
        f"(cap {used})</h3>{slots_svg}{slow_html}</section>"
    )

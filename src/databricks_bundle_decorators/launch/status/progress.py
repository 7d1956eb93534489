"""Progress output of the scheduler's events: a live display on a terminal, plain lines, or
JSON lines; an outage is reported from its ``unreachable`` event to its ``reachable`` one.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from collections.abc import Callable, Collection
from typing import IO, TYPE_CHECKING, Protocol

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, Progress, TextColumn
from rich.table import Table
from rich.text import Text

from ...errors import counted
from ..run.events import Counts, LaunchEvent, LaunchSummary

if TYPE_CHECKING:
    from ..ledger.ledger import Ledger

_SLOWEST = 5
_BAR_WIDTH = 40
_RECENT_KINDS = frozenset({"failed", "retrying", "warning", "draining", "cancelling", "reachable"})


class Reporter(Protocol):
    """Receives events, then the summary."""

    def __call__(self, event: LaunchEvent) -> None: ...

    def start(self, total: int, header: str) -> None: ...

    def finish(self, summary: LaunchSummary) -> None: ...


def _eta(counts: Counts, elapsed: float) -> str:
    finished = counts.done + counts.failed
    if not finished or elapsed <= 0:
        return "?"
    left = (counts.total - finished) / (finished / elapsed)
    return _duration(left)


def ledger_eta(ledger: Ledger, now: float) -> str:
    """A running backfill's time left at its pace so far (runs ended per second since it
    was created), as the live display shows it; ``"-"`` once it has ended.

    >>> from pathlib import Path
    >>> from databricks_bundle_decorators.launch.ledger.ledger import BackendSpec, Ledger
    >>> from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice
    >>> from databricks_bundle_decorators.launch.plan.options import LaunchOptions
    >>> plan = BackfillPlan("j", tuple(Slice(i, (f"k{i}",)) for i in range(4)))
    >>> spec, options = BackendSpec("local"), LaunchOptions()
    >>> ledger = Ledger.create(Path("."), plan, backend=spec, options=options)
    >>> ledger_eta(ledger, ledger.created_at + 10)
    '?'
    """
    if ledger.state != "running":
        return "-"
    counts = ledger.counts()
    done, failed = counts.get("succeeded", 0), counts.get("failed", 0)
    running = counts.get("running", 0) + counts.get("submitting", 0)
    return _eta(Counts(len(ledger.slices), done, failed, running), now - ledger.created_at)


def _duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def summary_lines(summary: LaunchSummary, shown: Collection[str] = ()) -> list[str]:
    """The final summary as plain lines; an error already ``shown`` is not printed again."""
    c = summary.counts
    lines = [
        f"Backfill {summary.backfill_id} of {summary.job}: {summary.state} - "
        f"{c.done} succeeded, {c.failed} failed, {c.remaining + c.running} not run, "
        f"{f'{c.blocked} blocked, ' if c.blocked else ''}"
        f"of {counted(c.total, 'run')} in {_duration(summary.seconds)}"
    ]
    if summary.checks:
        lines.append(summary.checks)
    if summary.durations:
        values = list(summary.durations.values())
        slowest = sorted(summary.durations.items(), key=lambda kv: -kv[1])[:_SLOWEST]
        lines.append(
            f"Run durations: mean {_duration(statistics.mean(values))}, "
            f"median {_duration(statistics.median(values))}, max {_duration(max(values))}; "
            "slowest: " + ", ".join(f"{label} {_duration(s)}" for label, s in slowest)
        )
    for failed in summary.failed:
        where = ""
        if failed.run_id:  # a rejected submission started no run
            where = f" (run {failed.run_id}{', ' + failed.url if failed.url else ''})"
        reason = "the error above" if failed.reason in shown else failed.reason
        lines.append(f"  FAILED {failed.label}: {reason}{where}")
    lines += [f"  BLOCKED {line}" for line in summary.blocked]
    rerun = next_rerun_command(summary)
    if rerun:  # one recommended next command, never two that compete
        lines.append(f"Rerun the failed keys: {rerun}")
    elif summary.resume_command and summary.state != "succeeded":
        lines.append(f"Resume this backfill:  {summary.resume_command}")
    return lines


def next_rerun_command(summary: LaunchSummary) -> str | None:
    """The rerun command when it is the one to recommend: some keys failed and every other run
    ended (else ``--resume`` is).
    """
    c = summary.counts
    if not summary.rerun_command or c.remaining or c.running:
        return None
    return summary.rerun_command


class _LineWriter:
    """Writes whole lines to ``stream``, one thread at a time."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self._lock = threading.Lock()

    def _line(self, text: str) -> None:
        with self._lock:
            self.stream.write(text + "\n")
            self.stream.flush()


class JsonReporter(_LineWriter):
    """One JSON object per line: every event, then ``{"event": "summary", ...}``."""

    def start(self, total: int, header: str) -> None:
        event = {"event": "start", "message": header, "total": total, "at": time.time()}
        self._line(json.dumps(event))

    def __call__(self, event: LaunchEvent) -> None:
        self._line(json.dumps(event.to_json()))

    def finish(self, summary: LaunchSummary) -> None:
        self._line(json.dumps(summary.to_json()))


class PlainReporter(_LineWriter):
    """One line per state change, for logs and pipes."""

    def __init__(self, stream: IO[str], *, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(stream)
        self.clock = clock
        self._t0 = clock()
        self._said: dict[str, str] = {}  # an error printed, and the run it was printed for

    def start(self, total: int, header: str) -> None:
        self._t0 = self.clock()
        self._line(header)

    def __call__(self, event: LaunchEvent) -> None:
        c = event.counts
        stamp = time.strftime("%H:%M:%S", time.localtime(event.at))
        what = event.label or event.kind
        parts = [f"{stamp} {event.kind:<10} {what}"]
        if event.attempt and event.attempt > 1:
            parts.append(f"attempt {event.attempt}")
        if event.seconds is not None:
            parts.append(f"in {_duration(event.seconds)}")
        if event.run_id:
            parts.append(f"run {event.run_id}")
        detail = _once(event, self._said)
        if detail and event.label:
            parts.append(f"- {detail}")
        elif detail:
            parts[0] = f"{stamp} {event.kind:<10} {detail}"
        progress = (
            f"[{c.done}/{c.total} done, {c.running} running, {c.failed} failed, "
            f"{c.remaining} left, ETA {_eta(c, self.clock() - self._t0)}]"
        )
        self._line(" ".join(parts) + "  " + progress)

    def finish(self, summary: LaunchSummary) -> None:
        for line in summary_lines(summary, self._said):
            self._line(line)


class LiveReporter:
    """A rich live display: header line, bar, counts, throughput, ETA, slowest runs, recent
    events; the summary is printed unwrapped so its commands copy whole.
    """

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self._progress = Progress(
            BarColumn(bar_width=_BAR_WIDTH),
            TextColumn("{task.completed}/{task.total}"),
            console=self.console,
        )
        self._task = self._progress.add_task("backfill", total=1)
        self._header = ""
        self._counts = Counts()
        self._slowest: list[tuple[float, str]] = []
        self._recent: list[LaunchEvent] = []
        self._outage = ""
        self._t0 = time.monotonic()
        self._live: Live | None = None
        self._lock = threading.Lock()

    def start(self, total: int, header: str) -> None:
        self._t0 = time.monotonic()
        self._header = header
        self._counts = Counts(total=total)
        self._progress.update(self._task, total=max(total, 1))
        self._live = Live(self._render(), console=self.console, refresh_per_second=4)
        self._live.start()

    def _render(self) -> Group:
        c = self._counts
        elapsed = time.monotonic() - self._t0
        finished = c.done + c.failed
        rate = finished / elapsed * 60 if elapsed > 0 else 0.0
        stats = Table.grid(padding=(0, 2))
        stats.add_row(
            Text(f"done {c.done}", style="green"),
            Text(f"running {c.running}", style="yellow"),
            Text(f"failed {c.failed}", style="red"),
            Text(f"remaining {c.remaining}"),
            Text(f"{rate:.1f} runs/min"),
            Text(f"ETA {_eta(c, elapsed)}"),
        )
        parts: list[Table | Progress | Text] = []
        if self._header:
            parts.append(Text(self._header, style="bold"))
        parts += [self._progress, stats]
        if self._outage:
            parts.append(Text(self._outage, style="bold red"))
        if self._slowest:
            slow = ", ".join(f"{label} {_duration(s)}" for s, label in self._slowest)
            parts.append(Text(f"slowest: {slow}", style="dim"))
        said: dict[str, str] = {}
        parts.extend(Text(_recent_line(e, said), style="dim") for e in self._recent[-5:])
        return Group(*parts)

    def __call__(self, event: LaunchEvent) -> None:
        with self._lock:
            self._counts = event.counts
            done = event.counts.done + event.counts.failed  # total: auto batches re-chosen
            self._progress.update(self._task, total=max(event.counts.total, 1), completed=done)
            if event.kind == "succeeded" and event.seconds is not None:
                slowest = sorted([*self._slowest, (event.seconds, event.label)], reverse=True)
                self._slowest = slowest[:_SLOWEST]
            if event.kind in ("unreachable", "reachable"):
                self._outage = event.message if event.kind == "unreachable" else ""
            if event.label:  # a slice moved on: its "retrying ... (retry in N s)" is stale
                self._recent = [
                    seen
                    for seen in self._recent
                    if not (seen.kind == "retrying" and seen.label == event.label)
                ]
            if event.kind in _RECENT_KINDS:
                self._recent.append(event)
            if self._live is not None:
                self._live.update(self._render())

    def finish(self, summary: LaunchSummary) -> None:
        with self._lock:
            # the session is over: no retry announced in the display will happen now
            self._recent = [seen for seen in self._recent if seen.kind != "retrying"]
        if self._live is not None:
            self._live.update(self._render())
            self._live.stop()
        said: dict[str, str] = {}  # the errors the display's last frame shows
        for event in self._recent[-5:]:
            _once(event, said)
        for line in summary_lines(summary, said):
            self.console.print(line, markup=False, highlight=False, soft_wrap=True)


def _recent_line(event: LaunchEvent, said: dict[str, str]) -> str:
    """``kind: label detail`` of an event in the display's recent list."""
    return " ".join(part for part in (f"{event.kind}:", event.label, _once(event, said)) if part)


def _once(event: LaunchEvent, said: dict[str, str]) -> str:
    """``event``'s detail, or a pointer to the run an error in ``said`` was printed for."""
    detail = event.detail
    if event.kind not in ("failed", "retrying") or not event.label or not detail:
        return detail
    first = said.get(detail)
    if first is None:
        said[detail] = event.label
        return detail
    return "the same error again" if first == event.label else f"same error as {first}"

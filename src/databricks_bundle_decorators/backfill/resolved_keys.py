"""The keys of one run, as key resolution hands them to the run context.

A value of its own, below both :mod:`.context` (which carries it) and :mod:`.resolve`
(which computes it), so neither module needs the other to name it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ResolvedKeys:
    """The keys of one run.

    Attributes:
        primary: The run's ``backfill_key`` (given or derived).
        keys: Every key the run processes, sorted, lookback and gaps included.
        written: The keys the run writes (``keys`` minus lookback-only keys).
        auto_derived: Whether ``primary`` came from the clock.
    """

    primary: str
    keys: tuple[str, ...]
    written: tuple[str, ...]
    auto_derived: bool

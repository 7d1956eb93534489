"""One figure of a benchmark, printed for people and for ``make bench``'s table.

Each benchmark script calls :func:`figure` for every figure that has a target; the line
it prints starts with :data:`MARK` and carries the figure as JSON, which
``benchmarks/run_all.py`` collects into one table. Not a benchmark itself.
"""

from __future__ import annotations

import json
from typing import Literal

MARK = "bench-figure: "

Better = Literal["lower", "higher"]


def figure(
    script: str, name: str, value: float, target: float, *, better: Better, unit: str = ""
) -> bool:
    """Print ``name``'s ``value`` against ``target``; whether it meets it.

    Args:
        script: The benchmark's name (its file's stem), the table's first column.
        name: What was measured, e.g. ``"makespan / ideal (1,000 x 0.5 s)"``.
        better: ``lower``: the value must be at most ``target``; ``higher``: at least.
        unit: Shown after the value and the target (``s``, ``%``, ``x``...).
    """
    met = value <= target if better == "lower" else value >= target
    row = {
        "script": script,
        "figure": name,
        "value": value,
        "target": target,
        "better": better,
        "unit": unit,
        "met": met,
    }
    print(MARK + json.dumps(row), flush=True)
    return met

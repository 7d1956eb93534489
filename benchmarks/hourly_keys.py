"""Benchmark: enumerate 10 years of hourly keys in Europe/Berlin.

Target (issue 2): all 87,600+ keys in under 0.2 s. Prints keys/second and the ratio to
the target; best of several repeats, so one noisy run on a shared machine does not
decide the figure.
"""

from __future__ import annotations

import time

from figures import figure

from databricks_bundle_decorators.backfill import HourlyBackfill

TARGET_SECONDS = 0.2
REPEATS = 5


def main() -> None:
    backfill = HourlyBackfill("2015-01-01T00", "2024-12-31T23", tz="Europe/Berlin")
    timings = []
    keys: list[str] = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        keys = backfill.keys()
        timings.append(time.perf_counter() - started)
    best, worst = min(timings), max(timings)
    print(f"hourly keys, Europe/Berlin, 2015-01-01T00..2024-12-31T23: {len(keys):,} keys")
    print(f"best  {best:.4f} s  -> {len(keys) / best:,.0f} keys/s")
    print(f"worst {worst:.4f} s  -> {len(keys) / worst:,.0f} keys/s")
    figure(
        "hourly_keys",
        f"{len(keys):,} hourly keys (best)",
        best,
        TARGET_SECONDS,
        better="lower",
        unit="s",
    )

    started = time.perf_counter()
    windows = [backfill.window(k) for k in keys[:10_000]]
    elapsed = time.perf_counter() - started
    print(
        f"windows: {len(windows):,} in {elapsed:.4f} s -> {len(windows) / elapsed:,.0f} windows/s"
    )


if __name__ == "__main__":
    main()

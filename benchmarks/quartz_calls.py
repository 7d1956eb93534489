"""Time QuartzSchedule.next_fire/previous_fire on typical schedules (moved out of the test
suite: timings belong in benchmarks). Target: well under 1 ms per call.

Usage: python benchmarks/quartz_calls.py [--calls 2000]
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import datetime, timedelta, timezone

from figures import figure

from databricks_bundle_decorators.backfill.quartz import QuartzSchedule

TARGET_MICROSECONDS = 1000.0  # "well under 1 ms per call"
EXPRESSIONS = ("0 0 6 * * ?", "0 0 * * * ?", "0 30 6 ? * MON-FRI", "0 0 0 30 2 ?")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    for expression in EXPRESSIONS:
        schedule = QuartzSchedule(expression, "Europe/Berlin")
        at = datetime(2024, 1, 1, tzinfo=timezone.utc)
        rounds = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(args.calls // 2):
                schedule.next_fire(at)
                schedule.previous_fire(at)
                at += timedelta(hours=7, minutes=13)
            rounds.append((time.perf_counter() - start) / args.calls * 1e6)
        figure(
            "quartz_calls",
            f"{expression}: per call (median)",
            statistics.median(rounds),
            TARGET_MICROSECONDS,
            better="lower",
            unit="us",
        )
        print(
            f"{expression:22} per call: median {statistics.median(rounds):8.1f} us "
            f"(min {min(rounds):.1f}, max {max(rounds):.1f}) over {args.calls} calls x 5"
        )


if __name__ == "__main__":
    main()

"""Benchmark: ``dbxdec backfill --dry-run`` and ``dbxdec status`` over many hourly keys.

Writes a throw-away project with one hourly job and, at 1,000, 10,000 and 87,662 keys
(hourly keys, UTC, from 2016-01-01T00), runs the real CLI in a subprocess and prints,
per size: the dry run's wall time, peak memory (max RSS) and lines written, the same for
``--dry-run --json`` (its bytes), and ``dbxdec status --local --html`` (time, memory,
lines written, the HTML page's size). The status reads a ledger in which every 7th run
failed, so the grid has more than one state.

Usage: python benchmarks/plans_and_status.py [--sizes 1000,10000,87662]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
    SliceRecord,
    ledger_dir,
)
from databricks_bundle_decorators.launch.plan.states import RunState

DBXDEC = [str(Path(sys.executable).with_name("dbxdec"))]
START = datetime(2016, 1, 1, tzinfo=timezone.utc)

PIPELINE = """\
from databricks_bundle_decorators import HourlyBackfill, job, task


@job(name="hourly_job", backfill=HourlyBackfill(start_date="2016-01-01T00", tz="UTC"))
def hourly_job():
    @task
    def load():
        ...

    load()
"""


@dataclass(frozen=True, slots=True)
class Measure:
    """One CLI run: wall and CPU (user + system) seconds, max RSS in MB, stdout lines
    and bytes."""

    seconds: float
    cpu_seconds: float
    max_rss_mb: float
    lines: int
    out_bytes: int


def run_cli(args: list[str], root: Path | None) -> Measure:
    """Run ``dbxdec ARGS`` in a child process and measure it: a small wrapper process
    runs the CLI and reports its max RSS alone (``RUSAGE_CHILDREN`` of the wrapper)."""
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _WRAPPER,
            *DBXDEC,
            *args,
            *(["--project", str(root)] if root else []),
        ],
        capture_output=True,
        check=False,
        cwd=root,
    )
    seconds = time.perf_counter() - started
    stderr = done.stderr.decode()
    if done.returncode:
        raise SystemExit(f"dbxdec {' '.join(args)} failed:\n{stderr[-2000:]}")
    cpu, rss_kb = stderr.strip().splitlines()[-1].split()
    lines = done.stdout.count(b"\n")
    return Measure(seconds, float(cpu), int(rss_kb) / 1024, lines, len(done.stdout))


_WRAPPER = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:]).returncode\n"
    "usage = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(usage.ru_utime + usage.ru_stime, usage.ru_maxrss, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def make_project(root: Path) -> None:
    root.mkdir(parents=True)
    (root / "hourly_pipeline.py").write_text(PIPELINE, encoding="utf-8")
    (root / "pyproject.toml").write_text(
        '[project]\nname = "bench"\nversion = "0.1"\n\n'
        '[tool.dbxdec]\npipelines = ["hourly_pipeline"]\n',
        encoding="utf-8",
    )


def key(hour: int) -> str:
    return (START + timedelta(hours=hour)).strftime("%Y-%m-%dT%H")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,87662")
    sizes = [int(s) for s in parser.parse_args().sizes.split(",")]
    print("dbxdec plans and status over N hourly keys (one subprocess per figure)")
    header = (
        f"{'keys':>7} | {'what':<28} | {'wall s':>7} | {'CPU s':>6} | {'max RSS MB':>10} | "
        f"{'lines':>6} | size"
    )
    print(header)
    print("-" * len(header))
    _row(0, "dbxdec --help (start-up)", run_cli(["--help"], None), "")
    for size in sizes:
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder) / "project"
            make_project(root)
            span = ["--start", key(0), "--end", key(size - 1), "--local"]
            dry = run_cli(["backfill", "hourly_job", *span, "--dry-run"], root)
            _row(size, "backfill --dry-run", dry, "")
            dry_json = run_cli(["backfill", "hourly_job", *span, "--dry-run", "--json"], root)
            _row(size, "backfill --dry-run --json", dry_json, f"{dry_json.out_bytes / 1e6:.1f} MB")
            _write_ledger(root, size)
            page = root / "status.html"
            status = run_cli(
                [
                    "status",
                    "hourly_job",
                    "--local",
                    "--start",
                    key(0),
                    "--end",
                    key(size - 1),
                    "--html",
                    str(page),
                ],
                root,
            )
            _row(size, "status --local --html", status, f"page {page.stat().st_size / 1e6:.2f} MB")


def _row(size: int, what: str, m: Measure, extra: str) -> None:
    print(
        f"{size:>7,} | {what:<28} | {m.seconds:>7.2f} | {m.cpu_seconds:>6.2f} | "
        f"{m.max_rss_mb:>10.0f} | "
        f"{m.lines:>6,} | {extra}"
    )


def _write_ledger(root: Path, size: int) -> None:
    """A finished backfill's ledger over the ``size`` keys: runs of 24 keys, every 7th
    failed; written with the launcher's own ``Ledger``, so its format is the real one."""
    keys = [key(hour) for hour in range(size)]
    slices = []
    for index, first in enumerate(range(0, size, 24)):
        chunk = tuple(keys[first : first + 24])
        state: RunState = "failed" if index % 7 == 6 else "succeeded"
        attempt = Attempt(
            1,
            f"t{index}",
            state,
            run_id=str(index),
            submitted_at=1.0,
            ended_at=2.0,
            error="boom" if state == "failed" else "",
        )
        slices.append(SliceRecord(index, chunk, {}, (attempt,)))
    ledger = Ledger(
        ledger_dir(root) / "bench.sqlite",
        backfill_id="bench",
        job="hourly_job",
        backend=BackendSpec("local"),
        options=LaunchOptions(),
        slices=slices,
        state="failed",
    )
    ledger.save()
    ledger.close()


if __name__ == "__main__":
    main()

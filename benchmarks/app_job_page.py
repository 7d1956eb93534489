"""Benchmark: the app's job page over 87,662 hourly keys.

Target (issue 42): the job page of an hourly job over ten years (2015-01-01T00 to
2024-12-31T23, Europe/Berlin: 87,662 keys) answers in under 1 s of server time and weighs
under 1 MB. A throw-away project holds the job and one local ledger with a realistic share
of states (runs of a day's keys: about 2% failed, 1% cancelled, the latest days running,
the last month never launched); the app serves it on loopback (uvicorn in a thread, as
``dbxdec app`` does) and the script times GET requests of the page as a browser makes
them: the whole job, one month (days x hours) and one day. Server time: the median of
:data:`REPEATS` requests after one warm-up (the project's import), from sending the
request to the last byte received on the same machine.

Run: ``python benchmarks/app_job_page.py``
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn
from figures import figure

from databricks_bundle_decorators.app.server import build_app
from databricks_bundle_decorators.app.serving import LOOPBACK, bind
from databricks_bundle_decorators.app.settings import AppSettings
from databricks_bundle_decorators.backfill import HourlyBackfill
from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
    SliceRecord,
    ledger_dir,
)
from databricks_bundle_decorators.launch.plan.states import RunState

TARGET_SECONDS = 1.0
TARGET_BYTES = 1_000_000
REPEATS = 7
ERROR = "AnalysisException: [TABLE_OR_VIEW_NOT_FOUND] raw.events"
START, END, TZ = "2015-01-01T00", "2024-12-31T23", "Europe/Berlin"

PIPELINE = f"""\
from databricks_bundle_decorators import HourlyBackfill, job, task


@task
def load() -> None:
    pass


@job(backfill=HourlyBackfill(start_date="{START}", end_date="{END}", tz="{TZ}"))
def hourly_job() -> None:
    load()
"""


def make_project(root: Path) -> int:
    """The project and its ledger; the number of keys."""
    root.mkdir(parents=True)
    (root / "bench_pipeline.py").write_text(PIPELINE, encoding="utf-8")
    (root / "pyproject.toml").write_text(
        '[project]\nname = "bench"\nversion = "0.1"\n\n'
        '[tool.dbxdec]\npipelines = ["bench_pipeline"]\n',
        encoding="utf-8",
    )
    keys = HourlyBackfill(START, END, tz=TZ).keys()
    chunks = [tuple(keys[i : i + 24]) for i in range(0, len(keys), 24)]
    launched = len(chunks) - 31  # the last month never launched: missing
    slices = []
    for index, chunk in enumerate(chunks[:launched]):
        state: RunState = "succeeded"
        if index >= launched - 3:
            state = "running"
        elif index % 53 == 7:
            state = "failed"
        elif index % 97 == 11:
            state = "cancelled"
        ended = None if state == "running" else 2.0
        error = ERROR if state == "failed" else ""
        attempt = Attempt(1, f"t{index}", state, run_id=str(1000 + index), submitted_at=1.0,
                          ended_at=ended, error=error)  # fmt: skip
        slices.append(SliceRecord(index, chunk, {}, (attempt,)))
    ledger = Ledger(
        ledger_dir(root) / "bench.sqlite",
        backfill_id="hourly_job-20250101T000000-b3nc",
        job="hourly_job",
        backend=BackendSpec("local"),
        options=LaunchOptions(),
        slices=slices,
        state="running",
    )
    ledger.save()
    ledger.close()
    return len(keys)


@contextmanager
def serving(settings: AppSettings) -> Iterator[str]:
    sock = bind(LOOPBACK, 0)
    server = uvicorn.Server(uvicorn.Config(build_app(settings), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started and thread.is_alive():
        time.sleep(0.01)
    host, port = sock.getsockname()[:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def timed_get(url: str) -> tuple[float, int]:
    """Seconds from the request to its last byte, and the body's bytes."""
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as response:
        body = response.read()
        assert response.status == 200, response.status
    return time.perf_counter() - started, len(body)


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "project"
        count = make_project(root)
        print(f"job page of hourly_job: {count:,} hourly keys {START}..{END} {TZ}")
        with serving(AppSettings(root=root)) as base:
            timed_get(base + "/jobs/hourly_job")  # warm-up: imports the project once
            for what, path in (
                ("whole job", "/jobs/hourly_job"),
                ("one month", "/jobs/hourly_job?month=2020-03"),
                ("one day", "/jobs/hourly_job?day=2020-03-29"),
            ):
                runs = [timed_get(base + path) for _ in range(REPEATS)]
                seconds = statistics.median(s for s, _ in runs)
                size = runs[0][1]
                print(
                    f"{what:<10} {path:<36} median {seconds:.3f} s "
                    f"(min {min(s for s, _ in runs):.3f}, max {max(s for s, _ in runs):.3f}, "
                    f"n={REPEATS})  {size:,} bytes"
                )
                if what == "whole job":
                    figure("app_job_page", f"job page, {count:,} hourly keys (median)",
                           seconds, TARGET_SECONDS, better="lower", unit="s")  # fmt: skip
                    figure("app_job_page", f"job page size, {count:,} hourly keys",
                           size / 1e6, TARGET_BYTES / 1e6, better="lower", unit="MB")  # fmt: skip


if __name__ == "__main__":
    main()

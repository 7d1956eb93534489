"""The status page of one backfill as a browser draws it: headless Chromium (Debian's
package, installed by ``make chromium``) renders the page that ``dbxdec status JOB
--backfill ID --html FILE`` wrote; the test reads the DOM Chromium built and keeps the
screenshot in build/test-artifacts/status-page.png."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from databricks_bundle_decorators.launch.ledger.ledger import load_ledger
from databricks_bundle_decorators.testing import JobsEmulator
from tests.cli.clirun import FAST, NIGHTLY_PARAMS, Cli

REPO = Path(__file__).resolve().parents[2]
ARTIFACT = REPO / "build" / "test-artifacts" / "status-page.png"
ID = re.compile(r"\bnightly-\d{8}T\d{6}-[0-9a-f]{4}\b")
CHROMIUM = shutil.which("chromium")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed and only root can install it: run `make chromium` "
    "as root, or sudo apt-get install chromium",
)

# (attempt number, state, submitted at, ended at) per day, seconds after T0; 04-03 is
# retried, 04-04 is the straggler (60 s against a median of 10 s), max_concurrent is 2.
T0 = 1_712_000_000.0
PLAN = {
    "2024-04-01": [(1, "succeeded", 0, 10)],
    "2024-04-02": [(1, "succeeded", 0, 12)],
    "2024-04-03": [(1, "failed", 10, 18), (2, "succeeded", 20, 30)],
    "2024-04-04": [(1, "succeeded", 12, 72)],
    "2024-04-05": [(1, "cancelled", 30, 38)],
    "2024-04-06": [(1, "succeeded", 38, 47)],
}


def backfill_with_a_retry_and_a_straggler(dbxdec: Cli, emu: JobsEmulator, root: Path) -> str:
    """A six-day backfill run against the emulator, its ledger's timings then set to PLAN."""
    emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    code, out, _ = dbxdec(
        "backfill", "nightly", "--start", "2024-04-01", "--end", "2024-04-06", *FAST
    )
    assert code == 0, out
    found = ID.search(out)
    assert found is not None, out
    ledger = load_ledger(root, found.group(0))
    ledger.options = replace(ledger.options, max_concurrent=2)
    for record in ledger.slices:
        [first] = [a for a in record.attempts if a.number == 1]
        attempts = tuple(
            replace(
                first,
                number=n,
                state=state,
                submitted_at=T0 + s,
                started_at=None,
                ended_at=T0 + e,
                error="boom" if state == "failed" else "",
            )
            for n, state, s, e in PLAN[record.keys[0]]
        )
        ledger.update(replace(record, attempts=attempts))
    ledger.save()
    return ledger.id


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", header[16:24])
    return width, height


def test_the_backfill_timeline_in_headless_chromium(
    dbxdec: Cli, emu: JobsEmulator, project: Path, tmp_path: Path
) -> None:
    assert CHROMIUM is not None
    backfill = backfill_with_a_retry_and_a_straggler(dbxdec, emu, project)
    page = tmp_path / "status.html"
    code, _, err = dbxdec(
        "status",
        "nightly",
        "--start",
        "2024-04-01",
        "--end",
        "2024-04-06",
        "--backfill",
        backfill,
        "--html",
        str(page),
    )
    assert (code, err) == (0, ""), err
    url = page.as_uri()
    shot = tmp_path / "status.png"
    subprocess.run(
        [CHROMIUM, *FLAGS, f"--screenshot={shot}", "--window-size=1200,900", url],
        check=True,
        capture_output=True,
        timeout=120,
    )
    dom = subprocess.run(
        [CHROMIUM, *FLAGS, "--dump-dom", url],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout

    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, ARTIFACT)
    assert shot.stat().st_size > 10_000
    assert png_size(shot) == (1200, 900)

    bars = re.findall(
        r'<g class="bar ([a-z ]+)" data-slice="([^"]+)" data-attempt="(\d)" '
        r'data-outcome="([a-z]+)">.*?</g>',
        dom,
    )
    seen = {(day, int(n), outcome) for _, day, n, outcome in bars}
    planned = {(day, n, state) for day, runs in PLAN.items() for n, state, _, _ in runs}
    assert seen == planned
    assert re.search(r"#1 failed</text>", dom) and re.search(r"#2 succeeded</text>", dom)
    assert "#1 cancelled</text>" in dom
    [straggler] = [(day, n) for cls, day, n, _ in bars if "straggler" in cls]
    assert straggler == ("2024-04-04", "1")
    assert re.search(r"<li class=\"straggler\">2024-04-04 attempt 1: 1m00s</li>", dom)
    slots = re.search(r'<svg class="slots"[^>]*data-peak="(\d+)" data-max-concurrent="(\d+)"', dom)
    assert slots is not None and slots.groups() == ("2", "2")
    assert "peak 2 of max_concurrent 2 (cap reached)" in dom
    assert re.search(r"Made \S+ from workspace", dom)
    assert "<script" not in dom

"""The app's pages against the emulator, read without a browser: the backfills list (who
started each, progress, ETA), one backfill (counts, grid, failures with their run links,
checks, timeline, commands), the launch page's dry run then a detached launch, and one-line
errors for what does not exist."""

from __future__ import annotations

import re

from databricks_bundle_decorators.launch.ledger.journal import read_journal

from .conftest import AppWorkspace

ID = re.compile(r"/backfills/(nightly-\d{8}T\d{6}-[0-9a-f]{4})")


def test_preview_launches_nothing_then_launch_detaches_and_the_pages_follow_it(
    app_workspace: AppWorkspace,
) -> None:
    emu, job_id = app_workspace.emu, app_workspace.job_id
    emu.set_outcome("2024-01-02", job_id=job_id, result="FAILED", message="boom: bad rows\nmore")
    app = app_workspace.client()
    form = {"job": "nightly", "start": "2024-01-01", "end": "2024-01-03", "max_concurrent": "2"}

    preview = app.post("/launch/preview", form, csrf_from="/launch")

    assert preview.status == 200, preview.body
    assert "<b>3</b> runs, up to 2 at once. Nothing was launched." in preview.body
    assert "backfill_key=2024-01-03" in preview.body
    assert not emu.runs(job_id) and not emu.runs(app_workspace.controller_job)

    launched = app.post("/launch", form, csrf_from="/launch")

    assert launched.status == 303, launched.body
    found = ID.search(launched.headers["location"])
    assert found is not None
    backfill = found.group(1)
    journal = read_journal(emu.workspace_client(), job_id, backfill)
    assert journal.started_by == "emulator@example.com"  # the viewer, not this machine's user
    app_workspace_done(app_workspace, 3)

    page = app.get(f"/backfills/{backfill}")
    assert page.status == 200
    assert 'data-state="failed"' in page.body and "data-live" not in page.body  # ended: no polling
    grid_row = page.body[page.body.index('<tr data-keys="2024-01-02"') :].split("</tr>")[0]
    assert 'class="cell s-failed" data-task="step"' in grid_row  # a cell per task
    failures = page.body[page.body.index('id="failures"') :]
    run = next(r for r in emu.runs(job_id) if r.job_parameters["backfill_key"] == "2024-01-02")
    assert f'href="{emu.url}/?o=' in failures  # the run's run_page_url, as runs/get gives it
    assert f'#job/{job_id}/run/{run.run_id}">run {run.run_id}</a>' in failures
    assert "boom: bad rows" in failures and "more" not in failures.split("</table>")[0]
    assert f"dbxdec backfill --resume {backfill} --detach" in page.body
    listing = app.get("/")
    row = listing.body[listing.body.index(f'data-id="{backfill}"') :].split("</tr>")[0]
    assert "emulator@example.com" in row and "2 ok, 1 failed of 3" in row


def app_workspace_done(app_workspace: AppWorkspace, count: int) -> None:
    def ended(runs: list) -> bool:  # type: ignore[type-arg]
        ours = [r for r in runs if r.job_id == app_workspace.job_id and not r.active]
        ctl = [r for r in runs if r.job_id == app_workspace.controller_job]
        return len(ours) >= count and bool(ctl) and not any(r.active for r in ctl)

    app_workspace.emu.wait_for(ended, timeout=60, what="the detached backfill ended")


def test_what_does_not_exist_is_one_line(app_workspace: AppWorkspace) -> None:
    app = app_workspace.client()
    missing = app.get("/backfills/nightly-20240101T000000-dead")
    assert missing.status == 404
    assert "nightly-20240101T000000-dead" in missing.body
    malformed = app.get("/backfills/..%2F..%2Fetc")
    assert malformed.status in (400, 404)
    bad = app.post(
        "/launch/preview",
        {"job": "nightly", "start": "2024-13-01", "end": "x"},
        csrf_from="/launch",
    )
    assert bad.status == 400 and 'id="error"' in bad.body
    unknown = app.post("/launch/preview", {"job": "<script>", "keys": "k"}, csrf_from="/launch")
    assert (
        unknown.status == 400
        and "<script>" not in unknown.body
        and "&lt;script&gt;" in unknown.body
    )

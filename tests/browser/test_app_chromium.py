"""The backfill app in a real headless Chromium (Debian's package, driven by Playwright
through its ``executable_path``; Playwright's own browsers are never downloaded), on the
Jobs API emulator whose controller runs are real ``dbxdec-controller`` processes.

Each step is asserted twice: from the DOM Chromium built, and from what the workspace
recorded (the emulator's runs and ``run-now`` bodies, the backfill's journal and its
control ops). The tests wait on conditions (Playwright's ``expect``, the emulator's
``wait_for``, the controller's printed lines), never on sleeps.

Screenshots of each page go to ``build/test-artifacts/app-<page>.png``, or to
``docs/img/app-<page>.png`` (the guide's) with ``DBXDEC_UPDATE_SCREENSHOTS=1``.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from databricks_bundle_decorators.app.acting import WHAT_HAPPENS
from databricks_bundle_decorators.backfill.wire import ORDER_PARAM, UndoOrder, encode_order
from databricks_bundle_decorators.launch.ledger.journal import control_ops, read_journal
from databricks_bundle_decorators.testing._endpoints._emulator_processes import processes_of
from tests.app.conftest import AppWorkspace

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or (
    "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
)
ID = re.compile(r"/backfills/(sales-\d{8}T\d{6}-[0-9a-f]{4})$")
WAIT_MS = 30_000

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed and only root can install it: run `make chromium` "
    "as root, or sudo apt-get install chromium",
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One Chromium for the module, closed at its end."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright: make setup")
    sync_api.expect.set_options(timeout=WAIT_MS)  # a busy machine (two workers, Spark)
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1100, "height": 700})
    context.set_default_timeout(WAIT_MS)
    try:
        yield context.new_page()
    finally:
        context.close()


def shoot(page: Page, name: str) -> Path:
    """Screenshot the page as ``app-<name>.png`` (the docs' copy when asked to update)."""
    if os.environ.get("DBXDEC_UPDATE_SCREENSHOTS") == "1":
        folder = REPO / "docs" / "img"
    else:
        folder = REPO / "build" / "test-artifacts"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"app-{name}.png"
    page.screenshot(path=str(path))
    assert path.stat().st_size > 5_000
    return path


def launch_from_the_page(page: Page, ws: AppWorkspace, start: str, end: str, **options: str) -> str:
    """Launch page -> preview -> launch; the backfill's id (from the page it lands on)."""
    from playwright.sync_api import expect

    page.goto(f"{ws.url}/launch")
    page.select_option("#job", "sales")
    page.fill("#start", start)
    page.fill("#end", end)
    for field, value in options.items():
        page.fill(f"#{field}", value)
    page.click("#preview")
    expect(page.locator("h1")).to_have_text("Dry run: sales")
    page.click("#launch")
    page.wait_for_url(ID)
    found = ID.search(page.url)
    assert found is not None, page.url
    return found.group(1)


def counts(page: Page) -> dict[str, int]:
    cells = page.locator("#counts li").all()
    return {c.get_attribute("data-state") or "": int(c.locator("b").inner_text()) for c in cells}


def test_launch_with_a_preview_follow_it_live_to_done_and_open_the_failed_run(
    app_workspace: AppWorkspace, page: Page
) -> None:
    from playwright.sync_api import expect

    ws, emu = app_workspace, app_workspace.emu
    emu.set_outcome("2024-01-03", job_id=ws.sales_id, result="FAILED", message="3 rows had no id")
    emu.set_outcome("2024-01-04", job_id=ws.sales_id, hold=True)  # running until released

    # (a) the launch page, then the dry run: every run shown, nothing started
    page.goto(f"{ws.url}/launch")
    expect(page.locator("#job option")).to_contain_text(["nightly", "sales"])
    page.select_option("#job", "sales")
    page.fill("#start", "2024-01-01")
    page.fill("#end", "2024-01-04")
    shoot(page, "launch")
    page.click("#preview")
    expect(page.locator("h1")).to_have_text("Dry run: sales")
    expect(page.locator("#run-count")).to_contain_text("4 runs")
    expect(page.locator("#run-count")).to_contain_text("Nothing was launched")
    rows = page.locator("#runs tbody tr")
    expect(rows).to_have_count(4)
    expect(rows.first).to_contain_text("backfill_key=2024-01-01")
    expect(page.locator("#estimate")).to_contain_text("no finished runs of sales to estimate")
    shoot(page, "preview")
    assert emu.runs() == [] and emu.run_now_bodies() == []  # not the job, nor a controller

    page.click("#launch")
    page.wait_for_url(ID)
    found = ID.search(page.url)
    assert found is not None
    backfill = found.group(1)
    [controller] = emu.wait_for_runs(1, job_id=ws.controller_job)
    assert controller.job_parameters["backfill_id"] == backfill

    # (b) the page follows the backfill without reloading
    page.evaluate("window.dbxdecMarker = 'first load'")
    live = page.locator("#live")
    emu.wait_for(
        lambda runs: any(r.job_parameters["backfill_key"] == "2024-01-04" for r in runs),
        job_id=ws.sales_id,
        what="the held key running",
    )
    expect(page.locator('#grid tr[data-keys="2024-01-04"]')).to_have_attribute(
        "data-state", "running"
    )
    expect(page.locator('#grid tr[data-keys="2024-01-03"]')).to_have_attribute(
        "data-state", "failed"
    )
    expect(live).to_have_attribute("data-updated", re.compile(r"^\d+$"))  # set by live.js
    first_update = live.get_attribute("data-updated")
    expect(page.locator("#state")).to_have_text("running")
    shoot(page, "backfill-running")
    assert emu.release("2024-01-04") == 1
    expect(page.locator("#summary")).to_have_attribute("data-ended", "1")
    expect(page.locator("#state")).to_have_text("failed")
    assert live.get_attribute("data-updated") != first_update
    assert page.evaluate("window.dbxdecMarker") == "first load"  # the same document
    assert page.evaluate("performance.getEntriesByType('navigation').length") == 1
    assert counts(page) == {
        "pending": 0,
        "submitting": 0,
        "running": 0,
        "succeeded": 3,
        "failed": 1,
        "cancelled": 0,
    }
    runs = emu.runs(ws.sales_id)
    by_key = {r.job_parameters["backfill_key"]: r for r in runs}
    assert sorted(by_key) == ["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"]
    assert by_key["2024-01-03"].result_state == "FAILED"
    journal = read_journal(emu.workspace_client(), ws.sales_id, backfill)
    assert journal.state == "failed"
    assert journal.counts()["succeeded"] == 3 and journal.counts()["failed"] == 1

    # (c) the failed key and its run's page in the workspace
    failed_run = str(by_key["2024-01-03"].run_id)
    failure = page.locator('#failures tr[data-keys="2024-01-03"]')
    expect(failure).to_contain_text("3 rows had no id")
    link = emu.workspace_client().jobs.get_run(int(failed_run)).run_page_url  # runs/get's
    assert link == f"{emu.url}/?o={emu.workspace_id}#job/{ws.sales_id}/run/{failed_run}"
    expect(failure.locator("a.run-link")).to_have_attribute("href", link)
    expect(page.locator('#grid tr[data-keys="2024-01-03"] a.run-link')).to_have_attribute(
        "href", link
    )
    page.locator("#failures").scroll_into_view_if_needed()
    shoot(page, "backfill-failed")
    failure.locator("a.run-link").click()
    page.wait_for_url(f"{emu.url}/jobs/{ws.sales_id}/runs/{failed_run}")  # the run's page
    expect(page.locator("h1")).to_have_text(f"Run {failed_run} of sales")
    expect(page.locator("#result")).to_have_text("FAILED")
    expect(page.locator("#parameter-backfill_key")).to_have_text("2024-01-03")

    # the list of backfills
    page.goto(ws.url)
    row = page.locator(f'#backfills tr[data-id="{backfill}"]')
    expect(row).to_contain_text("failed")
    expect(row).to_contain_text("3 ok, 1 failed of 4")
    shoot(page, "backfills")

    # the job's page: the partition health of its whole definition, the failed key's cell
    page.goto(f"{ws.url}/jobs/sales")
    expect(page.locator('#counts li[data-state="succeeded"] b')).to_have_text("3")
    expect(page.locator('#counts li[data-state="failed"] b')).to_have_text("1")
    failed_cell = page.locator('#health tr[data-row="2024-01"] td.k-failed')
    expect(failed_cell).to_have_count(1)
    expect(failed_cell).to_have_attribute("title", "2024-01-03: failed")
    shoot(page, "job")


def test_pause_a_detached_backfill_unpause_it_to_done_then_undo_it(
    app_workspace: AppWorkspace, page: Page
) -> None:
    from playwright.sync_api import expect

    ws, emu = app_workspace, app_workspace.emu
    processes = processes_of(emu)
    client = emu.workspace_client()
    emu.hold_runs = True
    backfill = launch_from_the_page(page, ws, "2024-02-01", "2024-02-06", max_concurrent="2")
    emu.wait_for(lambda runs: len(runs) == 2, job_id=ws.sales_id, what="two runs in flight")
    expect(page.locator('#counts li[data-state="running"] b')).to_have_text("2")

    # (d) pause: the confirmation says what happens; the journal records it; the
    # controller launches nothing while paused
    page.click('a[data-action="pause"]')
    expect(page.locator("#what")).to_have_text(WHAT_HAPPENS["pause"])
    expect(page.locator("h1")).to_contain_text(f"Pause backfill {backfill}?")
    shoot(page, "confirm")
    page.click("#confirm")
    page.wait_for_url(re.compile(f"/backfills/{backfill}$"))
    [paused] = control_ops(client, ws.sales_id, backfill)
    assert (paused.op, paused.by) == ("pause", "emulator@example.com")  # the viewer
    processes.wait_for_output(f"backfill {backfill} is now paused")
    expect(page.locator("#control")).to_have_text("paused")
    before = len(emu.runs(ws.sales_id))  # runs, not run-now bodies: a resent copy is one
    emu.hold_runs = False
    assert emu.release() == 2  # the two in flight end; nothing new starts
    processes.wait_for_output("paused with no run in flight")
    assert len(emu.runs(ws.sales_id)) == before == 2
    expect(page.locator('#counts li[data-state="succeeded"] b')).to_have_text("2")
    expect(page.locator('#counts li[data-state="pending"] b')).to_have_text("4")
    expect(page.locator('button[data-action="pause"]')).to_be_disabled()

    page.click('a[data-action="unpause"]')
    expect(page.locator("#what")).to_have_text(WHAT_HAPPENS["unpause"])
    page.click("#confirm")
    expect(page.locator("#state")).to_have_text("succeeded")
    assert [op.op for op in control_ops(client, ws.sales_id, backfill)] == ["pause", "unpause"]
    runs = emu.runs(ws.sales_id)
    assert sorted(r.job_parameters["backfill_key"] for r in runs) == [
        f"2024-02-0{d}" for d in range(1, 7)
    ]
    assert {r.result_state for r in runs} == {"SUCCESS"}
    assert read_journal(client, ws.sales_id, backfill).state == "succeeded"
    resume = page.locator('button[data-action="resume"]')
    expect(resume).to_be_disabled()
    expect(resume).to_have_attribute("title", "every run succeeded: nothing is left")

    # (e) undo: an undo run of the deployed job restores what the backfill wrote
    emu.wait_for(
        lambda runs: not any(r.active for r in runs), job_id=ws.controller_job, what="idle"
    )
    page.click('a[data-action="undo"]')
    expect(page.locator("#what")).to_contain_text("Delta RESTORE")
    page.click("#confirm")
    operation = page.locator("#operation")
    expect(operation).to_have_attribute("data-state", "done")
    expect(operation).to_contain_text("main.shop.sales")
    shoot(page, "backfill-undone")
    *keyed, undo_run = emu.runs(ws.sales_id)
    assert len(keyed) == 6 and undo_run.result_state == "SUCCESS"
    assert undo_run.job_parameters[ORDER_PARAM] == encode_order(UndoOrder(backfill))
    assert undo_run.job_parameters["backfill_key"] == ""  # no key: the order says what
    undo: dict[str, Any] = emu.run_now_bodies(ws.sales_id)[-1]
    assert undo["job_parameters"] == {ORDER_PARAM: encode_order(UndoOrder(backfill))}
    expect(operation).to_contain_text(f"Undo run {undo_run.run_id} succeeded")

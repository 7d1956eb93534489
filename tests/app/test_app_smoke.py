from __future__ import annotations

import re

from .conftest import AppWorkspace

ID = re.compile(r"/backfills/(nightly-\d{8}T\d{6}-[0-9a-f]{4})")


def test_launch_preview_then_detached_backfill_runs_to_done(app_workspace: AppWorkspace) -> None:
    app = app_workspace.client()
    assert app.get("/").status == 200
    form = {"job": "nightly", "start": "2024-01-01", "end": "2024-01-03"}
    preview = app.post("/launch/preview", form, csrf_from="/launch")
    assert preview.status == 200, preview.body
    assert "3</b> runs" in preview.body
    launched = app.post("/launch", {**form, "batch_size": "1", "rerun": "all"}, csrf_from="/launch")
    assert launched.status == 303, launched.body
    found = ID.search(launched.headers["location"])
    assert found, launched.headers
    page = app.get(f"/backfills/{found.group(1)}")
    assert page.status == 200, page.body
    print(page.body[:3000])

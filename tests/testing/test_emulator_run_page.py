"""The emulator's pages of the workspace UI that a run's link opens: ``/jobs/J/runs/R``
(the run, its job, state and parameters, escaped) and the home page ``/?o=<workspace
id>`` that a ``run_page_url`` (``/?o=...#job/J/run/R``) lands on."""

from __future__ import annotations

import urllib.error
import urllib.request

from databricks_bundle_decorators.testing import JobsEmulator


def _get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read().decode()


def test_a_run_s_page_shows_the_run_its_job_state_and_parameters_escaped() -> None:
    with JobsEmulator(token="dapi-page") as emu:
        emu.default_duration = 0.01
        job_id = emu.create_job("<nightly>", parameters={"backfill_key": ""})
        other = emu.create_job("other")
        emu.set_outcome("2024-01-02", result="FAILED", message="bad <rows>")
        client = emu.workspace_client()
        run_id = client.jobs.run_now(job_id, job_parameters={"backfill_key": "2024-01-02"}).run_id
        emu.wait_until_idle()

        status, kind, page = _get(f"{emu.url}/jobs/{job_id}/runs/{run_id}")  # no token
        assert (status, kind) == (200, "text/html; charset=utf-8")
        assert f"<h1>Run {run_id} of &lt;nightly&gt;</h1>" in page
        assert '<td id="result">FAILED</td>' in page
        assert '<td id="message">bad &lt;rows&gt;</td>' in page
        assert '<td id="parameter-backfill_key">2024-01-02</td>' in page
        assert "dapi-page" not in page

        assert _get(f"{emu.url}/jobs/{other}/runs/{run_id}")[0] == 404  # another job's run
        assert _get(f"{emu.url}/jobs/{job_id}/runs/999999")[0] == 404

        link = client.jobs.get_run(run_id).run_page_url
        assert link is not None and link.startswith(f"{emu.url}/?o={emu.workspace_id}#job/")
        status, kind, home = _get(link.split("#")[0])  # what a browser asks for
        assert status == 200 and "location.replace" in home
        assert _get(f"{emu.url}/?o=someone-else")[0] == 404

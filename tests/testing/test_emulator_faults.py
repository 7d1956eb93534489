"""Faults scoped to clients by ``User-Agent``, and when each fault was injected."""

from __future__ import annotations

import pytest

from databricks_bundle_decorators.testing import JobsEmulator


def test_an_outage_of_one_client_leaves_the_others_answered(
    emu: JobsEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = emu.create_job("nightly")
    plain = emu.workspace_client(retry_timeout_seconds=1, http_timeout_seconds=1)
    monkeypatch.setenv("DATABRICKS_SDK_UPSTREAM", "cut-off")  # upstream/cut-off in its UA
    monkeypatch.setenv("DATABRICKS_SDK_UPSTREAM_VERSION", "1")
    marked = emu.workspace_client(retry_timeout_seconds=1, http_timeout_seconds=1)
    emu.set_faults(drop_rate=1.0, user_agent="upstream/cut-off")
    with pytest.raises(TimeoutError):
        marked.jobs.get(job_id)
    monkeypatch.delenv("DATABRICKS_SDK_UPSTREAM")
    assert plain.jobs.get(job_id).job_id == job_id  # unmarked: answered
    assert emu.faults["total"] == len(emu.fault_times) >= 1
    assert list(emu.fault_times) == sorted(emu.fault_times)

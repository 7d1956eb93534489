"""The emulator refuses a job with more than 25 tags (Jobs API ``JobSettings.tags``) on
create, update and reset, through the real SDK."""

from __future__ import annotations

import pytest
from databricks.sdk.errors import InvalidParameterValue
from databricks.sdk.service.jobs import JobSettings

from databricks_bundle_decorators.testing.emulator import JobsEmulator


def _tags(count: int) -> dict[str, str]:
    return {f"t{i:02d}": "x" for i in range(count)}


def test_25_tags_are_accepted_and_a_26th_is_refused_everywhere() -> None:
    with JobsEmulator() as emu:
        w = emu.workspace_client()
        job_id = w.jobs.create(name="tagged", tags=_tags(25)).job_id
        assert job_id is not None
        assert len(w.jobs.get(job_id).settings.tags or {}) == 25
        with pytest.raises(InvalidParameterValue, match="at most 25 tags; got 26"):
            w.jobs.create(name="too many", tags=_tags(26))
        with pytest.raises(InvalidParameterValue, match="at most 25 tags; got 26"):
            w.jobs.reset(job_id, new_settings=JobSettings(name="tagged", tags=_tags(26)))
        with pytest.raises(InvalidParameterValue, match="at most 25 tags; got 26"):
            w.jobs.update(job_id, new_settings=JobSettings(tags=_tags(26)))
        assert len(w.jobs.get(job_id).settings.tags or {}) == 25  # unchanged
        assert [j.settings.name for j in w.jobs.list()] == ["tagged"]

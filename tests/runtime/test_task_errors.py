"""Which frames of a failed task are the user's: dbxdec's own are left out, wherever in
the package they are (``task_errors`` lives in ``runtime/session/``, the frames may be
anywhere under ``databricks_bundle_decorators/``)."""

from __future__ import annotations

import pytest

from databricks_bundle_decorators.backfill import DailyBackfill
from databricks_bundle_decorators.runtime.session.task_errors import user_frames


def test_frames_of_dbxdec_outside_runtime_are_not_the_users() -> None:
    with pytest.raises(ValueError) as raised:
        DailyBackfill(start_date="2024-02-01", end_date="2024-01-01")  # refused inside backfill/
    frames = user_frames(raised.value)
    assert len(frames) == 1, frames
    assert __file__ in frames[0]

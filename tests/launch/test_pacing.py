"""Retry backoff (poll pacing: test_poll_policy.py)."""

from __future__ import annotations

from databricks_bundle_decorators.launch.plan.options import LaunchOptions, backoff


def test_backoff_doubles_and_is_capped() -> None:
    options = LaunchOptions(retry_delay=2.0, max_retry_delay=10.0)
    assert [backoff(options, n) for n in (1, 2, 3, 4)] == [2.0, 4.0, 8.0, 10.0]

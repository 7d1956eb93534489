"""Fixtures of the bundle tests: ``framework_wheel`` is in tests/conftest.py (shared with
tests/test_getting_started.py, so a session builds the wheel once)."""

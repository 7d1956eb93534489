"""The CLI fixtures (a project pointing at the Jobs API emulator) for the browser tests."""

from tests.cli.conftest import dbxdec, project

__all__ = ["dbxdec", "project"]

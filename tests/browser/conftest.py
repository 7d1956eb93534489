"""The fixtures of the browser tests: the CLI's (a project pointing at the Jobs API
emulator) and the app's (the emulator, the controller job, a project and the app)."""

from tests.app.conftest import app_workspace
from tests.cli.conftest import dbxdec, project

__all__ = ["app_workspace", "dbxdec", "project"]

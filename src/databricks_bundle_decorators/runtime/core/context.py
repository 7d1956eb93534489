"""The environment of the task running now (a context variable), and whether this is a
Databricks cluster. The values an IoManager is told live in ``definitions.contracts``."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextvars import ContextVar

from ...definitions.contracts import RunEnvironment

DATABRICKS_RUNTIME_ENV = "DATABRICKS_RUNTIME_VERSION"


def on_databricks() -> bool:
    """Whether this process runs on a Databricks cluster (its runtime sets the variable)."""
    return bool(os.environ.get(DATABRICKS_RUNTIME_ENV))


_ENVIRONMENT: ContextVar[RunEnvironment | None] = ContextVar("dbxdec_environment", default=None)


def current_environment() -> RunEnvironment | None:
    """The environment of the task running in this context, if any."""
    return _ENVIRONMENT.get()


@contextlib.contextmanager
def use_environment(environment: RunEnvironment) -> Iterator[None]:
    """Make ``environment`` the current one while a task runs."""
    token = _ENVIRONMENT.set(environment)
    try:
        yield
    finally:
        _ENVIRONMENT.reset(token)

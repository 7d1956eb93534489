"""Docstring examples run as tests: from ``src/`` only, and without moving ``src/`` on
``sys.path``.

``--doctest-modules`` (pyproject's ``addopts``) would import every ``.py`` file under the
test paths to look for examples, the helper modules under ``tests/`` included. Some of
those register jobs in the default registry when imported (``dbxdec-run`` and
``dbxdec run`` import them by name), so importing them all at collection would change
what the in-process CLI tests see. They stay imported only by the tests that use them.

Importing a module of ``src/`` as a test module (to collect its examples, or to set up
its package before they run) puts ``src/`` first on ``sys.path`` (pytest's default
import mode). There, the ``dbxdec.egg-info`` that ``pip install -e`` leaves in ``src/``
would shadow the installed ``dbxdec`` metadata for the rest of the session
(``importlib.metadata`` takes the first match, and ``dbxdec wheel`` reads it), so
``sys.path`` is put back as it was after each of those steps.
"""

from __future__ import annotations

import sys
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from _pytest.doctest import DoctestModule  # not re-exported by pytest

SRC = Path(__file__).parent / "src"


def _in_src(path: Path) -> bool:
    return path == SRC or SRC in path.parents


@contextmanager
def _sys_path_kept(path: Path) -> Iterator[None]:
    if not _in_src(path):
        yield
        return
    kept = list(sys.path)
    try:
        yield
    finally:
        sys.path[:] = kept


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(
    file_path: Path, parent: pytest.Collector
) -> Generator[None, list[pytest.Collector], list[pytest.Collector]]:
    collected = yield
    if _in_src(file_path):
        return collected
    return [node for node in collected if not isinstance(node, DoctestModule)]


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    with _sys_path_kept(collector.path):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    with _sys_path_kept(item.path):
        return (yield)

"""Test helpers for dbxdec and its users: the Databricks Jobs API emulator.

Users import the flat modules :mod:`.emulator` (:class:`JobsEmulator`) and
:mod:`.spark_connect`; the emulator's parts live in the rooms :data:`ROOMS`, lowest first
(a room imports only earlier rooms and never a flat module: ``tests/test_layers.py``).
"""

from .emulator import FaultKind, JobsEmulator, RunRecord

ROOMS = ["_store", "_endpoints"]

__all__ = ["FaultKind", "JobsEmulator", "RunRecord"]

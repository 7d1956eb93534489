"""Test helpers for dbxdec and its users: the Databricks Jobs API emulator.

``testing/`` is split into rooms like ``runtime/`` (:data:`ROOMS`, lowest first; a room
imports only itself and earlier rooms, ``tests/test_layers.py`` checks it). The modules
users and tests import stay flat: :mod:`.emulator` (:class:`JobsEmulator`) and
:mod:`.spark_connect` (a local Spark Connect server); they may import every room, and
no room imports them.

- :mod:`._store` -- the emulator's records, clock, ordering, rendering and state;
- :mod:`._endpoints` -- its HTTP front end and the API families it serves.
"""

from .emulator import FaultKind, JobsEmulator, RunRecord

ROOMS = ["_store", "_endpoints"]
"""The rooms of ``testing/``, lowest first: a room imports only the rooms before it."""

__all__ = ["FaultKind", "JobsEmulator", "RunRecord"]

"""Test helpers for dbxdec and its users: the Databricks Jobs API emulator."""

from .emulator import FaultKind, JobsEmulator, RunRecord

__all__ = ["FaultKind", "JobsEmulator", "RunRecord"]

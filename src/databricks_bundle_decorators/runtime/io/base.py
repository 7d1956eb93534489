"""The IoManager contract, declared with the definitions (re-exported here)."""

from ...definitions.contracts import IoManager

__all__ = ["IoManager"]

"""An IoManager for definition tests: data edges need an upstream that stores its output."""

from __future__ import annotations

from typing import Any

from databricks_bundle_decorators.definitions.contracts import IoManager


class KeptOutput(IoManager):
    """Keeps nothing: definitions never run a task, they only need the contract met."""

    def handle_output(self, context: Any, obj: Any) -> None:
        raise AssertionError("definition tests never write")

    def load_input(self, context: Any) -> Any:
        raise AssertionError("definition tests never read")


STORED = KeptOutput()

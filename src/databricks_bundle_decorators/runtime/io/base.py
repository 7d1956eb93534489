"""The IoManager contract."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from ..context import InputContext, OutputContext


class IoManager(ABC):
    """Stores a task's output and loads it for downstream tasks.

    ``handle_output`` receives the keys the run writes (``context.scope``) and must
    replace exactly those partitions; ``load_input`` receives the keys the downstream
    run reads (lookback included) or ``all_partitions``.

    When ``evaluates_checks`` is true the IoManager evaluates ``context.checks`` itself
    before its write commits (the Spark table IoManager fuses them with its window
    validation); otherwise the runtime evaluates them on the output first.
    """

    evaluates_checks: ClassVar[bool] = False

    @abstractmethod
    def handle_output(self, context: OutputContext, obj: Any) -> None:
        """Write ``obj`` for the keys in ``context.scope``."""

    @abstractmethod
    def load_input(self, context: InputContext) -> Any:
        """Read the upstream output for the keys in ``context.scope``."""

"""``params``: the job parameters of the current run, read like a dict inside a task."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from ..backfill.context import current_run_context


class JobParams(Mapping[str, str]):
    """A read-only view of the current run's job parameters.

    Outside a run it is empty. ``params["url"]`` inside a task reads the ``url``
    parameter of the job run (its default, or the value the run was started with).
    """

    def _current(self) -> Mapping[str, str]:
        context = current_run_context()
        return context.params if context is not None else {}

    def __getitem__(self, name: str) -> str:
        current = self._current()
        try:
            return current[name]
        except KeyError:
            known = ", ".join(sorted(current)) or "none (not inside a task run)"
            raise KeyError(f"job parameter {name!r} is not set; parameters: {known}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._current())

    def __len__(self) -> int:
        return len(self._current())

    def __repr__(self) -> str:
        return f"JobParams({dict(self._current())!r})"


params = JobParams()

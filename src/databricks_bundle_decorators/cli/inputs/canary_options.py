"""``--canary N`` (see :mod:`...launch.canary`) and ``--diff-gate PCT`` (see
:mod:`...launch.diff_gate`) of ``dbxdec backfill``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from ...launch.backends.diff_gate import parse_diff_gate

if TYPE_CHECKING:  # click's ParamType is generic for type checkers (see .options)
    _PercentType = click.ParamType[float, Any]
else:
    _PercentType = click.ParamType


class _Percent(_PercentType):
    """``10%`` (or ``10``) as a number of percent, refused at the option."""

    name = "PCT"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, float):
            return value
        try:
            return parse_diff_gate(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


diff_gate_option = click.option(
    "--diff-gate",
    type=_Percent(),
    default=None,
    metavar="PCT",
    help="With --canary: after each canary run, compare each of its keys' row count, and "
    "the aggregates its tables declare (gate=[Sum(...)]), with the table before the "
    "backfill (Delta time travel) and stop before the rest when one moved by more than PCT "
    "(e.g. 10%). A key with no rows before is reported, not gated. On Databricks a run of "
    "the job (dbxdec_order) measures them.",
)

canary_option = click.option(
    "--canary",
    type=click.IntRange(min=0),
    default=0,
    metavar="N",
    help="Run the first N runs alone (up to --max-concurrent at once) and launch the rest "
    "only if all N succeed, their checks included; if one fails, nothing else is "
    "launched (--resume continues). 0: off.",
)

"""``--diff-gate PCT`` of ``dbxdec backfill`` (see :mod:`..launch.diff_gate`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from ..launch.diff_gate import parse_diff_gate

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
    help="With --canary: after each canary run, compare each of its keys' row count with "
    "the table before the backfill (Delta time travel) and stop before the rest when one "
    "moved by more than PCT (e.g. 10%). A key with no rows before is reported, not gated.",
)

"""Commands of this group are registered on the top-level ``dbxdec`` group."""

from __future__ import annotations

import click


def register(group: click.Group) -> None:
    """Add this module's commands to ``group``."""

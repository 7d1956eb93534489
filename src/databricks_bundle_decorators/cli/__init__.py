"""The ``dbxdec`` command line: click commands that parse options and print.

``cli/`` is split into rooms, one subpackage per responsibility. :data:`ROOMS` lists
them lowest first: a module of a room imports only from its own room, from rooms before
it in the list, and from the layers above ``cli`` (``tests/test_layers.py`` checks it,
``TYPE_CHECKING`` and function-level imports included). Only :mod:`.main` stays flat:
its dotted path is written outside the package (``dbxdec =
"databricks_bundle_decorators.cli.main:main"`` in ``pyproject.toml``); it may import
every room, and no room imports it.

- :mod:`.inputs` -- what the command line accepts: shared options and their parsing;
- :mod:`.output` -- what it prints: plans, launches, journals, reports;
- :mod:`.commands` -- the commands, one module per family.
"""

ROOMS = ["inputs", "output", "commands"]
"""The rooms of ``cli/``, lowest first: a room imports only the rooms before it."""

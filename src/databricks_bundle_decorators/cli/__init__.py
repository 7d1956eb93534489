"""The ``dbxdec`` command line, in rooms (:data:`ROOMS`, lowest first: a room imports only
itself, the rooms before it and the layers above ``cli``); only :mod:`.main`, named in
``pyproject.toml``, stays flat and may import every room.

- :mod:`.inputs` -- what the command line accepts: shared options and their parsing;
- :mod:`.output` -- what it prints: plans, launches, journals, reports;
- :mod:`.commands` -- the commands, one module per family.
"""

ROOMS = ["inputs", "output", "commands"]

"""What the command line accepts: click options and the parsing of their values.

Owns ``options`` (the shared options, ``--spark-remote``, ``--canary``, ``--all``). The
lowest room of ``cli``: it imports no other room, only the layers above ``cli``.
"""

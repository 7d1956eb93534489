"""Steering a detached backfill from any checkout (``steering``): ``pause``/``unpause``/
``cancel``, ``--resume`` from its journal, its controller runs. May import every room
before it in ``ROOMS`` and the layers above ``launch``; :mod:`..control`, the facade and
the CLI import it.
"""

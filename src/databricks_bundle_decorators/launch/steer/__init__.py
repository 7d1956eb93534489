"""Steering a detached backfill from any checkout: ``pause``/``unpause``/``cancel`` and
``--resume`` from its journal (``steering``), its controller runs (``controller_runs``).
May import every room before it in ``ROOMS`` and the layers above ``launch``;
:mod:`..control`, the facade and the CLI import it.
"""

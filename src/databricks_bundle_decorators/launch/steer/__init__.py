"""Steering a detached backfill from any checkout: ``pause``/``unpause``/``cancel``
(``steering``, ``steer_permission``, ``steer_cancel``), the controller's runs found in
the workspace (``controller_runs``) and ``--resume`` from a journal
(``journal_resume``). May import every room before it in ``ROOMS`` and the layers above
``launch``; :mod:`..control`, the facade and the CLI import it.
"""

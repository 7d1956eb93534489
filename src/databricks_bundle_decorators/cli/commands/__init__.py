"""The ``dbxdec`` commands: one module per family of click commands.

Owns ``backfill_commands`` (``backfill``), ``backfill_shared`` (what ``backfill`` and
``catch-up`` share), ``bundle_commands`` (``init``, ``generate``, ``validate``, ...),
``catchup_commands``, ``cost_commands``, ``graph_commands``, ``report_commands``,
``run_commands`` (local runs), ``setup_commands`` (``setup-spark``), ``steer_commands``
(pause, resume, cancel, retarget a backfill) and ``undo_commands``. May import its own
modules, the ``inputs`` and ``output`` rooms and the layers above ``cli``; never
``main``, which assembles these commands into the ``dbxdec`` group.
"""

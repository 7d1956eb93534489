"""The ``dbxdec`` commands: one module per family of click commands.

Owns ``app_commands`` (``app``: the backfill app on loopback), ``backfill_commands``
(``backfill``, ``catchup``), ``bundle_commands`` (``init``,
``generate``, ``validate``, ``deploy``, ``wheel``), ``stale_commands`` (``stale``),
``restate_commands`` (``restate``), ``emulator_commands`` (``emulator``:
it starts ``testing.local_workspace`` as a program, never importing it),
``report_commands`` (``backfills``, ``status``, ``graph``), ``run_commands`` (``run``,
``setup-spark``) and ``steer_commands`` (the ``backfill`` group: ``undo``, ``cost``,
``pause``, ``unpause``, ``cancel``, ``watch``). May import its own modules, the
``inputs`` and ``output`` rooms and the layers above ``cli``; never ``main``, which
assembles the ``dbxdec`` group.
"""

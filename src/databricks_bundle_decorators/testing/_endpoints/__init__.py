"""The Jobs API emulator's endpoints: ``_emulator_http`` (server, routing, faults),
``_emulator_sync`` (test-side waits, holds and triggers), ``_emulator_processes`` (runs
that execute code), ``_emulator_permissions`` (ACLs, SCIM, OAuth M2M),
``_emulator_statements`` (SQL statements and billing tables) and ``_emulator_workspace``
(workspace files). May import its own modules, the ``_store`` room and the layers above
``testing``; never the flat modules ``emulator`` and ``spark_connect``.
"""

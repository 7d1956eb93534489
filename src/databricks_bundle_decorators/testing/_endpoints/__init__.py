"""The Jobs API emulator's endpoints: HTTP routing and the API families it serves.

Owns ``_emulator_http`` (the HTTP server and routing), ``_emulator_faults`` (injected
faults), ``_emulator_sync`` (waiting on
the emulator's events), ``_emulator_processes`` (wheel tasks run as real subprocesses),
``_emulator_tasks`` (a job's tasks executed in this process, as Databricks would),
``_emulator_permissions`` (permissions API), ``_emulator_oauth`` (service principals'
OAuth M2M tokens), ``_emulator_statements`` (SQL statement
execution), ``_emulator_billing`` (billable usage of statements),
``_emulator_workspace`` (workspace files API) and ``_emulator_triggers`` (firing a job's
table-update or file-arrival trigger). May import its own modules, the ``_store`` room
and the layers above ``testing``; never the flat modules ``emulator`` and
``spark_connect``.
"""

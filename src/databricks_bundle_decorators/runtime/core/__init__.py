"""The values every other room of ``runtime`` speaks in: a task run's errors
(``errors``), the environment of the task running now (``context``; the values an
IoManager is told, and the keys they cover, are ``definitions.contracts`` and
``backfill.scope``), SQL predicates over keys built from quoted literals
(``predicates``), the keys a running task writes (``keys``), task value stores
(``task_values``), a Spark column of backfill keys (``key_columns``) and how code in a job
run authenticates to its workspace (``job_auth``). The lowest room:
it imports no other room of ``runtime``, only the layers above ``runtime`` and the shared
errors.
"""

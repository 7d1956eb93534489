"""The values every other room of ``runtime`` speaks in: a task run's errors
(``errors``), the keys and windows a read or write covers (``scope``), what an IoManager
is told (``context``), SQL predicates over keys built from quoted literals
(``predicates``), the keys a running task writes (``keys``), task value stores
(``task_values``), a Spark column of backfill keys (``key_columns``) and how code in a job
run authenticates to its workspace (``job_auth``). The lowest room:
it imports no other room of ``runtime``, only the layers above ``runtime`` and the shared
errors.
"""

"""What every room of ``runtime`` speaks in: a task run's ``errors``, the running task's
environment (``context``), SQL ``predicates`` from quoted literals, the written ``keys``,
``task_values`` stores, the backfill ``key_columns``, ``job_auth`` in a job run, and
the running task's pinned and recorded reads (``provenance``). The
lowest room: it imports no other room, only the layers above ``runtime``.
"""

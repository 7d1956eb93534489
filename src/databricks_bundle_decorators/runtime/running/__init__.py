"""What runs: one task of any kind through one code path (``dispatch``, with its
``PROGRAMS``), a job's DAG in-process on the local Spark (``local``) and the deadline
monitor's run (``deadline_monitor``). The highest room: may import every other room and
the layers above ``runtime``; only the flat entry modules of ``runtime`` (``entrypoint``,
``monitor_entry``, ``notebook_entry``), the package ``__init__`` and the layers below
import it.
"""

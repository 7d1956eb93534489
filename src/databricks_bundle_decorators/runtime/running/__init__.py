"""What runs: one task of any kind through one code path (``dispatch``), a job's DAG on
the local Spark (``local``) and the ``deadline_monitor``'s run. May import every room and
the layers above ``runtime``.
"""

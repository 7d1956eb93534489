"""Where runs happen: the protocol the scheduler drives (``backends``), the Databricks
backend over ``databricks-sdk`` (``databricks_backend``, ``run_window``, ``overtake``,
``check_reports``, ``measure_run``, ``task_output``: the one reader of a task run's
reports), the local one on the embedded Spark
(``local_backend``, ``spark_extra``), a slice's job chosen from the ledger (``per_job``,
``job_router``), the diff gate's verdict (``diff_gate``) and the launcher's error classes
(``errors``). May import :mod:`..plan`, :mod:`..ledger` and :mod:`..workspace` and the
layers above ``launch``.
"""

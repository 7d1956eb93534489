"""Where runs happen: the protocol the scheduler drives (``backends``), Databricks
(``databricks_backend``, ``run_window``, ``measure_run``,
``task_output``: the one reader of a task run's reports), the local Spark
(``local_backend``), a slice's job from the ledger (``job_router``),
the diff gate (``diff_gate``) and the launcher's errors (``errors``). May import
:mod:`..plan`, :mod:`..ledger`, :mod:`..workspace` and the layers above ``launch``.
"""

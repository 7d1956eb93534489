"""Where runs happen: the protocol the scheduler drives (``backends``), the Databricks
backend over ``databricks-sdk`` (``databricks_backend``, ``run_window``, ``overtake``,
``check_reports``), the local one on the embedded Spark (``local_backend``,
``spark_extra``), reaching a workspace and reading ``-t TARGET`` (``workspace``,
``target``) and the launcher's error classes (``errors``). May import :mod:`..plan` and
:mod:`..ledger` and the layers above ``launch``.
"""

"""The Spark session a run works in: embedded (``spark``, its ``delta_jars`` and
``jvm_stderr``) or over Spark Connect (``spark_remote``), what serverless lets a job set
(``serverless_rules``) and what a failed task says (``task_errors``). May import
:mod:`..core` and the layers above ``runtime``.
"""

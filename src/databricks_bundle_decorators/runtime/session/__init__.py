"""The Spark session a run works in: the embedded SparkSession (``spark``), Spark Connect
(``spark_remote``), the Delta jars it loads (``delta_jars``), its quieted JVM stderr
(``jvm_stderr``), what serverless compute lets a job change (``serverless_rules``) and
what a failed task says of Spark's errors (``task_errors``). May import :mod:`..core` and
the layers above ``runtime``.
"""

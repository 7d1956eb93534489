"""``databricks_bundle_decorators.runtime.spark``: the path projects import the local
SparkSession from (``dbxdec init`` writes ``from databricks_bundle_decorators.runtime.spark
import local_spark_session`` into every project's tests), kept where it was when the
session moved into :mod:`.session`. Like the entry modules it is flat because its path
is written outside the package; no room imports it.
"""

from .session.spark import local_spark_session

__all__ = ["local_spark_session"]

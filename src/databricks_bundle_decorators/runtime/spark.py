"""The local SparkSession's public path (``dbxdec init`` writes ``from
databricks_bundle_decorators.runtime.spark import local_spark_session`` into projects)."""

from .session.spark import local_spark_session

__all__ = ["local_spark_session"]

"""Definitions -> Databricks Asset Bundle job resources.

``databricks.yml`` loads the jobs with::

    python:
      resources:
        - "databricks_bundle_decorators.bundle:load_resources"

or ``dbxdec generate`` writes them as ``resources/<job>.job.yml``.
"""

from .codegen import generate_jobs, job_resource, parameter_reference
from .load import load_resources, resources_for
from .options import CodegenOptions, options_from_config
from .tags import backfill_from_tags, backfill_tags
from .validate import Problem, SchemaValidator, typed_problems

__all__ = [
    "CodegenOptions",
    "Problem",
    "SchemaValidator",
    "backfill_from_tags",
    "backfill_tags",
    "generate_jobs",
    "job_resource",
    "load_resources",
    "options_from_config",
    "parameter_reference",
    "resources_for",
    "typed_problems",
]

"""The trigger tests' jobs in the default registry, for ``dbxdec`` run in-process.

The CLI imports a project's pipelines by module into the default registry; the runtime
tests declare their jobs in registries of their own. This module adds the jobs the CLI
tests drive (the same definitions, so the CLI reads the state those tests' runs wrote).
"""

from __future__ import annotations

from databricks_bundle_decorators.definitions.registry import default_registry
from tests.runtime import test_catching_up, test_triggered

for _job in (
    test_triggered.registry.get("capped_trigger_job"),
    test_catching_up.registry.get("capped_job"),
):
    default_registry.add(_job)

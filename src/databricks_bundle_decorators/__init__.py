"""databricks-bundle-decorators."""

"""Example pipelines. The repository's own bundle deploys them, so they ship in dbxdec's
wheel; they import only the public API, like a user's project."""

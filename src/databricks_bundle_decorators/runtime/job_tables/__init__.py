"""The tables of a job and the keys in them: catalog names that work on Databricks and
locally (``tables``), the tables a job writes and reads (``outputs``, ``sources``), rows
and row-count changes per key (``key_rows``, ``key_changes``) and the quarantine tables
beside the outputs (``quarantine_tables``). May import :mod:`..core`, :mod:`..session`,
:mod:`..storage`, :mod:`..checks` and :mod:`..io` and the layers above ``runtime``.
"""

"""A job's tables: catalog names that work on Databricks and locally (``tables``), the
tables it writes (``outputs``) and reads (``sources``), and how a run changed its keys
(``key_changes``). May import :mod:`..core`, :mod:`..session`, :mod:`..storage`,
:mod:`..checks`, :mod:`..io` and the layers above ``runtime``.
"""

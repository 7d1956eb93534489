"""Tables as storage, below any IoManager: the table formats that only read and write
(``formats``, ``delta``, ``parquet``), a table's declared layout and schema DDL
(``layout``, ``ddl``), its history and restores (``delta_history``), upserts by key
(``upsert``), two-dimensional key predicates (``dimensions``) and table names
(``table_name``). May import :mod:`..core` and :mod:`..session` and the layers above
``runtime``; the checks and the IoManagers build on it, never the other way round.
"""

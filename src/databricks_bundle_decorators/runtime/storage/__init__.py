"""Tables as storage, below any IoManager: the formats that only read and write
(``formats``, ``delta``, ``parquet``), layout and schema DDL (``layout``, ``ddl``), history
and restores (``delta_history``), upserts (``upsert``), two-dimensional key predicates
(``dimensions``) and table names (``table_name``). May import :mod:`..core` and
:mod:`..session` and the layers above ``runtime``.
"""

"""Table-triggered and catching-up runs: which source keys changed between table
versions (``change_feed``), the trigger state table (``trigger_state``), a triggered run
resolving its keys once (``triggered``), a catching-up scheduled run (``catching_up``)
and a table-update trigger simulated locally (``local_trigger``). May import every room
before it (:mod:`..core` to :mod:`..programs`) and the layers above ``runtime``.
"""

"""Table-triggered and catching-up runs: which source keys changed between table
versions (``change_feed``), the trigger state table (``trigger_state``), a triggered run
resolving its keys once (``triggered``), a catching-up scheduled run (``catching_up``),
the key of the job's newest successful run from its run history (``run_history``), a
table-update trigger simulated locally (``local_trigger``), file-triggered runs
(``file_arrival``, the listing changes ``file_changes``) and what a keyed run of a
triggered job covered (``trigger_coverage``). May import every room
before it (:mod:`..core` to :mod:`..programs`) and the layers above ``runtime``.
"""

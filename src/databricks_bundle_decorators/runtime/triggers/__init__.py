"""Table-triggered, file-triggered and catching-up runs: a run resolving its keys once
(``triggered``), the trigger state table (``trigger_state``), file-triggered runs
(``file_arrival``), the key of the job's newest successful run (``run_history``) and
triggers simulated locally (``local_trigger``). May import every room before it
(:mod:`..core` to :mod:`..programs`) and the layers above ``runtime``.
"""

"""What a backfill is asked to do, before anything runs: the request records the CLI
builds (``request``), the keys and their states in past runs (``history``, ``day_bounds``),
the plan of runs with their job parameters (``plan``, ``plan_summary``, ``full_range``)
the slices of a ``--downstream`` backfill across jobs (``slice_graph``), its options as
one record from the CLI to the scheduler (``options``) and the one vocabulary of run,
key, backfill and control states (``states``). The lowest room: it imports no other room
of ``launch``, only the ``backfill``, ``definitions`` layers and the shared errors.
"""

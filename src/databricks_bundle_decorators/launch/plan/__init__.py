"""What a backfill is asked to do, before anything runs: the CLI's request records
(``request``), keys and their states in past runs (``history``), the plan of runs with
their job parameters (``plan``, ``plan_summary``), the slices of a ``--downstream``
backfill (``slice_graph``), its options (``options``) and the one vocabulary of states
(``states``). The lowest room: it imports no other room of ``launch``, only the
``backfill``, ``definitions`` layers and the shared errors.
"""

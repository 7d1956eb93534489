"""What keeps a backfill safe to start and to run beside others: claims on its keys,
local and in the workspace (``claims``, ``claim_checks``, ``local_lock``,
``workspace_claims``), the job's schedule paused or given a slot (``schedule_pause``,
``pause_markers``), the same command again pointed at ``--resume`` (``reruns``) and
connecting to the deployed job, which restores stale pauses (``connection``); for a
``--downstream`` backfill, one claim per job (``job_claims``), each job's deployment and
backend (``downstream_workspace``) and its dependants' data triggers paused while it
writes (``trigger_pause``). May import :mod:`..plan`, :mod:`..ledger`,
:mod:`..workspace` and :mod:`..backends` and the layers above ``launch``.
"""

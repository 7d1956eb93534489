"""What keeps a backfill safe to start and to run beside others: claims on its keys,
local and in the workspace (``claims``, ``claim_checks``, ``local_lock``,
``workspace_claims``), the job's schedule paused or given a slot (``schedule_pause``,
``pause_markers``), the same command again pointed at ``--resume`` (``reruns``) and
connecting to the deployed job, which restores stale pauses (``connection``). May import
:mod:`..plan`, :mod:`..ledger` and :mod:`..backends` and the layers above ``launch``.
"""

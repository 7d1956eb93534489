"""What keeps a backfill safe to start and to run beside others: the same command again
pointed at ``--resume`` (``reruns``), connecting to the deployed job (``connection``), a
``--downstream`` backfill's jobs and claims per job (``downstream_workspace``); ``pause``
holds the pauses. May import :mod:`..plan`, :mod:`..ledger`, :mod:`..workspace`,
:mod:`..backends` and the layers above ``launch``.
"""

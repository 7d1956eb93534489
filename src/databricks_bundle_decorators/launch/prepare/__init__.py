"""A backfill made ready to run: planned by planners, each owning one feature
(``planners``), prepared (``prepared``, with ``PreparedBackfill``), re-batched as runs
end (``rebatch``) and resumed from its ledger (``resume``). May import every room before
it in ``ROOMS`` (:mod:`..plan` to :mod:`..run`) and the layers above ``launch``.
"""

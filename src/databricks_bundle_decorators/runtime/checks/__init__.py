"""Per-slice checks: the shipped checks (``shipped``), measuring an output
(``metering``), judging (``checking``), baselines of committed keys (``baselines``),
quarantined rows (``quarantine``), the check results table (``check_results``) and
diff-gate aggregates (``gate_aggregates``). May import :mod:`..core`, :mod:`..session`,
:mod:`..storage` and the layers above ``runtime``.
"""

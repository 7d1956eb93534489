"""Reaching a workspace: the authenticated client, its error classes and how a failed
call is told apart (``workspace``), reading ``-t TARGET`` from ``databricks.yml``
(``target``), the billing system table read for cost estimates (``billing_read``) and
a table's first change-feed version for a catch-up (``first_watermark``), a table's
history read through a SQL warehouse (``table_history``) and which level a principal
holds on a job, the one reader of job ACLs (``job_access``). May import :mod:`..plan` and
the layers above ``launch``; every room after it may import it.
"""

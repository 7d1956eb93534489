"""Reaching a workspace: the client and how a failed call is told apart (``workspace``),
``-t TARGET`` (``target``), billing reads (``billing_read``), statements on a SQL
warehouse: a table-triggered job's first watermark and a table's history
(``first_watermark``), and job ACLs (``job_access``). May import :mod:`..plan` and the
layers above ``launch``; every room after it may import it.
"""

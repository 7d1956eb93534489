"""The controller of a detached backfill, run in the workspace: ``entry`` (the wheel entry
point ``dbxdec-controller`` and its authentication), ``controller`` (one run driving the
backfill from its journal, steered, handing over to the next generation, holding a
``--downstream`` backfill's dependants' triggers; a run that lost the claim never takes
it back) and ``detach`` (``--detach``: hand a planned backfill to a controller run). The
last room: it may import every room before it and the layers above ``launch``.
"""

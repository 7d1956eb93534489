"""What the command line accepts: click options and the parsing of their values.

Owns ``options`` (the options commands share: project, job, keys, dates, dry run, and
their parsing into launcher values), ``spark_remote_option`` (``--spark-remote``),
``canary_options`` (``--canary`` and its ramp) and ``full_range`` (a job's whole key
range for ``--all``). The lowest room of ``cli``: it imports no other room of ``cli``,
only the layers above ``cli`` and the shared errors.
"""

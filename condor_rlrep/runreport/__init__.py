"""What the replicas of an instrumented DAG run did: ``status`` and ``report``.

Everything here reads files only — the instrumented run's context
(``OUT.dag.rlrep/``: settings, ``run.json``, node state, the attempt
journal), DAGMan's node log (``htcondor2.JobEventLog``) and ``.dagman.out``,
and the agent store — and judges replicas with the project's own
:func:`condor_rlrep.outcome.evaluate` and
:func:`condor_rlrep.condor.eventlog.rebuild_cluster`. The schedd is an
option (``--schedd``), behind one seam.
"""

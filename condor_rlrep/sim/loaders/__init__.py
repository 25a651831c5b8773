"""Turn real cluster logs into a :class:`~condor_rlrep.sim.trace.Trace`.

One module per family of log formats, each parsing one file into
:class:`~condor_rlrep.sim.loaders.records.Records` (absolute Unix seconds):

``condor-json``, ``condor-long`` (:mod:`~condor_rlrep.sim.loaders.condor`)
    HTCondor's job history (``condor_history -json`` / ``-long``): jobs.
``swf`` (:mod:`~condor_rlrep.sim.loaders.swf`)
    the Standard Workload Format of the Parallel Workloads Archive: jobs.
``fta`` (:mod:`~condor_rlrep.sim.loaders.fta`)
    the Failure Trace Archive's ``event_trace`` files: unavailability
    periods, which become logins (a down machine is a busy one).

:func:`~condor_rlrep.sim.loaders.assemble.load_trace` parses the files of
one format, takes the machines from them or from a ``machines.csv``, and
lays the records out as a trace (start, length, sorting, merging).
"""

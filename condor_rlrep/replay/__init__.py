"""``condor-rlrep replay``: a multi-use pool replayed from a trace.

A real HTCondor pool whose static slots stand for S desktops of a simulator
trace, their owners coming and going as the trace says through the
startd's own policy (START/PREEMPT on ClassAd expressions of ``time()``),
and a stream of instrumented workflows submitted as real DAGMan jobs at the
trace's arrival times; the simulator runs the same compressed window so each
policy has a live and a simulated row (docs/replay.md).

Modules, one concept each: :mod:`.plan` (the window, the slots, the
arrivals, compression), :mod:`.poolconfig` (the pool's configuration from a
plan), :mod:`.pool` (starting and stopping a personal pool),
:mod:`.workflows` (the workflow copies each policy runs), :mod:`.live`
(submitting at the arrival times, waiting), :mod:`.results` (live and
simulated rows), :mod:`.render` (the report). Imported lazily: nothing
here is loaded until asked.
"""

"""The run folder of an instrumented DAG (``OUT.dag.rlrep/``): where each
file lives and what it holds.

Written by ``instrument`` and the hooks, read by ``status`` and ``report``:
the settings and file layout (:mod:`.layout`), the per-run and per-node
state (:mod:`.runstate`), the workflow plan cached per DAG content
(:mod:`.plan`) and the attempt journal (:mod:`.journal`). It sits below
:mod:`condor_rlrep.hooks`, :mod:`condor_rlrep.instrument` and
:mod:`condor_rlrep.runreport`, so that the writers and the readers of these
files share one definition of them and none imports another.

This ``__init__`` stays empty: the hooks import its modules on every call.
"""

"""The DAGMan hooks: PRE (decide and write the replica submit file), POST
(read the node log, record the outcome, give DAGMan the node's exit code) and
the reaper (remove surplus replicas).

:mod:`.entry` is what DAGMan runs; :mod:`.pre`, :mod:`.post` and
:mod:`.reaper` each hold one hook's sequence. POST's steps have their own
modules: the verdict from the node log (:mod:`.verdict`), the outcome into
the store (:mod:`.record`), and the spool for a store that is away
(:mod:`.spool`); decisions no POST will record are closed by
:mod:`.closing`. Every hook opens the store one way (:mod:`.hookstore`) and
fails open one way (:mod:`.failopen`).

Hooks run thousands of times per DAG: every module here imports only what its
path needs (no numpy, scipy, networkx or matplotlib on the cached path).
"""

"""Write an instrumented copy of a DAG that runs replicas through the hooks.

``instrument(IN.dag, OUT.dag)`` never modifies the user's files. It writes
``OUT.dag`` and the context directory ``OUT.dag.rlrep/`` (layout in
:mod:`condor_rlrep.rundir.layout`):

* every replicable node (a JOB that is not NOOP/DONE and whose description
  queues one proc) gets ``SCRIPT PRE``/``SCRIPT POST`` lines calling the
  installed ``rlrep-pre``/``rlrep-post`` by absolute path (DAGMan does no PATH
  lookup) with only whole-token macros valid for that script type; a user's
  own PRE/POST is kept after a ``--`` and run by our hook (DEFER/DEBUG kept);
* its JOB points at ``OUT.dag.rlrep/nodes/<node>.sub``, which PRE rewrites on
  every attempt; inline and SUBMIT-DESCRIPTION bodies are written out to
  ``nodes/<node>.orig.sub`` for PRE to read;
* ``TOLERANCE <node> 99% WAIT`` (⌊0.99·a⌋ = a − 1 failing replicas
  tolerated; HTCondor ≥ 25.14), or with ``tolerance="config"`` a CONFIG file
  setting ``DAGMAN_NODE_JOB_FAILURE_TOLERANCE = R − 1`` (a user CONFIG is
  merged into the copy);
* a SERVICE node (local universe) runs ``rlrep-reaper``.

A fixed policy (``fixed:K``, ``single``) decides nothing at run time, so
its nodes run without PRE: instrument writes each node's replica
description once, with PRE's own function
(:func:`condor_rlrep.hooks.nodesubmit.node_description`), and for K > 1
the state POST reads (``nodes/<node>.fixed.json``). With K = 1 there is
no POST and no reaper either: one proc, whose result DAGMan's own verdict
is. PRE stays where it is needed: a node with its own PRE script (which may
write the description DAGMan reads after it), or whose per-replica file
names depend on the attempt (``$(RETRY)``, ``$(DAGManJobId)``).
``always_pre`` wires every node as the agent's are.

NOOP, DONE, FINAL, SERVICE, PROVISIONER and SUBDAG nodes, and nodes whose
description queues several procs or uses itemdata, keep their definition.
A sub-DAG is instrumented by running ``instrument`` on its own DAG file.

Relative paths: DAGMan resolves a DAG's relative paths against its working
directory; we assume the user runs the original from the DAG file's
directory, and write every node with an absolute ``DIR`` so that the copy
behaves the same wherever ``condor_submit_dag OUT.dag`` is run.

The package, one concept a module: :mod:`.options` (what is asked, checked
before anything is read), :mod:`.checks` (what is refused or warned about:
the pool's DAGMan, a copy instrumented again, replicas writing one shared
file), :mod:`.agentstore` (the store the hooks will use), :mod:`.wiring`
(what a node gets: SCRIPT lines, TOLERANCE, the reaper, CONFIG knobs),
:mod:`.nodefiles` (the context's per-node files) and :mod:`.dagcopy`
(:func:`instrument` itself: the order of it all, the DAG copy and
``hooks.json``).
"""

from __future__ import annotations

from condor_rlrep.instrument.checks import TOLERANCE_SINCE
from condor_rlrep.instrument.dagcopy import instrument
from condor_rlrep.instrument.options import (
    LIVE_EPSILON_HIGH, LIVE_MAX_REPLICAS, InstrumentOptions, InstrumentResult, load_instrument_config, load_power_table, parse_version,
)
from condor_rlrep.instrument.wiring import hook_executables
from condor_rlrep.rundir.layout import REAPER_NODE

__all__ = [
    "InstrumentOptions",
    "InstrumentResult",
    "instrument",
    "hook_executables",
    "load_instrument_config",
    "load_power_table",
    "parse_version",
    "REAPER_NODE",
    "TOLERANCE_SINCE",
    "LIVE_MAX_REPLICAS",
    "LIVE_EPSILON_HIGH",
]

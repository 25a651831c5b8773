"""The DAGMan hooks: PRE (decide and write the replica submit file), POST
(read the node log, record the outcome, give DAGMan the node's exit code) and
the reaper (remove surplus replicas), plus ``instrument``'s shared layout.

Hooks run thousands of times per DAG: every module here imports only what its
path needs (no numpy, scipy, networkx or matplotlib on the cached path).
"""

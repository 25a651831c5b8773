"""The survival model of the ``model:R`` policy, in one place: how likely a
replica is to survive its run on a multi-use pool, and how many replicas
that calls for.

- :mod:`.model` — the estimator (eviction hazard per hour of the week and
  idle bucket) and the policy's choice; one implementation for the
  simulator and the live hooks.
- :mod:`.cells` — the unit both store backends keep: a cell of exposure
  seconds and evictions, with its checks and the survival horizon.
- :mod:`.live` — what a live node attempt adds to the model: its runs read
  from HTCondor's event logs, binned into cells, recorded once per attempt.

This ``__init__`` stays empty: the hooks import only what they use.
"""

"""The survival model lives in :mod:`condor_rlrep.survival` (shared with the
live hooks); this name is kept for the simulator's callers."""

from condor_rlrep.survival import DEFAULT_IDLE_EDGES, SurvivalModel

__all__ = ["SurvivalModel", "DEFAULT_IDLE_EDGES"]

"""Experiment sweeps: a grid of simulations, run locally or fanned out over a pool."""

from condor_rlrep.sweep.experiment import Experiment, RunSpec, load_experiment

__all__ = ["Experiment", "RunSpec", "load_experiment"]

"""BottleMod: task I/O and resource bottleneck model (the second seed paper).

Self-contained: importing it pulls in numpy (and scipy only for general
polynomial pieces); nothing else in condor-rlrep imports it at import time.

Public API::

    PFunc, minimum, REL_TOL                      # functions (functions.py, combine.py, polynomial.py)
    DataInput, Resource, Task, Link, Workflow    # the model (model.py)
    compute_progress, ProgressResult             # one task (progress.py)
    analyze, Analysis, TaskResult, Bottleneck,
    gain_if_relieved, relieved, Gain             # workflows (analysis.py)
    load_model, parse_model, predict_finish      # model files (modelfile.py)

``condor_rlrep.bottlemod.estimate.estimate_source()`` turns VARS
``rlrep_bottlemod="path[#task]"`` into runtime estimates; ``plot.py`` draws
an analysis (matplotlib, imported only there).
"""

from __future__ import annotations

from condor_rlrep.bottlemod.analysis import (
    Analysis,
    Bottleneck,
    Gain,
    TaskResult,
    analyze,
    gain_if_relieved,
    relieved,
)
from condor_rlrep.bottlemod.functions import PFunc, minimum
from condor_rlrep.bottlemod.polynomial import REL_TOL
from condor_rlrep.bottlemod.model import DataInput, Link, Resource, Task, Workflow
from condor_rlrep.bottlemod.modelfile import load_model, model_from_dict, parse_function, parse_model, predict_finish
from condor_rlrep.bottlemod.progress import ProgressResult, compute_progress

__all__ = [
    "PFunc", "minimum", "REL_TOL",
    "DataInput", "Resource", "Task", "Link", "Workflow",
    "compute_progress", "ProgressResult",
    "analyze", "Analysis", "TaskResult", "Bottleneck", "gain_if_relieved", "relieved", "Gain",
    "load_model", "parse_model", "model_from_dict", "parse_function", "predict_finish",
]

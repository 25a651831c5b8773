"""Helpers for the BottleMod tests: small models built in code."""

from __future__ import annotations

import numpy as np

from condor_rlrep.bottlemod import DataInput, PFunc, Resource, Task, Workflow, compute_progress

IDENTITY_100 = PFunc.from_points([0, 100], [0, 100])


def const(v: float) -> PFunc:
    return PFunc.constant(v)


def single(pd: PFunc, resources=(), pmax: float = 100.0, start: float = 0.0):
    """Progress of one task with data limit ``pd`` (single input, label 0)."""
    return compute_progress(pd, np.zeros(pd.n + 2, dtype=np.intp), list(resources), pmax, start)


def cpu(rate: float | PFunc, per_unit: float | PFunc = 1.0) -> tuple[PFunc, PFunc]:
    a = rate if isinstance(rate, PFunc) else const(rate)
    q = per_unit if isinstance(per_unit, PFunc) else const(per_unit)
    return (a, q)


def labels_of(result) -> list[tuple[float, float, int]]:
    f = result.progress
    out: list[tuple[float, float, int]] = []
    for k, lab in enumerate(result.labels.tolist()):
        if out and out[-1][2] == lab:
            out[-1] = (out[-1][0], float(f.x[k + 1]), lab)
        else:
            out.append((float(f.x[k]), float(f.x[k + 1]), lab))
    return out


def task(name, pmax=100.0, inputs=(), resources=(), output=None, start=0.0) -> Task:
    return Task(name, pmax, tuple(inputs), tuple(resources), output, start)


def external(name="in", source: PFunc | None = None, requirement: PFunc = IDENTITY_100) -> DataInput:
    return DataInput(name, requirement, source=source if source is not None else const(100.0))


def upstream(frm: str, name="in", requirement: PFunc = IDENTITY_100) -> DataInput:
    return DataInput(name, requirement, from_task=frm)


def res(name="cpu", per_unit: float | PFunc = 1.0, allocation: float | PFunc | None = 1.0, link=None, weight=1.0):
    q = per_unit if isinstance(per_unit, PFunc) else const(per_unit)
    a = None if allocation is None else (allocation if isinstance(allocation, PFunc) else const(allocation))
    return Resource(name, q, allocation=a, link=link, weight=weight)


def workflow(*tasks, links=()) -> Workflow:
    return Workflow(tuple(tasks), tuple(links))

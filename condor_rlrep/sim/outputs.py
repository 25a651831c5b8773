"""A run's result as files: ``workflows.csv``, ``tasks.csv``,
``completion.csv`` and ``summary.json`` (``condor-rlrep simulate --out``).

The folder is written all or nothing (a temporary folder beside it,
renamed into place) and byte for byte the same for the same run: floats as
``repr``, NaN as an empty field, booleans as 0/1, and no wall-clock
figures in the summary.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from condor_rlrep.errors import InputError
from condor_rlrep.sim.result import SimResult

__all__ = ["write_outputs"]


def _fmt(value: Any) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "1" if value else "0"
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return "" if math.isnan(v) else repr(v)
    return str(value)


_ROWS = 1 << 14
"""Rows formatted and written at a time: a year's tasks.csv held as one
string list took more memory than the whole simulation."""


def _texts(values: Any) -> list[str]:
    """:func:`_fmt` of each value of one column's slice, the type decided
    once per column where the column says it (a numpy array's dtype)."""
    if isinstance(values, np.ndarray):
        kind = values.dtype.kind
        items = values.tolist()  # Python floats, ints and bools: _fmt's cases
        if kind == "f":
            return ["" if v != v else repr(v) for v in items]
        if kind == "b":
            return ["1" if v else "0" for v in items]
        if kind in "iu":
            return list(map(str, items))
        return [_fmt(v) for v in items]
    return [v if v.__class__ is str else _fmt(v) for v in values]


def _csv(path: Path, header: list[str], columns: list[Any]) -> None:
    columns = [c if isinstance(c, np.ndarray) else list(c) for c in columns]
    rows = min((len(c) for c in columns), default=0)
    with open(path, "w", encoding="utf-8") as out:
        out.write(",".join(header) + "\n")
        for start in range(0, rows, _ROWS):
            stop = min(start + _ROWS, rows)
            texts = [_texts(c[start:stop]) for c in columns]
            out.write("".join([",".join(row) + "\n" for row in zip(*texts)]))


def write_outputs(result: SimResult, out_dir: str | os.PathLike[str]) -> Path:
    """Write ``workflows.csv``, ``tasks.csv``, ``completion.csv`` and
    ``summary.json`` into ``out_dir``, all or nothing: the files are written
    into a temporary folder beside it that is then renamed into place."""
    out = Path(out_dir)
    parent = out.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=parent))
    try:
        names = result.template_names
        _csv(
            tmp / "workflows.csv",
            ["workflow", "template", "trace_job", "start", "finish", "critical_path", "deadline", "p",
             "replicas", "evictions", "good_j", "bad_j"],
            [np.arange(result.workflows), [names[t] for t in result.wf_template.tolist()], result.wf_trace_job,
             result.wf_start, result.wf_finish, result.wf_critical_path, result.wf_deadline, result.wf_p,
             result.wf_replicas, result.wf_evictions, result.wf_good_j, result.wf_bad_j],
        )
        t = result.tasks
        tpl_of_wf = result.wf_template.tolist()
        node_names = [result.task_names[tpl_of_wf[w]][n] for w, n in zip(t["workflow"].tolist(), t["node"].tolist())]
        _csv(
            tmp / "tasks.csv",
            ["workflow", "node", "submit", "hour", "phi_prime", "state", "replicas", "explored", "finish",
             "success", "good_j", "bad_j", "sigma", "reward", "invocations", "evictions"],
            [t["workflow"], node_names, t["submit"], t["hour"], t["phi_prime"], t["state"], t["replicas"],
             t["explored"], t["finish"], t["success"], t["good_j"], t["bad_j"], t["sigma"], t["reward"],
             t["invocations"], t["evictions"]],
        )
        c = result.completion
        hours, bins = np.nonzero(c.started >= 0)
        edges = c.length_edges_hours
        _csv(
            tmp / "completion.csv",
            ["submit_hour", "length_from_h", "length_to_h", "started", "completed_first"],
            [hours, [edges[b] for b in bins.tolist()], [edges[b + 1] for b in bins.tolist()],
             c.started[hours, bins], c.completed_first[hours, bins]],
        )
        summary = result.summary()
        summary.pop("wall_seconds")  # keep the folder byte-identical for a seed
        summary.pop("events_per_second")
        summary["config"] = result.config.to_dict()
        (tmp / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        _swap_into_place(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _swap_into_place(tmp: Path, out: Path) -> None:
    if not out.exists():
        os.replace(tmp, out)
        return
    if not out.is_dir():
        raise InputError("output path exists and is not a folder", path=str(out))
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.resolve().parent))
    os.rmdir(old)
    os.replace(out, old)
    os.replace(tmp, out)
    shutil.rmtree(old, ignore_errors=True)

"""Write HTCondor user/node event logs in HTCondor's own text format.

Used to build test fixtures and replay scenarios: what this module writes is
read back by the real ``htcondor2.JobEventLog``. The layout of each event
follows what a HTCondor 25.14 pool wrote (docs/dagman.md §4):
a header ``NNN (cluster.proc.subproc) YYYY-MM-DD HH:MM:SS text``, tab-indented
body lines, and a ``...`` line closing the event. Timestamps are written in
local time, as HTCondor does, so the reader's epoch equals the epoch given.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

__all__ = ["EventLogWriter", "format_event_header", "REMOVAL_REASON"]

REMOVAL_REASON = "via condor_rm (by user condor-rlrep)"
_SUBMIT_HOST = "<127.0.0.1:9618?addrs=127.0.0.1-9618&alias=submit>"
_ZERO_USAGE = "Usr 0 00:00:00, Sys 0 00:00:00"


def format_event_header(code: int, cluster: int, proc: int, epoch: float, text: str, subproc: int = 0) -> str:
    """``005 (012.003.000) 2026-12-02 11:07:59 Job terminated.``"""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))
    return f"{code:03d} ({cluster:03d}.{proc:03d}.{subproc:03d}) {stamp} {text}"


def _sinful(host: str) -> str:
    return f"<127.0.0.1:9618?addrs=127.0.0.1-9618&alias={host}>"


@dataclass
class EventLogWriter:
    """Appends events to one log file; every event is one ``write`` call.

    ``classad_notes``: write the node name on SUBMIT events the way 25.x does
    (``[ DAGNodeName = "A"; … ]``) instead of the older ``DAG Node: A``.
    """

    path: str | os.PathLike[str]
    classad_notes: bool = True
    batch_name: str = "workflow.dag+1"

    def _append(self, text: str) -> None:
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(text)

    def _event(self, code: int, cluster: int, proc: int, at: float, head: str, body: list[str]) -> None:
        lines = [format_event_header(code, cluster, proc, at, head), *body, "..."]
        self._append("\n".join(lines) + "\n")

    def submit(self, cluster: int, proc: int, at: float, node: str | None = None) -> None:
        """000: a proc entered the queue (with the DAG node's notes)."""
        body = []
        if node is not None:
            if self.classad_notes:
                body.append(f'    [ DAGNodeName = "{_escape(node)}"; JobBatchName = "{_escape(self.batch_name)}" ]')
            else:
                body.append(f"    DAG Node: {node}")
        self._event(0, cluster, proc, at, f"Job submitted from host: {_SUBMIT_HOST}", body)

    def execute(self, cluster: int, proc: int, at: float, host: str, slot: int = 1) -> None:
        """001: an invocation started on ``host`` (as ``SlotName`` and sinful alias)."""
        body = [f"\tSlotName: slot1_{slot}@{host}", "\tCpus = 1", "\tMemory = 128"]
        self._event(1, cluster, proc, at, f"Job executing on host: {_sinful(host)}", body)

    def evict(
        self, cluster: int, proc: int, at: float, *, code: int | None = None, reason: str | None = None,
        run_seconds: int | None = None,
    ) -> None:
        """004: the invocation stopped; ``code`` 1023 is a ``condor_rm`` removal,
        ``None`` the classic owner eviction (``Job was not checkpointed``)."""
        head = "Job was evicted." if code is None else f"Job was evicted. Code {code} Subcode 0"
        body = [
            "\t(0) Job was not checkpointed." if code is None else "\t(0) CPU times",
            f"\t\t{_ZERO_USAGE}  -  Run Remote Usage",
            f"\t\t{_ZERO_USAGE}  -  Run Local Usage",
            "\t0  -  Run Bytes Sent By Job",
            "\t0  -  Run Bytes Received By Job",
        ]
        if reason is not None:
            body.append(f"\tReason: {reason}")
        if run_seconds is not None:
            body.extend(_resources(run_seconds))
        self._event(4, cluster, proc, at, head, body)

    def remove(self, cluster: int, proc: int, at: float, *, running: bool = True, reason: str = REMOVAL_REASON) -> None:
        """``condor_rm`` of a proc: 004 code 1023 (when running) then 009."""
        if running:
            self.evict(cluster, proc, at, code=1023, reason=reason)
        self.abort(cluster, proc, at, reason=reason)

    def terminate(
        self, cluster: int, proc: int, at: float, *, exit_code: int | None = 0, signal: int | None = None,
        run_seconds: int | None = None,
    ) -> None:
        """005: normal termination with ``exit_code``, or killed by ``signal``."""
        if signal is not None:
            status = [f"\t(0) Abnormal termination (signal {signal})", "\t(0) No core file"]
        else:
            status = [f"\t(1) Normal termination (return value {exit_code})"]
        body = [
            *status,
            f"\t\t{_ZERO_USAGE}  -  Run Remote Usage",
            f"\t\t{_ZERO_USAGE}  -  Run Local Usage",
            f"\t\t{_ZERO_USAGE}  -  Total Remote Usage",
            f"\t\t{_ZERO_USAGE}  -  Total Local Usage",
            "\t0  -  Run Bytes Sent By Job",
            "\t0  -  Run Bytes Received By Job",
            "\t0  -  Total Bytes Sent By Job",
            "\t0  -  Total Bytes Received By Job",
        ]
        if run_seconds is not None:
            body.extend(_resources(run_seconds))
        self._event(5, cluster, proc, at, "Job terminated.", body)

    def abort(self, cluster: int, proc: int, at: float, *, reason: str = REMOVAL_REASON) -> None:
        """009: the proc left the queue without terminating."""
        self._event(9, cluster, proc, at, "Job was aborted.", [f"\t{reason}"])

    def hold(self, cluster: int, proc: int, at: float, *, reason: str = "via condor_hold", code: int = 1) -> None:
        """012: the proc was put on hold (a running invocation stops)."""
        self._event(12, cluster, proc, at, "Job was held.", [f"\t{reason}", f"\tCode {code} Subcode 0"])

    def shadow_exception(self, cluster: int, proc: int, at: float, message: str = "shadow died") -> None:
        """007: the shadow failed; the invocation ended, the proc is requeued."""
        body = [f"\t{message}", "\t0  -  Run Bytes Sent By Job", "\t0  -  Run Bytes Received By Job"]
        self._event(7, cluster, proc, at, "Shadow exception!", body)

    def post_script_terminated(self, cluster: int, proc: int, at: float, node: str, return_value: int = 0) -> None:
        """016: DAGMan ran the node's POST script."""
        body = [f"\t(1) Normal termination (return value {return_value})", f"    DAG Node: {node}"]
        self._event(16, cluster, proc, at, "POST Script terminated.", body)

    def job_ad_information(self, cluster: int, proc: int, at: float, trigger: int, attributes: dict[str, object]) -> None:
        """028: the ``job_ad_information_attrs`` HTCondor logs after the event
        numbered ``trigger`` (as a 25.14 pool writes it: one ClassAd line each)."""
        import datetime

        stamp = datetime.datetime.fromtimestamp(at).isoformat(timespec="milliseconds")
        ad = {"Cluster": cluster, "EventTime": f'"{stamp}"', "EventTypeNumber": 28, "Proc": proc, "Subproc": 0,
              "TriggerEventTypeNumber": trigger,
              **{key: (f'"{_escape(value)}"' if isinstance(value, str) else value) for key, value in attributes.items()}}
        self._event(28, cluster, proc, at, "Job ad information event triggered.",
                    [f"{key} = {value}" for key, value in sorted(ad.items())])

    def partial(self, text: str | None = None) -> None:
        """Append a half-written event (no closing ``...``), as a writer
        interrupted mid-event leaves it."""
        self._append(text if text is not None else "005 (999.000.000) 2026-01-01 00:00:00 Job terminated.\n\t(1) Normal")


def _resources(run_seconds: int) -> list[str]:
    return [
        "\tPartitionable Resources :    Usage  Request Allocated ",
        "\t   Cpus                 :        0        1         1 ",
        "\t   Memory (MB)          :        2       64       128 ",
        f"\t   TimeExecute (s)      :        {int(run_seconds)}                    ",
    ]


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')

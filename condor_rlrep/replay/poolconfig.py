"""The replay pool's configuration, written from a :class:`~condor_rlrep.replay.plan.ReplayPlan`.

S static slots of one CPU each, slot k standing for the plan's machine k.
Owner presence is a ClassAd expression of ``time()`` published in every
slot ad (``OwnerPresent``), computed from the plan's sessions against the
replay's origin (an epoch written into the configuration), so the startd
and the negotiator see an owner arrive at the second it does — no cron, no
reconfiguration during the run. Each slot gets its own value
(``SLOT<k>_OwnerPresent``, ``SLOT<k>_TraceKeyboardIdle``: the startd reads
a ``SLOT<k>_`` value of a ``STARTD_ATTRS`` name before the plain one), so a
slot's ad carries only its own sessions: one expression over every slot's
sessions made each ad grow with the whole plan (≈ 100 KB per ad at 300 slots
and 550 sessions, sent to the collector and the negotiator every few seconds
for every slot — the daemons' CPU grew as S²):

* ``START = OwnerPresent =!= True``: a slot with its owner takes no job;
* ``PREEMPT = OwnerPresent =?= True`` with ``WANT_VACATE = False`` and
  ``MachineMaxVacateTime = 0``: an arriving owner has the job killed at
  once, without checkpoint, as the Newcastle cluster did; the schedd logs
  the eviction (event 004) and the job goes back to the queue;
* the idle attribute (``TraceKeyboardIdle`` by default): seconds since the
  slot's owner last left, in replay seconds; a slot whose owner was never
  seen in the window reads :data:`NEVER_IDLE` plus the time since the origin.
  The startd computes ``KeyboardIdle`` itself from the host's console, so
  the trace's value has a name of its own.

The startd re-evaluates PREEMPT every ``POLLING_INTERVAL`` (1 s here): an
owner's arrival takes effect within a second of replay time.
"""

from __future__ import annotations

import getpass

from condor_rlrep.replay.plan import ReplayPlan

__all__ = ["pool_config", "owner_expression", "idle_expression", "NEVER_IDLE", "IDLE_ATTRIBUTE"]

NEVER_IDLE = 10_000_000
"""Idle seconds of a slot whose owner was never seen (the simulator's "never
used = idle for ever", as a number a rank can order)."""
IDLE_ATTRIBUTE = "TraceKeyboardIdle"
DISK_PER_SLOT_KB = 4 * 1024 * 1024
"""Disk each slot advertises (KB): above the 1 GB a plain job requests by
default (the replay's tasks are ``sleep``: nothing is written)."""


def _num(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".")


def _now(origin: float) -> str:
    return f"(time() - {_num(origin)})"


def owner_expression(plan: ReplayPlan, origin: float, slot: int) -> str:
    """``OwnerPresent`` of slot ``slot`` (1-based): true inside its sessions."""
    now = _now(origin)
    spans = " || ".join(f"({now} >= {_num(a)} && {now} < {_num(b)})" for a, b in plan.sessions[slot - 1])
    return f"({spans})" if spans else "False"


def idle_expression(plan: ReplayPlan, origin: float, slot: int) -> str:
    """Seconds since slot ``slot``'s (1-based) owner last left (0 while present)."""
    now = _now(origin)
    value = f"({NEVER_IDLE} + {now})"
    for a, b in plan.sessions[slot - 1]:  # later sessions wrap the earlier ones: the last one past wins
        value = (f"ifThenElse({now} >= {_num(b)}, {now} - {_num(b)}, "
                 f"ifThenElse({now} >= {_num(a)}, 0, {value}))")
    return value


def _per_slot(plan: ReplayPlan, origin: float) -> str:
    """The slots' own values; a slot without sessions keeps the plain defaults."""
    lines = []
    for slot in range(1, plan.slots + 1):
        if plan.sessions[slot - 1]:
            lines.append(f"SLOT{slot}_OwnerPresent = {owner_expression(plan, origin, slot)}")
            lines.append(f"SLOT{slot}_{IDLE_ATTRIBUTE} = {idle_expression(plan, origin, slot)}")
    return "\n".join(lines)


def pool_config(plan: ReplayPlan, *, release: str, local_dir: str, port: int, origin: float,
                negotiation_interval: float = 2.0, user: str | None = None) -> str:
    """The whole ``condor_config`` of a personal replay pool on loopback."""
    user = user or getpass.getuser()
    interval = max(1, round(negotiation_interval))
    return f"""\
## condor-rlrep replay: a personal pool on loopback whose slots stand for a trace's desktops.
RELEASE_DIR = {release}
LOCAL_DIR = {local_dir}
LOCAL_CONFIG_FILE =
LOCAL_CONFIG_DIR =
use ROLE : Personal
CONDOR_HOST = 127.0.0.1
COLLECTOR_HOST = 127.0.0.1:{port}
NETWORK_INTERFACE = 127.0.0.1
BIND_ALL_INTERFACES = False
USE_SHARED_PORT = False
DAEMON_LIST = MASTER COLLECTOR NEGOTIATOR STARTD SCHEDD
MAIL = /bin/true
UID_DOMAIN = rlrep.replay
FILESYSTEM_DOMAIN = rlrep.replay
ALLOW_READ = 127.0.0.1, {user}@*
ALLOW_WRITE = 127.0.0.1, {user}@*
ALLOW_DAEMON = 127.0.0.1, {user}@*
ALLOW_ADMINISTRATOR = 127.0.0.1, {user}@*
ALLOW_NEGOTIATOR = 127.0.0.1, {user}@*
ALLOW_CONFIG = 127.0.0.1, {user}@*
SEC_DEFAULT_AUTHENTICATION_METHODS = FS
SEC_CLIENT_AUTHENTICATION_METHODS = FS
RunBenchmarks = 0
STARTD_DETECT_GPUS =
HIBERNATE_CHECK_INTERVAL = 0
PREEN =

# S static slots of one CPU: slot k is the trace's machine k (replay plan)
NUM_CPUS = {plan.slots}
NUM_SLOTS = {plan.slots}
MEMORY = {512 * plan.slots}
# every slot advertises DISK_PER_SLOT_KB: the startd otherwise splits the partition's free space among the
# slots, and a job's default RequestDisk (1 GB) matches no slot once S is in the hundreds
DISK = {DISK_PER_SLOT_KB * plan.slots}

# owners from the trace, as expressions of time() against the replay's origin
ReplayOrigin = {_num(origin)}
OwnerPresent = False
{IDLE_ATTRIBUTE} = ({NEVER_IDLE} + {_now(origin)})
{_per_slot(plan, origin)}
STARTD_ATTRS = $(STARTD_ATTRS) ReplayOrigin OwnerPresent {IDLE_ATTRIBUTE}
START = (OwnerPresent =!= True)
PREEMPT = (OwnerPresent =?= True)
SUSPEND = False
CONTINUE = True
WANT_SUSPEND = False
WANT_VACATE = False
KILL = True
MachineMaxVacateTime = 0
MAXJOBRETIREMENTTIME = 0
RANK = 0
NEGOTIATOR_CONSIDER_PREEMPTION = False
POLLING_INTERVAL = 1
# the startd sends a slot's ad at once when its state changes; the periodic resend of every ad is only a
# refresh — every 2 s it was 150 ads/s at 300 slots, on a loaded machine enough to starve the startd; at most
# 30 refreshes a second however many slots
UPDATE_INTERVAL = {max(10, -(-plan.slots // 30))}

# negotiation and the schedd at a pace that fits the compressed trace
NEGOTIATOR_INTERVAL = {interval}
NEGOTIATOR_MIN_INTERVAL = 1
NEGOTIATOR_CYCLE_DELAY = 1
SCHEDD_INTERVAL = 2
SCHEDD_MIN_INTERVAL = 1
JOB_START_DELAY = 0
JOB_START_COUNT = 50
PERIODIC_EXPR_INTERVAL = 2
# job events (execute, evict, terminate) are logged when they happen whatever these are; the periodic
# starter → shadow/startd and shadow → schedd updates only refresh usage, and at 2 s for a hundred running
# jobs they kept the startd too busy to answer: shadows timed out activating claims (exit 108)
STARTER_UPDATE_INTERVAL = 60
SHADOW_QUEUE_UPDATE_INTERVAL = 60
START_LOCAL_UNIVERSE = True
START_SCHEDULER_UNIVERSE = True
# a shadow that cannot reach a busy startd to kill a removed replica sleeps out the job's lease before it
# gives up (2400 s by default), and the DAG waits that long for the replica's end: 3 of 200 workflows
# did in sim/results/replay-figure1-seq; jobs DAGMan submits take this lease instead
JOB_DEFAULT_LEASE_DURATION = 120

# DAGMan: node logs anywhere; quick log scans; sub-second times in .dagman.out
DAGMAN_USE_STRICT = 0
DAGMAN_USER_LOG_SCAN_INTERVAL = 1
DAGMAN_MAX_SUBMITS_PER_INTERVAL = 100
DAGMAN_DEBUG = D_SUB_SECOND
"""

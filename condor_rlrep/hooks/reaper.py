"""The reaper's SERVICE-node entry logic: follow the DAG's node log until the
DAG is over, removing surplus replicas (:class:`condor_rlrep.condor.reaper.Reaper`).

``rlrep-reaper --ctx DIR [--log NODES.LOG] [--interval SECONDS] [--stop-file PATH]``

It stops (after one last poll) when DAGMan removes the SERVICE node at the
end of the DAG (SIGTERM), on SIGINT, when the stop file (default
``<ctx>/reaper.stop``) appears, or when DAGMan writes the DAG's ``.metrics``
file (it does so as it exits).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Sequence
from typing import Any

from condor_rlrep.hooks.argv import parse_hook_argv
from condor_rlrep.hooks.hooklog import HookLog

__all__ = ["run_reaper"]


def run_reaper(argv: Sequence[str], *, schedd: Any = None, sleep: Any = time.sleep) -> int:
    from condor_rlrep.condor.reaper import Reaper
    from condor_rlrep.hooks.layout import HookSettings

    args = parse_hook_argv(argv)
    context = args.options.get("ctx")
    hooklog = HookLog(os.path.join(context, "hooks.log") if context else None)
    log_path = args.text("log")
    dag = None
    settings = None
    if context is not None:
        try:
            settings = HookSettings.load(context)
            log_path = log_path or settings.node_log_path()
            dag = str(settings.dag)
        except Exception as err:
            hooklog.line("REAPER", None, f"settings unreadable ({err})")
    if log_path is None:
        hooklog.line("REAPER", None, "no node log to follow (--ctx or --log needed); exiting")
        return 0
    stop_file = args.text("stop-file") or (os.path.join(context, "reaper.stop") if context else None)
    interval = float(args.text("interval") or 5.0)
    started = time.time()
    stop = {"signal": None}

    def on_signal(signum: int, frame: Any) -> None:
        stop["signal"] = signum

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)

    def should_stop() -> bool:
        if stop["signal"] is not None:
            return True
        if stop_file and os.path.exists(stop_file):
            return True
        if dag is not None:
            try:
                return os.stat(dag + ".metrics").st_mtime >= started
            except OSError:
                return False
        return False

    reaper = Reaper(log_path, schedd=schedd, on_line=lambda line: hooklog.line("REAPER", None, line))
    hooklog.line("REAPER", None, f"following {log_path} every {interval:g}s")
    reaper.run(interval=interval, should_stop=should_stop, sleep=sleep)
    if settings is not None and context is not None:
        _flush_spool(context, settings, hooklog)
    hooklog.line(
        "REAPER", None,
        f"stopped ({'signal ' + str(stop['signal']) if stop['signal'] else 'DAG done or stop file'}); "
        f"{len(reaper.reaped)} cluster(s) reaped, {reaper.errors} error(s)",
    )
    return 0


def _flush_spool(context: str, settings: Any, hooklog: HookLog) -> None:
    """Outcomes a POST could not store (store locked) go in at the DAG's end."""
    if not os.path.isdir(os.path.join(context, "spool")) or not os.listdir(os.path.join(context, "spool")):
        return
    try:
        from condor_rlrep.agent.location import open_store
        from condor_rlrep.hooks.post import flush_spool

        with open_store(settings.store_path()) as store:
            flushed = flush_spool(context, store)
        hooklog.line("REAPER", None, f"{flushed} spooled outcome(s) recorded in the store")
    except Exception as err:
        hooklog.line("REAPER", None, f"spooled outcomes left in {context}/spool: {err}")

"""``condor-rlrep agent …``: create, inspect and drive the replica agent's store.

The store is ``--store``, else ``$CONDOR_RLREP_STORE``, else
``$XDG_DATA_HOME/condor-rlrep/agent.sqlite`` (``~/.local/share/…``): a file
path (SQLite) or a ``postgresql://`` URL (a server shared by several access
points). A URL is only ever printed without its password.

The group only; its commands live by what they do with the store:
:mod:`.agent_setup_cmd` (init, reset, export, import, migrate),
:mod:`.agent_show_cmd` (show), :mod:`.agent_history_cmd` (stats, prune,
retention), :mod:`.agent_decide_cmd` (decide, record) and
:mod:`.agent_flush_cmd` (flush a run's spool).
"""

from __future__ import annotations

import click

from condor_rlrep.cli.agent_decide_cmd import decide, record
from condor_rlrep.cli.agent_flush_cmd import flush
from condor_rlrep.cli.agent_history_cmd import prune, retention, stats
from condor_rlrep.cli.agent_setup_cmd import export, import_, init, migrate, reset
from condor_rlrep.cli.agent_show_cmd import show
from condor_rlrep.cli.options import HELP, Group

__all__ = ["agent"]


@click.group(cls=Group, context_settings=HELP)
def agent() -> None:
    """Create, inspect and drive the replica agent's store."""


for _command in (init, show, stats, export, import_, migrate, prune, retention, reset, decide, record, flush):
    agent.add_command(_command)

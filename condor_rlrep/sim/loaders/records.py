"""What a log file yields, before it becomes a trace.

Every parser of :mod:`condor_rlrep.sim.loaders` fills one
:class:`Records` per file, in absolute Unix seconds (a trace's times are
relative to its start, which is known only once every file is read);
:func:`~condor_rlrep.sim.loaders.assemble.load_trace` merges them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Records"]


@dataclass
class Records:
    """What one log file yields, in absolute Unix seconds."""

    job_names: list[str] = field(default_factory=list)
    job_submit: list[float] = field(default_factory=list)
    job_duration: list[float] = field(default_factory=list)
    job_owner: list[str] = field(default_factory=list)
    machines: dict[str, tuple[str, dict[str, str]]] = field(default_factory=dict)  # name -> (room, extra)
    login_machine: list[str] = field(default_factory=list)
    login_start: list[float] = field(default_factory=list)
    login_end: list[float] = field(default_factory=list)
    login_where: list[tuple[str, int]] = field(default_factory=list)  # (file, line) of each login row
    last_time: float = 0.0  # latest time the input covers (Unix seconds)
    skipped: int = 0
    timezone: str | None = None

    def extend(self, other: Records) -> None:
        for name in (
            "job_names", "job_submit", "job_duration", "job_owner",
            "login_machine", "login_start", "login_end", "login_where",
        ):
            getattr(self, name).extend(getattr(other, name))
        for name, value in other.machines.items():
            self.machines.setdefault(name, value)
        self.skipped += other.skipped
        self.last_time = max(self.last_time, other.last_time)
        self.timezone = self.timezone or other.timezone

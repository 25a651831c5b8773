"""Power of execute hosts: what an invocation costs in energy.

Energy of one invocation = its run time × the active power of its machine
(eq. 3 of the replication paper). Hosts are looked up by exact name first, then
by the first matching ``fnmatch`` pattern (so a power table can name host
classes such as ``lab-a-*``), then fall back to a pool-wide default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["PowerTable", "DEFAULT_ACTIVE_WATTS"]

# Assumed: a desktop-class machine under full load (the Newcastle cluster's
# machines draw 40-100 W active; docs/sources.md §2.3 has the sourced figures).
DEFAULT_ACTIVE_WATTS = 75.0


@dataclass(frozen=True)
class PowerTable:
    """Active power (W) per host name or host-name pattern, with a default."""

    default_watts: float = DEFAULT_ACTIVE_WATTS
    hosts: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.default_watts >= 0:
            raise ValueError(f"default power must be >= 0 W, got {self.default_watts!r}")
        for host, watts in self.hosts.items():
            if not watts >= 0:
                raise ValueError(f"power of host {host!r} must be >= 0 W, got {watts!r}")

    def watts(self, host: str | None) -> float:
        """Active power of ``host`` (``None``: unknown host → the default)."""
        if host is None:
            return self.default_watts
        exact = self.hosts.get(host)
        if exact is not None:
            return exact
        import fnmatch  # only tables with patterns pay for the regex machinery

        for pattern, watts in self.hosts.items():
            if fnmatch.fnmatchcase(host, pattern):
                return watts
        return self.default_watts

"""condor-rlrep: learned task replication for HTCondor DAGMan workflows.

The package configures no logging (a library must not) and, unlike most
libraries, does not even import :mod:`logging` here: the DAGMan hooks start
thousands of times per workflow and pay for every module they import.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]

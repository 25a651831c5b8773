"""From a policy spec to the simulator's policy object: every family in one place.

The grammar of a spec is :mod:`condor_rlrep.policyspec`'s; the policies
live by family — the paper's (``single``, ``fixed:K``, ``rl:R``,
``oracle:R``) in :mod:`condor_rlrep.sim.policies`, ``idle-…`` and the
survival-model kinds in :mod:`condor_rlrep.sim.beyond`, the contextual
bandits in :mod:`condor_rlrep.sim.contextual`. This module is the only one
that knows all of them, so the imports go one way: the families import
the runner they are run by (and the runner the paper's policies), never
this module or each other's builders. The families beyond the paper are
imported when a spec names them.
"""

from __future__ import annotations

from typing import Any

from condor_rlrep.policyspec import CONTEXTUAL_KINDS, PolicySpec, parse_spec
from condor_rlrep.sim.policies import Policy, build_paper_policy

__all__ = ["parse_policy", "build_policy"]


def parse_policy(spec: str, *, agent_config: Any = None, rng: Any = None, agent: Any = None) -> Policy:
    """Build the policy named by ``spec`` (the grammar is
    :mod:`condor_rlrep.policyspec`'s; the policies, :mod:`condor_rlrep.sim.policies`'
    docstring).

    ``agent_config`` (an :class:`~condor_rlrep.agent.config.AgentConfig`) is
    the base for ``rl`` policies; its ``max_replicas`` and ``strategy`` are
    overridden by the spec. ``agent``: use this agent instead (e.g. one
    loaded from a store to continue training).
    """
    parsed = parse_spec(spec)
    return build_policy(parsed, agent_config=agent_config, rng=rng, agent=agent)


def build_policy(spec: PolicySpec, *, agent_config: Any = None, rng: Any = None, agent: Any = None) -> Policy:
    """The simulator's policy object for a parsed spec."""
    if spec.kind in CONTEXTUAL_KINDS:  # linucb:R, lints:R
        from condor_rlrep.sim.contextual import build_contextual

        return build_contextual(spec, rng=rng)
    if spec.prefers_idle:  # idle-…, model:R, react:R, model-react:R
        from condor_rlrep.sim.beyond import IdlePolicy, build_model_policy

        if spec.idle:
            return IdlePolicy(spec.text, build_policy(spec.base, agent_config=agent_config, rng=rng, agent=agent))
        return build_model_policy(spec)
    return build_paper_policy(spec, agent_config=agent_config, rng=rng, agent=agent)

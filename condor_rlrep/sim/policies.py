"""Replica policies of the simulator (§4.5 of the replication paper).

* ``single`` — every task once (the baseline of Table 1);
* ``fixed:K`` — every task K times;
* ``rl:R`` / ``rl-<strategy>:R`` — the bandit agent (:class:`condor_rlrep.agent.bandit.Agent`,
  the same one the live hooks use) chooses 1 … R, ε-greedy by default,
  ``rl-ucb1:R`` and ``rl-thompson:R`` select the other strategies;
* ``oracle:R`` — a clairvoyant bound for comparison, defined as follows. At
  the task's submission it knows every future login and the reboot times.
  If some machine is free now and will stay free (no login, no reboot)
  until the task would finish there, it runs ONE replica on such a machine
  (the lowest-watt one under ``efficient`` machine choice, a random one
  otherwise): the task then finishes in exactly its run time with no wasted
  energy, which no policy can beat for that task. If the nightly reboot
  falls before the task could finish, every run started now is killed, so it
  runs ONE replica (least waste; it restarts after the reboot). Otherwise no
  free machine avoids a login and it falls back to R replicas matched as
  usual. The oracle places at once even when the
  negotiation interval is positive (it skips that wait too). It is a bound
  for one task at a time, not a global optimum over contention.

Beyond the paper (issue 14): ``idle-…``, ``model:R``, ``react:R`` and
``model-react:R`` in :mod:`condor_rlrep.sim.beyond`, the contextual bandits
``linucb:R`` and ``lints:R`` in :mod:`condor_rlrep.sim.contextual`. Which
module builds the policy of a spec is :mod:`condor_rlrep.sim.policy_registry`'s
to say; this module knows only the paper's policies, so that the runner
(which checks for the oracle) and the other policy modules can import it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Protocol

from condor_rlrep.errors import InputError
from condor_rlrep.policyspec import PolicySpec, parse_spec

__all__ = ["Policy", "FixedPolicy", "AgentPolicy", "OraclePolicy", "build_paper_policy", "depends_on_phi"]


class Policy(Protocol):
    name: str
    max_replicas: int

    def choose(self, hour: int, phi_prime: float) -> tuple[int, bool, int]:
        """(replicas, explored, state index or -1)."""

    def learn(self, state: int, replicas: int, reward: float) -> None: ...


@dataclass
class FixedPolicy:
    name: str
    max_replicas: int

    def choose(self, hour: int, phi_prime: float) -> tuple[int, bool, int]:
        return self.max_replicas, False, -1

    def learn(self, state: int, replicas: int, reward: float) -> None:
        pass


class AgentPolicy:
    """The bandit agent; state = (hour of submission, φ′ bin)."""

    def __init__(self, name: str, agent: Any):
        self.name = name
        self.agent = agent
        self.max_replicas = agent.config.max_replicas
        self._phi_bin = agent.space.phi_bin
        self._bins = agent.space.n_phi_bins
        self._choose = agent.choose
        self.learn = agent.learn  # the same signature: no wrapper call per reward

    def choose(self, hour: int, phi_prime: float) -> tuple[int, bool, int]:
        # StateSpace.index without re-validating the simulator's own hour
        state = hour * self._bins + self._phi_bin(phi_prime)
        action, explored = self._choose(state)
        return action, explored, state

    def learn(self, state: int, replicas: int, reward: float) -> None:  # replaced per instance in __init__
        self.agent.learn(state, replicas, reward)


@dataclass
class OraclePolicy(FixedPolicy):
    """See the module docstring: it asks for R like fixed:R; the placement
    that makes it an oracle is done by the runner, which checks this type."""


def depends_on_phi(spec: str) -> bool:
    """Whether the run of policy ``spec`` changes with the contingency φ.

    single, fixed:K and oracle:R never look at φ′ (the oracle places by
    logins and reboots alone), so every φ sees the same run; only the
    deadlines it is judged against move. The learning policies choose by
    φ′ and so do not (:attr:`~condor_rlrep.policyspec.PolicySpec.depends_on_phi`).
    An unknown spec counts as depending on φ.
    """
    try:
        return parse_spec(spec).depends_on_phi
    except InputError:
        return True


def build_paper_policy(spec: PolicySpec, *, agent_config: Any = None, rng: Any = None, agent: Any = None) -> Policy:
    """The policy of a parsed ``single``, ``fixed:K``, ``oracle:R`` or
    ``rl[-strategy]:R`` spec (arguments: :func:`~condor_rlrep.sim.policy_registry.build_policy`)."""
    k = spec.count
    assert k is not None
    if spec.kind == "single":
        return FixedPolicy("single", 1)
    if spec.kind == "fixed":
        return FixedPolicy(f"fixed:{k}", k)
    if spec.kind == "oracle":
        return OraclePolicy(f"oracle:{k}", k)
    from condor_rlrep.agent.bandit import Agent
    from condor_rlrep.agent.config import AgentConfig

    if agent is None:
        base = agent_config if agent_config is not None else AgentConfig()
        changes: dict[str, Any] = {"max_replicas": k}
        if spec.strategy is not None:
            changes["strategy"] = spec.strategy
        agent = Agent(replace(base, **changes), rng=rng)
    elif agent.config.max_replicas != k:
        raise InputError(f"policy {spec.text!r}: the given agent has R = {agent.config.max_replicas}")
    return AgentPolicy(spec.text, agent)

"""A tour of condor-rlrep's Python API, cell by cell (``# %%`` cells open as
a notebook in Jupyter/VS Code; ``python examples/api_tour.py`` runs it all).

Everything here is what a command does — ``inspect``, ``trace generate``,
``simulate``, ``instrument``, ``agent show``, ``report`` of a sweep — as
Python values instead of printed text. Run from the top of the checkout
(it reads examples/figure1 and sim/results/paper-figure1); it writes only
into a temporary folder.
"""

# %% The workflow and its criticality
import tempfile
from pathlib import Path

import condor_rlrep as rl

HERE = Path(__file__).resolve().parent
workflow = rl.load_workflow(HERE / "figure1" / "figure1.dag")
print(f"{len(workflow.nodes)} nodes")

plan = rl.plan(workflow, phi=0.5)
print(f"CR(W) = {plan.critical_path_seconds:.0f} s along {' → '.join(plan.critical_path)}")
print(f"deadline (1+φ)·CR(W) = {plan.deadline:.0f} s")
for node, phi_prime in sorted(plan.planned_phi_prime().items()):
    print(f"  φ′({node}) at its planned start = {phi_prime:.2f}")

# %% A trace, and two policies on it
trace = rl.load_trace(preset="poisson", days=7, seed=1)
print(f"trace: {trace.machine_count} machines, {trace.job_count} jobs, {trace.length / 86400:.0f} days")

results = {policy: rl.simulate(trace, policy, phi=0.5, fraction=0.2, seed=1) for policy in ("single", "fixed:2")}
for policy, result in results.items():
    summary = result.summary()
    print(f"{policy:8} {summary['completed']}/{summary['workflows']} workflows, "
          f"within P=0.5: {summary['within']['0.5']}, {summary['replicas']} replicas, "
          f"{summary['energy_kwh']['total']:.1f} kWh")

# %% An agent trained in simulation
trained = rl.simulate(trace, "rl:3", phi=0.5, fraction=0.2, seed=1)
agent = trained.agent
print(f"agent: {agent.config.max_replicas} actions, {agent.n_states} states")

# %% Instrument a DAG for a pool; the store it created
work = Path(tempfile.mkdtemp(prefix="rlrep-tour-"))
done = rl.instrument(HERE / "figure1" / "figure1.dag", work / "run" / "figure1.rlrep.dag",
                     store=str(work / "agent.sqlite"), phi=0.5, dagman_version=(25, 14, 0))
print(f"wrote {done.dag}: {len(done.replicated)} replicable nodes; store {done.store_note}")
with rl.open_store(work / "agent.sqlite") as store:
    live = store.load_agent()
print(f"the live agent chooses among 1..{live.config.max_replicas} replicas")

# %% The committed sweep of the paper's Figure 1 grid
table = rl.sweep_results(HERE.parent / "sim" / "results" / "paper-figure1")
print(f"{len(table.records)} finished runs; workflow sets {table.workflow_sets()}")

# %% Tidy up the scratch folder
import shutil

shutil.rmtree(work)

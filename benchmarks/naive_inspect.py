"""The anchor for bench_inspect.py: ``inspect --json`` as a user could write it in 60 lines.

Plain dicts and lists, no validation: reads ``JOB name file``,
``VARS name rlrep_estimate="S"`` and ``PARENT a … CHILD b …`` lines and prints
the same per-node figures as ``condor-rlrep inspect --json --phi 0.5``
(estimate, L′, earliest start, planned φ′ and φ″, parents, children).

    python benchmarks/naive_inspect.py FILE.dag > out.json
"""

import json
import sys

PHI = 0.5
nodes, parents, children, estimate = [], {}, {}, {}
for line in open(sys.argv[1]):
    words = line.split()
    if not words or words[0].startswith("#"):
        continue
    if words[0] == "JOB":
        nodes.append(words[1])
        parents[words[1]], children[words[1]] = [], []
    elif words[0] == "VARS" and words[2].startswith("rlrep_estimate="):
        estimate[words[1]] = float(words[2].split("=", 1)[1].strip('"'))
    elif words[0] == "PARENT":
        cut = words.index("CHILD")
        for p in words[1:cut]:
            for c in words[cut + 1:]:
                children[p].append(c)
                parents[c].append(p)
# Kahn's algorithm: a topological order
indegree = {n: len(parents[n]) for n in nodes}
order = [n for n in nodes if indegree[n] == 0]
for n in order:
    for c in children[n]:
        indegree[c] -= 1
        if indegree[c] == 0:
            order.append(c)
remaining, tail, start = {}, {}, {}
for n in reversed(order):
    tail[n] = max((remaining[c] for c in children[n]), default=0.0)
    remaining[n] = estimate[n] + tail[n]
for n in order:
    start[n] = max((start[p] + estimate[p] for p in parents[n]), default=0.0)
cr = max((remaining[n] for n in nodes if not parents[n]), default=0.0)
deadline = (PHI + 1) * cr


def ratio(left, denominator):
    return left / denominator - 1 if denominator > 0 else None


out = {"critical_path_seconds": cr, "phi": PHI, "nodes": {}}
for n in nodes:
    out["nodes"][n] = {
        "estimate": estimate[n], "L": remaining[n], "earliest_start": start[n],
        "phi_prime": ratio(deadline - start[n], remaining[n]),
        "phi_double_prime": ratio(deadline - start[n] - tail[n], estimate[n]),
        "parents": sorted(parents[n]), "children": sorted(children[n]),
    }
sys.stdout.write(json.dumps(out))  # dumps: the C encoder (json.dump streams in Python)

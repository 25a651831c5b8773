"""The parser-only floor for bench_inspect_memory.py: a DAG reader as a user could write it.

What a 60-line naive parser keeps of a DAG and nothing more (issue 28's
anchor for ``inspect``'s memory): per node its submit file, its VARS (a
dict), its parents and children (lists of names), in plain dicts and lists,
no validation, no INCLUDE/SPLICE, no output beyond a count. It reads the
file line by line (``for line in open(...)``), so no list of lines is held.

    python benchmarks/naive_parse.py FILE.dag
"""

import sys

nodes = {}  # name -> {"submit": file, "vars": {key: value}, "parents": [...], "children": [...]}
edges = 0
with open(sys.argv[1]) as handle:
    for line in handle:
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        keyword = words[0].upper()
        if keyword == "JOB":
            nodes[words[1]] = {"submit": words[2], "vars": {}, "parents": [], "children": []}
        elif keyword == "VARS":
            for pair in words[2:]:
                key, _, value = pair.partition("=")
                nodes[words[1]]["vars"][key] = value.strip('"')
        elif keyword == "PARENT":
            cut = words.index("CHILD")
            for parent in words[1:cut]:
                for child in words[cut + 1:]:
                    nodes[parent]["children"].append(child)
                    nodes[child]["parents"].append(parent)
                    edges += 1
print(f"{len(nodes)} nodes, {edges} edges")

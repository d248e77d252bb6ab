#!/usr/bin/env python3
"""Compares the results a mops bench recorded with `mops bench --save` against icbench's
rerun of it (`icbench mops --save`), cell by cell, and prints the outcome as markdown:
the table of docs/mops.md's last section. Used by scripts/mops-recorded.sh and
scripts/motoko-core-recorded.sh.

    python3 scripts/compare-recorded.py [--by-figure] RECORDED OURS [NAME.bench.json ...]

RECORDED and OURS are the two `.bench` directories; the NAMEs are the results to compare
(default: every file in RECORDED). --by-figure adds to the total how many cells each
figure is equal in.
"""

import json
import os
import sys

FIELDS = ["instructions", "rts_heap_size", "rts_reclaimed", "rts_total_allocation",
          "rts_mutator_instructions", "rts_collector_instructions",
          "rts_logical_stable_memory_size", "rts_memory_size", "stable_memory_size",
          "rts_stable_memory_size"]


def results(directory, name):
    with open(os.path.join(directory, name)) as f:
        return dict(json.load(f)["results"])


def main(args):
    by_figure = args[:1] == ["--by-figure"]
    if by_figure:
        args = args[1:]
    recorded, ours, names = args[0], args[1], args[2:] or sorted(os.listdir(args[0]))
    print("| bench | cell | figures equal | differences (recorded → icbench) |")
    print("| :-- | :-- | --: | :-- |")
    total = equal = 0
    per_field = {f: 0 for f in FIELDS}
    for name in names:
        rec, mine = results(recorded, name), results(ours, name)
        for cell, figures in rec.items():
            diffs = [f"{f} {figures[f]:,} → {mine[cell][f]:,}" for f in FIELDS if figures[f] != mine[cell][f]]
            for f in FIELDS:
                per_field[f] += figures[f] == mine[cell][f]
            total += len(FIELDS)
            equal += len(FIELDS) - len(diffs)
            print(f"| {name[:-11]} | {cell} | {len(FIELDS) - len(diffs)}/{len(FIELDS)} | {'; '.join(diffs)} |")
    if by_figure:
        print(f"\n{equal} of {total} figures equal; by figure: " +
              ", ".join(f"{f} {c}/{total // len(FIELDS)}" for f, c in per_field.items()) + ".")
    else:
        print(f"\n{equal} of {total} figures equal.")


if __name__ == "__main__":
    main(sys.argv[1:])

#!/usr/bin/env python3
"""Compares how two runs of the same suites went, from their work.csv files: typically
`--jobs 1` and `--jobs 2` of one build, to see whether a unit of work gets slower when
workers run beside each other (memory bandwidth, the kernel's locks) and how well the
list-scheduling model in report.md predicted the wall time.

    python3 scripts/work-compare.py DIR_A DIR_B

DIR_A and DIR_B are two runs' --out directories (seed003's work.csv at the top, every other
suite's in its own directory). For each suite both ran it prints the measured wall time
and the model's prediction for each run's jobs (from report.md), then per kind of unit:
units, CPU seconds per unit, wall seconds per unit, minor faults per unit and voluntary
context switches (sleeps: lock waits, I/O) per unit, A against B with the ratio B/A.
Prints markdown.
"""

import csv
import os
import re
import sys
from collections import defaultdict


def work_files(root):
    found = {}
    for dirpath, _, files in os.walk(root):
        if "work.csv" in files:
            rel = os.path.relpath(dirpath, root)
            found["seed003" if rel == "." else rel] = dirpath
    return found


def load_units(path):
    with open(os.path.join(path, "work.csv"), newline="") as f:
        return list(csv.DictReader(f))


def model_line(path):
    """(measured wall, jobs, modelled wall) from report.md's work section."""
    with open(os.path.join(path, "report.md")) as f:
        text = f.read()
    # Reports since the model gave multi-threaded units their cores name the machine's
    # cores in the parenthesis; older ones say only "the model".
    m = re.search(
        r"Measured here: ([\d.,]+) s on (\d+) jobs? \(the model[^:]*: ([\d.,]+) s\)", text
    )
    if not m:
        return None
    num = lambda s: float(s.replace(",", ""))
    return num(m.group(1)), int(m.group(2)), num(m.group(3))


def by_kind(units):
    kinds = defaultdict(lambda: {"n": 0, "cpu": 0.0, "wall": 0.0, "faults": 0, "sleeps": 0})
    for u in units:
        k = kinds[u["kind"]]
        k["n"] += 1
        k["cpu"] += float(u["cpu"])
        k["wall"] += float(u["end"]) - float(u["start"])
        k["faults"] += int(u["minor_faults"])
        k["sleeps"] += int(u["voluntary_switches"])
    return kinds


def ratio(a, b):
    return f"{b / a:.2f}" if a > 0 else "-"


def main():
    if len(sys.argv) != 3:
        print("usage: python3 scripts/work-compare.py DIR_A DIR_B", file=sys.stderr)
        sys.exit(2)
    a_root, b_root = sys.argv[1], sys.argv[2]
    for root in (a_root, b_root):
        if not os.path.isdir(root):
            print(f"work-compare: {root} is not a directory", file=sys.stderr)
            sys.exit(2)
    a_files, b_files = work_files(a_root), work_files(b_root)
    common = sorted(set(a_files) & set(b_files))
    if not common:
        print("work-compare: no suite has a work.csv in both directories", file=sys.stderr)
        sys.exit(2)
    for suite in common:
        a_dir, b_dir = a_files[suite], b_files[suite]
        ma, mb = model_line(a_dir), model_line(b_dir)
        print(f"### {suite}\n")
        for label, m in (("A", ma), ("B", mb)):
            if m:
                wall, jobs, model = m
                print(f"- {label}: {wall:.1f} s measured on {jobs} job(s), the model {model:.1f} s ({model / wall:.2f} of measured)")
        print()
        ka, kb = by_kind(load_units(a_dir)), by_kind(load_units(b_dir))
        print("| work | units | CPU/unit A | CPU/unit B | B/A | wall/unit A | wall/unit B | B/A | faults/unit A | faults/unit B | sleeps/unit A | sleeps/unit B |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for kind in sorted(set(ka) | set(kb)):
            x, y = ka.get(kind), kb.get(kind)
            if not x or not y:
                continue
            per = lambda k, f: k[f] / k["n"]
            print(
                f"| {kind} | {x['n']}/{y['n']} | {per(x, 'cpu'):.4f} | {per(y, 'cpu'):.4f} | {ratio(per(x, 'cpu'), per(y, 'cpu'))} "
                f"| {per(x, 'wall'):.4f} | {per(y, 'wall'):.4f} | {ratio(per(x, 'wall'), per(y, 'wall'))} "
                f"| {per(x, 'faults'):.0f} | {per(y, 'faults'):.0f} | {per(x, 'sleeps'):.1f} | {per(y, 'sleeps'):.1f} |"
            )
        print()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Puts two runs of the default suite side by side, charged by two replica vintages.

    target/release/icbench --replica 2026-05 --out /tmp/old --quiet
    target/release/icbench --out /tmp/new --quiet          # the newest vintage
    scripts/vintage-side-by-side.py /tmp/old /tmp/new > side-by-side.md

Prints markdown: for every table of the default run (store instructions per message,
`ic0.performance_counter` around the store work) the cell under each vintage and their
ratio; the charged instructions of the same messages; the capacity estimate; and the two
decision tables with what changed. Both runs must be of the same build, rows and seed (the
script checks that the scenarios match one for one). The figures are the runs' own: this
only arranges them.
"""

import json
import pathlib
import sys

from report_md import section


def load(directory):
    report = json.loads((pathlib.Path(directory) / "results.json").read_text())
    if report.get("suite") != "seed003":
        sys.exit(f"{directory}: a seed003 (default) run is needed, found {report.get('suite')}")
    return report


def column(r):
    if r["store"] == "sqlite":
        return r["journal_mode"]
    return {"heap": "Heap", "btree": "BTreeMap"}[r["store"]]


def key(r):
    return (r["position"], r["operation"], r["batch"], column(r))


def short(n):
    for div, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= div:
            return f"{n / div:.1f}{suffix}"
    return str(int(n))


def ratio(old, new):
    if old == 0:
        return "-"
    x = new / old
    return f"{x:.0f}x" if x >= 100 else f"{x:.1f}x" if x >= 10 else f"{x:.2f}x"


ROW_NAMES = {
    ("insert", 1): "insert 1",
    ("insert", 10): "insert 10",
    ("insert", 100): "insert 100",
    ("insert", 1000): "insert 1,000",
    ("insert", 10000): "insert 10,000",
    ("point_lookup", 1): "lookup 1 key",
    ("point_lookup", 100): "lookup 100 keys",
    ("range_scan", 1000): "scan 1,000 rows",
}


def grid(old, new, field, title):
    olds = {key(r): r for r in old["results"] if r["status"] == "ok"}
    news = {key(r): r for r in new["results"] if r["status"] == "ok"}
    if set(olds) != set(news):
        sys.exit("the two runs measured different scenarios: run both with the same options")
    columns = []
    for r in new["results"]:
        if column(r) not in columns:
            columns.append(column(r))
    out = []
    for position in ("middle", "end", "random"):
        out.append(f"\n{title}, {position} ({old['replica']} → {new['replica']}, and the ratio)\n")
        out.append("| message | " + " | ".join(columns) + " |")
        out.append("| :-- | " + " | ".join("--:" for _ in columns) + " |")
        for (operation, batch), name in ROW_NAMES.items():
            cells = []
            for c in columns:
                k = (position, operation, batch, c)
                if k not in news:
                    cells.append("")
                    continue
                a, b = olds[k][field], news[k][field]
                cells.append(f"{short(a)} → {short(b)} ({ratio(a, b)})")
            if any(cells):
                out.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def cells(row):
    return [c.strip() for c in row.strip("|").split("|")]


def decision(old_dir, new_dir, old, new):
    title, a = section(old_dir, "Which store is cheapest")
    _, b = section(new_dir, "Which store is cheapest")
    out = [f"\n{title}\n", f"| Workload | {old['replica']} | {new['replica']} |", "| :-- | :-- | :-- |"]
    for ra, rb in zip(a[2:], b[2:]):
        ca, cb = cells(ra), cells(rb)
        if ca[0] != cb[0]:
            sys.exit("the decision tables list different workloads")
        mark = "" if ca[1] == cb[1] else " **(changed)**"
        out.append(f"| {ca[0]} | {ca[1]}: {ca[2]} | {cb[1]}: {cb[2]}{mark} |")
    return "\n".join(out)


def capacity(old_dir, new_dir, old, new):
    title, a = section(old_dir, "Capacity at")
    _, b = section(new_dir, "Capacity at")
    out = [f"\n{title}\n", f"| store | message | {old['replica']} per row | {new['replica']} per row | {old['replica']} batch | {new['replica']} batch |",
           "| :-- | :-- | --: | --: | --: | --: |"]
    for ra, rb in zip(a[2:], b[2:]):
        ca, cb = cells(ra), cells(rb)
        out.append(f"| {ca[0]} | {ca[1]} | {ca[2]} | {cb[2]} | {ca[3]} | {cb[3]} |")
    return "\n".join(out)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    old_dir, new_dir = sys.argv[1:]
    old, new = load(old_dir), load(new_dir)
    for f in ("rows_before", "seed", "payload_size"):
        if old[f] != new[f]:
            sys.exit(f"the runs differ in {f}: {old[f]} vs {new[f]}")
    print(decision(old_dir, new_dir, old, new))
    print(grid(old, new, "store_instructions", "Store instructions per message"))
    print(grid(old, new, "instructions", "Charged instructions per message"))
    print(capacity(old_dir, new_dir, old, new))


if __name__ == "__main__":
    main()

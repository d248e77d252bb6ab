#!/usr/bin/env python3
"""Regenerates the real output of README.md's default-run block and docs/findings.md's tables
from two runs of the default suite: the default vintage's and `--replica 2026-05`'s.

    cargo build --release && scripts/update-readme.py         # runs both, rewrites both files
    scripts/update-readme.py --runs NEW_DIR OLD_DIR           # from runs already made
    scripts/update-readme.py --check                          # exit 1 if it would change

What it rewrites, each from the runs' own files (this only arranges them):
- each file's provenance line ("Real output of `cargo run --release`, measured on DATE at
  COMMIT on MACHINE"), from `git rev-parse --short HEAD`, today's date and --machine;
- README.md's decision table (the fenced block after that line), the default run's last
  table as it prints it; in docs/findings.md:
- the bindings' table (`| Workload | ic-rusqlite cold | ...`): charged instructions of
  the rows ROWS lists, from results.json;
- the July 2026 table (`| Workload | before (`2026-05`) | ...`): the cold columns of the
  two runs' decision tables;
- Motoko's table (`| Workload | heap map | StableBTreeMap | ...`): charged instructions of
  the rows MOTOKO_ROWS lists, under both vintages.
The prose around them is not touched: check it against the diff.
"""

import argparse
import datetime
import json
import pathlib
import re
import subprocess
import sys
import tempfile

from report_md import section

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
FINDINGS = ROOT / "docs" / "findings.md"
MACHINE = "the project's 2-core machine"
DECISION = "Which store is cheapest"

# The bindings' table: (label, position, operation, batch) per row; `2026-05` rows take the
# old run's records.
ROWS = [
    ("1 row in the middle", "middle", "insert", 1, False),
    ("1 row in the middle, `2026-05`", "middle", "insert", 1, True),
    ("100 rows in the middle", "middle", "insert", 100, False),
    ("1,000 rows in the middle", "middle", "insert", 1000, False),
    ("1 row at random", "random", "insert", 1, False),
    ("1,000 rows at random", "random", "insert", 1000, False),
    ("point read, 1 key (middle)", "middle", "point_lookup", 1, False),
    ("100 keys at random", "random", "point_lookup", 100, False),
    ("scan, 1,000 rows", "middle", "range_scan", 1000, False),
]
# Its columns: (header, store, journal mode, cache state).
COLUMNS = [
    ("ic-rusqlite cold", "sqlite", "PERSIST", "cold"),
    ("ic-sqlite-vfs cold", "sqlite-vfs", "", "cold"),
    ("ic-rusqlite warm", "sqlite", "PERSIST", "warm"),
    ("ic-sqlite-vfs warm", "sqlite-vfs", "", "warm"),
    ("StableBTreeMap", "btree", "", "cold"),
    ("heap map", "heap", "", "cold"),
]
# Motoko's stores against Rust's (`| Workload | heap map | ...`): charged instructions, both
# vintages, each store cold (Motoko's and the maps have no page cache; SQLite's on a newly
# opened connection, in the canister's default journal mode), on the bindings' rows of the
# run's vintage but two.
MOTOKO_ROWS = [row[:4] for row in ROWS
               if not row[4] and row[0] not in ("100 rows in the middle", "1,000 rows at random")]
MOTOKO_COLUMNS = [
    ("heap map", "heap", ""),
    ("StableBTreeMap", "btree", ""),
    ("Motoko Map", "mo-map", ""),
    ("Motoko pure/Map", "mo-pure-map", ""),
    ("Motoko Region", "mo-region", ""),
    ("ic-rusqlite", "sqlite", "PERSIST"),
    ("ic-sqlite-vfs", "sqlite-vfs", ""),
]
# Records written before the store column said `sqlite-vfs`.
FORMERLY = {"sqlite_vfs": "sqlite-vfs"}


def short(n):
    """1,067M, 152.3M, 3.44M, 444K."""
    if n >= 1e9:
        return f"{n / 1e6:,.0f}M"
    if n >= 1e7:
        return f"{n / 1e6:.1f}M"
    if n >= 1e6:
        return f"{n / 1e6:.2f}M"
    return f"{n / 1e3:.0f}K"


def run(args, out):
    binary = ROOT / "target" / "release" / "icbench"
    subprocess.run([str(binary), "--quiet", "--out", str(out), *args], check=True,
                   stdout=subprocess.DEVNULL)


def decision_table(directory):
    """The decision table's lines as report.md has them (heading, table)."""
    return section(directory, DECISION)


def cells(row):
    return [c.strip() for c in row.strip("|").split("|")]


def records(directory):
    report = json.loads((pathlib.Path(directory) / "results.json").read_text())
    if report.get("suite") != "seed003":
        sys.exit(f"{directory}: a default (seed003) run is needed")
    out = {}
    for r in report["results"]:
        store = FORMERLY.get(r["store"], r["store"])
        key = (store, r["journal_mode"], r.get("cache", "cold"), r["position"], r["operation"],
               r["batch"])
        out[key] = r["instructions"]
    return report, out


def charged_table(columns, rows):
    """A table of charged instructions: `columns` (header, store, mode, cache), `rows`
    (label, run's records, position, operation, batch)."""
    header = "| Workload | " + " | ".join(c[0] for c in columns) + " |"
    lines = [header, "| :-- |" + " --: |" * len(columns)]
    for label, run, position, operation, batch in rows:
        row = []
        for _, store, mode, cache in columns:
            # The stores without a page cache have one state: their record says cold.
            value = run.get((store, mode, cache, position, operation, batch))
            if value is None:
                value = run.get((store, mode, "cold", position, operation, batch))
            if value is None:
                sys.exit(f"no record of {store} {mode} {cache} {position} {operation}/{batch}")
            row.append(short(value))
        lines.append(f"| {label} | " + " | ".join(row) + " |")
    return lines


def bindings(new, old):
    return charged_table(COLUMNS, [(label, old if before else new, position, operation, batch)
                                   for label, position, operation, batch, before in ROWS])


def motoko(new, old):
    """Each workload's charged instructions per store: `2026-07`, then `2026-05` below."""
    columns = [(header, store, mode, "cold") for header, store, mode in MOTOKO_COLUMNS]
    return charged_table(columns, [(label + vintage, run, position, operation, batch)
                                   for run, vintage in ((new, ""), (old, ", `2026-05`"))
                                   for label, position, operation, batch in MOTOKO_ROWS])


def july(new_dir, old_dir):
    """The cold columns of the two decision tables, a verdict that changed in bold."""
    _, new = decision_table(new_dir)
    _, old = decision_table(old_dir)
    lines = ["| Workload | before (`2026-05`) | since July 2026 (`2026-07`) |",
             "| :-- | :-- | :-- |"]
    for a, b in zip(old[2:], new[2:]):
        a, b = cells(a), cells(b)
        if a[0] != b[0]:
            sys.exit(f"the decision tables' rows differ: {a[0]} / {b[0]}")
        was, now = a[3], b[3]
        moved = f"**{now}**" if now != was else now
        lines.append(f"| {a[0]} | {was}, {a[4]} | {moved}, {b[4]} |")
    return lines


def replace_table(text, first_cells, new_lines):
    """Replaces the markdown table whose header starts with `first_cells`."""
    lines = text.split("\n")
    start = next((i for i, l in enumerate(lines) if l.startswith(first_cells)), None)
    if start is None:
        sys.exit(f"README.md has no table starting {first_cells!r}")
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return "\n".join(lines[:start] + new_lines + lines[end:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", nargs=2, metavar=("NEW", "OLD"),
                        help="the default run's directory and the --replica 2026-05 run's")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--machine", default=MACHINE)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.runs:
            new_dir, old_dir = args.runs
        else:
            new_dir, old_dir = pathlib.Path(tmp) / "new", pathlib.Path(tmp) / "old"
            run([], new_dir)
            run(["--replica", "2026-05"], old_dir)
        new_report, new = records(new_dir)
        old_report, old = records(old_dir)
        for field in ("rows_before", "seed", "payload_size", "layout"):
            if new_report.get(field) != old_report.get(field):
                sys.exit(f"the runs differ in {field}")
        title, table = decision_table(new_dir)
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True,
                                capture_output=True, text=True).stdout.strip()
        provenance = (f"Real output of `cargo run --release`, measured on "
                      f"{datetime.date.today().isoformat()} at {commit} on {args.machine}")
        texts = {path: path.read_text() for path in (README, FINDINGS)}
        updated = {path: with_provenance(path, text, provenance) for path, text in texts.items()}
        updated[README] = re.sub(
            r"```\nWhich store is cheapest[^\n]*\n(\|[^\n]*\n)+```",
            lambda _: "```\n" + title + "\n" + "\n".join(table) + "\n```",
            updated[README], count=1)
        findings = updated[FINDINGS]
        findings = replace_table(findings, "| Workload | ic-rusqlite cold |", bindings(new, old))
        findings = replace_table(findings, "| Workload | before (`2026-05`) |",
                                 july(new_dir, old_dir))
        findings = replace_table(findings, "| Workload | heap map | StableBTreeMap |",
                                 motoko(new, old))
        updated[FINDINGS] = findings
    if args.check:
        # The provenance line names today and HEAD: only the tables count.
        strip = lambda t: re.sub(r"measured on \S+ at \S+ on [^(]*", "", t)
        stale = [p.name for p in texts if strip(updated[p]) != strip(texts[p])]
        if stale:
            print(f"{', '.join(stale)}: the default-run tables are not those of this build",
                  file=sys.stderr)
            sys.exit(1)
        return
    for path, text in updated.items():
        path.write_text(text)


def with_provenance(path, text, provenance):
    """`text` with its line saying which run made its tables replaced by `provenance`."""
    updated, n = re.subn(
        r"Real output of `cargo run --release`, measured on \S+ at \S+ on [^(]*?"
        r"(?=\s\(the counts)", provenance, text, count=1)
    if n != 1:
        sys.exit(f"{path.name} has no provenance line of the default run")
    return updated


if __name__ == "__main__":
    main()

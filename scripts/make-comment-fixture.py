#!/usr/bin/env python3
"""Derives the two runs of tests/comment_fixture/suites from one real run, so that
`icbench compare base/results.json new/results.json --format markdown` meets every case of
the pull-request comment: a regression (with profiles on both sides), an improvement, a
change under the noise threshold, a new and a removed scenario, and a failure.

    cargo run --release -- --quiet --rows 2000 --batches 1,10,100 --stores btree,sqlite \
        --journal-modes OFF,WAL --positions middle,end --out /tmp/run
    python3 scripts/make-comment-fixture.py /tmp/run tests/comment_fixture/suites

The base is the run without btree/end/insert/100 (new in the new run); the new run is the
run without btree/middle/point_lookup/100 (removed) and with the edits below. The two
profiles are small hand-made stand-ins (a real one is about 300 KB): their totals are the
scenario's charged instructions in each file.
"""
import copy
import json
import os
import sys


def find(results, store, mode, position, operation, batch):
    for r in results:
        if (r["store"], r["journal_mode"], r["position"], r["operation"], r["batch"]) == (
            store, mode, position, operation, batch):
            return r
    sys.exit(f"no {store}/{mode}/{position}/{operation}/{batch} in the run")


def scale(r, charged, store):
    r["instructions"] = round(r["instructions"] * charged)
    r["instructions_per_row"] = r["instructions"] / r["batch"]
    r["store_instructions"] = round(r["store_instructions"] * store)
    r["store_instructions_per_row"] = r["store_instructions"] / r["batch"]


def profile(path, total, extra):
    """A three-stack profile summing to `total`; `extra` of it in a frame of its own."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    rest = total - extra
    lines = [
        f"canister_update add_users_sqlite;candid::de::decode {rest // 4}",
        f"canister_update add_users_sqlite;sqlite3_step;walIndexAppend {rest - rest // 4}",
    ]
    if extra:
        lines.append(f"canister_update add_users_sqlite;sqlite3_step;walChecksumBytes {extra}")
    with open(path, "w") as f:
        f.write("\n".join(sorted(lines)) + "\n")


def main(run_dir, out_dir):
    run = json.load(open(os.path.join(run_dir, "results.json")))
    base, new = copy.deepcopy(run), copy.deepcopy(run)
    base["results"].remove(find(base["results"], "btree", "", "end", "insert", 100))
    new["results"].remove(find(new["results"], "btree", "", "middle", "point_lookup", 100))
    wal = "profiles/sqlite-wal/middle/insert/1.folded"
    b = find(base["results"], "sqlite", "WAL", "middle", "insert", 1)
    n = find(new["results"], "sqlite", "WAL", "middle", "insert", 1)
    scale(n, 1.05, 1.06)
    for r, side in [(b, "base"), (n, "new")]:
        r["profile"] = wal
        profile(os.path.join(out_dir, side, wal), r["instructions"],
                r["instructions"] - b["instructions"])
    scale(find(new["results"], "btree", "", "end", "insert", 10), 0.96, 0.96)
    scale(find(new["results"], "sqlite", "OFF", "middle", "insert", 10), 1.01, 1.0)
    failed = find(new["results"], "sqlite", "WAL", "end", "insert", 10)
    failed["status"] = "failed"
    failed["reason"] = ("IC0522: Canister exceeded the limit of 40000000000 instructions "
                        "for single message execution.")
    for run_, side in [(base, "base"), (new, "new")]:
        run_["wall_seconds"] = 0.0
        with open(os.path.join(out_dir, side, "results.json"), "w") as f:
            json.dump(run_, f, indent=2, ensure_ascii=False)
            f.write("\n")


if __name__ == "__main__":
    main(*sys.argv[1:3])

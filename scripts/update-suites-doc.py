#!/usr/bin/env python3
"""Regenerates the real output quoted in docs/suites.md from the current canister module.

Every "Real output of `icbench ARGS`" (or of `cargo run --release`, the default run) in
docs/suites.md is followed by a fenced block that
quotes some of the paragraphs (blank-line separated: a heading and its table, or a section of
db_bench lines), and some of their lines, that `icbench --quiet ARGS` prints. This script runs
each command with the built binary and the committed canister module, and replaces every
quoted line with the line of the new output that has the same name (a table row's cells
that are not numbers, a db_bench line's benchmark) in the paragraph that starts with the same line (the n-th
such paragraph for the n-th quote): the doc keeps its choice of paragraphs and rows and gets
the current numbers (and columns). A quoted paragraph or row the new output lacks is an
error: the doc needs a person then.

The prose around the blocks (timings, figures quoted in sentences) is not touched: check it
against the diff. Rerun after every change to the canister (scripts/update-prebuilt-canister.sh):

    cargo build --release && scripts/update-suites-doc.py          # rewrites docs/suites.md
    scripts/update-suites-doc.py --check                            # exit 1 if it would change
    scripts/update-suites-doc.py --doc docs/tuning.md --only '--suite tune' --stdout OUT
                                  # docs/tuning.md's blocks from a tune run's saved output

Uses ICBENCH_CACHE_DIR like any run. Options: --bin PATH (default target/release/icbench),
--wasm PATH (default canisters/prebuilt/bench.wasm).
"""

import argparse
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "suites.md"
# `icbench ARGS`, or `cargo run --release` alone (the default run: no ARGS).
MARKER = re.compile(r"Real\s+output\s+of\s+`(?:icbench\s+([^`]*)|cargo\s+run\s+--release)`")


def paragraphs(text):
    """Blank-line separated paragraphs, each a list of lines (no trailing blanks)."""
    out, current = [], []
    for line in text.rstrip("\n").split("\n"):
        if line.strip():
            current.append(line.rstrip())
        elif current:
            out.append(current)
            current = []
    if current:
        out.append(current)
    return out


# A measured cell: 54,630 / 1.3K / 0.45 / 59,020 (116 B) / 6,682,969 (22/8) / 1.48x /
# 0.02% / 1.2K B / 256 MB / 29.3 / 32 / 19/13 + 0/0 / -- / -.
NUMBER = re.compile(
    r"[\d,.]+[KMB]?( \([\d,.]+ B\))?( \(\d+/\d+\))?x?%?( [KMG]?B)?( / [\d,.]+)?"
    r"|\d+/\d+ \+ \d+/\d+|--|-"
)


def key(line):
    """What names a line within its paragraph: a table row's cells that are not numbers
    (the header and the alignment row are all names), a db_bench line's benchmark, else
    the whole line."""
    if line.startswith("|"):
        cells = [c.strip() for c in line.strip("|").split("|")]
        return "|" + "|".join(c for c in cells if not NUMBER.fullmatch(c))
    if ":" in line:
        return line.split(":")[0].strip()
    return line


def keys(lines):
    """`key` of each line; a table's header and alignment rows are named by their place,
    so a new column does not lose them."""
    align = re.compile(r"\|( *:?-+:? *\|)+")
    out = []
    for i, line in enumerate(lines):
        if align.fullmatch(line):
            out.append("|align")
        elif i + 1 < len(lines) and align.fullmatch(lines[i + 1]):
            out.append("|header")
        else:
            out.append(key(line))
    return out


def excerpt(quoted, fresh, command):
    """`fresh` cut to the lines `quoted` shows (the doc quotes some rows of a table). A
    paragraph quoted whole (as many lines as the new one: a decision table, whose rows are
    named by their verdicts) is the new one whole."""
    if len(quoted) == len(fresh):
        return fresh
    wanted = keys(quoted[1:])
    have = {key(l): l for l in fresh[1:]}
    have.update(zip(keys(fresh[1:]), fresh[1:]))
    missing = [w for w in wanted if w not in have]
    if missing:
        sys.exit(f"update-suites-doc: `icbench {command}` no longer prints {missing} under {quoted[0]!r}")
    return [fresh[0]] + [have[w] for w in wanted]


def regenerate(block, stdout, command):
    """The block with each quoted paragraph (and each line of it) replaced by the new
    output's."""
    fresh = {}
    for p in paragraphs(stdout):
        fresh.setdefault(p[0], []).append(p)
    seen = {}
    new = []
    for p in paragraphs(block):
        n = seen.get(p[0], 0)
        seen[p[0]] = n + 1
        candidates = fresh.get(p[0], [])
        if n >= len(candidates):
            sys.exit(f"update-suites-doc: `icbench {command}` no longer prints a paragraph starting {p[0]!r}")
        new.append(excerpt(p, candidates[n], command))
    return "\n\n".join("\n".join(p) for p in new) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="only say whether the doc is current (exit 1 if not)")
    ap.add_argument("--bin", default=str(ROOT / "target" / "release" / "icbench"))
    ap.add_argument("--wasm", default=str(ROOT / "canisters" / "prebuilt" / "bench.wasm"))
    ap.add_argument("--only", metavar="ARGS", help="only the blocks of `icbench ARGS` ('': the default run)")
    ap.add_argument("--doc", default=str(DOC), help="the document (docs/suites.md)")
    ap.add_argument("--stdout", metavar="FILE",
                    help="with --only: what that command printed (`--quiet`), instead of running it")
    args = ap.parse_args()
    if args.stdout and args.only is None:
        ap.error("--stdout needs --only (the command it is the output of)")
    doc = pathlib.Path(args.doc)

    text = doc.read_text()
    pieces, pos, changed = [], 0, []
    for m in MARKER.finditer(text):
        start = text.index("```\n", m.end()) + len("```\n")
        end = text.index("```", start)
        command = " ".join((m.group(1) or "").split())
        if args.only is not None and args.only != command:
            continue
        if args.stdout:
            stdout = pathlib.Path(args.stdout).read_text()
        else:
            with tempfile.TemporaryDirectory() as out:
                run = subprocess.run(
                    [args.bin, "--quiet", "--wasm", args.wasm, *command.split(), "--out", out],
                    capture_output=True,
                    text=True,
                )
            if run.returncode != 0:
                sys.exit(f"update-suites-doc: `icbench {command}` failed ({run.returncode}):\n{run.stderr}")
            stdout = run.stdout
        block = text[start:end]
        new = regenerate(block, stdout, command)
        if new != block:
            changed.append(command)
        pieces.append(text[pos:start] + new)
        pos = end
        print(f"{'changed' if new != block else 'current'}: icbench {command}", file=sys.stderr)
    pieces.append(text[pos:])
    if args.check:
        sys.exit(1 if changed else 0)
    if changed:
        doc.write_text("".join(pieces))


if __name__ == "__main__":
    main()

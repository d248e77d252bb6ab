#!/usr/bin/env python3
"""Checks every relative link of the project's markdown files: the file or folder it names
exists, and its `#anchor` is a heading of that markdown file (GitHub's anchors: the heading
lower-cased, its characters other than letters, digits, spaces, `-` and `_` dropped, spaces
made `-`, a repeated one numbered `-1`, `-2`, ...). Links inside code are not links.

    scripts/check-links.py            # exit 1, naming each broken link, if any
"""

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^\s*(```|~~~)")
# [text](target) and ![alt](target), the target up to a space or the closing parenthesis.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"`[^`]*`")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def markdown_files():
    """The markdown files git tracks (so build output and node_modules are left out)."""
    out = subprocess.run(
        ["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return [ROOT / line for line in out.splitlines() if line]


def prose_lines(text):
    """The lines outside fenced code blocks, with their numbers."""
    fenced = False
    for number, line in enumerate(text.split("\n"), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def slug(heading):
    """GitHub's anchor of a heading's text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text stays
    text = text.lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen, out = {}, set()
        for _, line in prose_lines(path.read_text()):
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
        cache[path] = out
    return cache[path]


def main():
    broken = []
    for md in markdown_files():
        for number, line in prose_lines(md.read_text()):
            for m in LINK.finditer(CODE_SPAN.sub("", line)):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, ...
                    continue
                path_part, _, anchor = target.partition("#")
                where = f"{md.relative_to(ROOT)}:{number}: {target}"
                dest = (md.parent / path_part).resolve() if path_part else md
                if not dest.exists():
                    broken.append(f"{where}: no such file")
                    continue
                if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                    broken.append(f"{where}: no heading with that anchor in {dest.relative_to(ROOT)}")
    for b in broken:
        print(f"check-links: {b}", file=sys.stderr)
    if broken:
        sys.exit(1)
    print(f"check-links: every relative link of {len(markdown_files())} markdown files resolves")


if __name__ == "__main__":
    main()

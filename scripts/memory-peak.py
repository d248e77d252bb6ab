#!/usr/bin/env python3
"""Runs a command and reports the peaks of its memory, sampled every half second.

    python3 scripts/memory-peak.py [--every SECONDS] [--log FILE] -- COMMAND...

Resident memory (RSS) alone misses part of what icbench holds: a snapshot's heap lives in a
memfd whose pages count in RSS only while they are mapped. So besides the peak RSS
(the kernel's own maximum, ru_maxrss, which `/usr/bin/time -v` reports), this prints:

- anon: private memory (heaps, undo pages, stable memory pages, the engine's own data);
- memfd: the pages held by the snapshots' memfds, mapped or not;
- footprint: anon + memfd + the rest of RSS (mapped files such as the binary), the memory
  the machine has to lend the run: what has to fit on a laptop.

Each is the largest sample of the run; footprint's largest sample is given with its parts.
These are of the command's own process. The users suites run their workers as processes of
its own (forked), so the whole tree is sampled too:

- processes, and the largest RSS of one of them;
- tree footprint: each process's proportional share of its anonymous memory and mapped files
  (Pss_Anon + Pss_File: a page a fork still shares with its parent counts once in all) plus
  every memfd of the tree once, mapped or not.
"""

import argparse
import os
import subprocess
import sys
import time

GB = 1e9


def kb_fields(path, names):
    out = {}
    try:
        with open(path) as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in names:
                    out[key] = int(rest.split()[0]) * 1024
    except OSError:
        pass
    return out


def memfd_bytes(pid):
    """Bytes allocated to the process's memfds (st_blocks counts the pages a shmem file holds)."""
    return sum(memfds(pid).values())


def descendants(pid):
    """`pid` and every process below it."""
    pids = [pid]
    i = 0
    while i < len(pids):
        p = pids[i]
        i += 1
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    pids.extend(int(c) for c in f.read().split())
        except OSError:
            continue
    return pids


def memfds(pid):
    """The process's memfds: (device, inode) -> bytes allocated."""
    out = {}
    fd_dir = f"/proc/{pid}/fd"
    try:
        fds = os.listdir(fd_dir)
    except OSError:
        return out
    for fd in fds:
        path = os.path.join(fd_dir, fd)
        try:
            if not os.readlink(path).startswith("/memfd:"):
                continue
            st = os.stat(path)
            out[(st.st_dev, st.st_ino)] = st.st_blocks * 512
        except OSError:
            continue
    return out


def sample_tree(pid):
    """Processes, the largest RSS of one and the tree's footprint (see the module's doc)."""
    processes, largest, shared, fds = 0, 0, 0, {}
    for p in descendants(pid):
        rss = kb_fields(f"/proc/{p}/status", {"VmRSS"}).get("VmRSS")
        if rss is None:
            continue
        rollup = kb_fields(f"/proc/{p}/smaps_rollup", {"Pss_Anon", "Pss_File"})
        processes += 1
        largest = max(largest, rss)
        shared += rollup.get("Pss_Anon", 0) + rollup.get("Pss_File", 0)
        fds.update(memfds(p))
    return {"processes": processes, "largest_rss": largest, "tree_footprint": shared + sum(fds.values())}


def sample(pid):
    status = kb_fields(f"/proc/{pid}/status", {"VmRSS", "RssFile"})
    rollup = kb_fields(f"/proc/{pid}/smaps_rollup", {"Anonymous", "Pss"})
    if "VmRSS" not in status:
        return None
    memfd = memfd_bytes(pid)
    anon = rollup.get("Anonymous", 0)
    files = status.get("RssFile", 0)
    return {
        "rss": status["VmRSS"],
        "pss": rollup.get("Pss", 0),
        "anon": anon,
        "memfd": memfd,
        "footprint": anon + memfd + files,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=float, default=0.5, help="seconds between samples")
    parser.add_argument("--log", help="write every sample to this file (CSV)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given (put it after --)")
    if args.every <= 0:
        parser.error("--every must be positive")

    start = time.time()
    proc = subprocess.Popen(command)
    log = open(args.log, "w") if args.log else None
    if log:
        log.write("seconds,rss,pss,anon,memfd,footprint,processes,largest_rss,tree_footprint\n")
    peak = {}
    at_peak = None
    code, maxrss = None, 0
    while code is None:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            code = os.waitstatus_to_exitcode(status)
            maxrss = usage.ru_maxrss * 1024
            break
        s = sample(proc.pid)
        if s:
            s.update(sample_tree(proc.pid))
            for key, value in s.items():
                peak[key] = max(peak.get(key, 0), value)
            if at_peak is None or s["footprint"] >= at_peak["footprint"]:
                at_peak = dict(s, seconds=time.time() - start)
            if log:
                log.write(
                    f"{time.time() - start:.1f},{s['rss']},{s['pss']},{s['anon']},{s['memfd']},{s['footprint']},"
                    f"{s['processes']},{s['largest_rss']},{s['tree_footprint']}\n"
                )
                log.flush()
        time.sleep(args.every)
    proc.returncode = code
    wall = time.time() - start
    if log:
        log.close()
    print(f"memory-peak: exit {code}, {wall:.0f} s wall", file=sys.stderr)
    if not peak:
        print("memory-peak: the command ended before the first sample", file=sys.stderr)
        return code
    print(
        "memory-peak: peak RSS {:.2f} GB (ru_maxrss), sampled peaks: RSS {:.2f}, Pss {:.2f}, anon {:.2f}, memfd {:.2f}, footprint {:.2f} GB".format(
            maxrss / GB,
            peak["rss"] / GB,
            peak["pss"] / GB,
            peak["anon"] / GB,
            peak["memfd"] / GB,
            peak["footprint"] / GB,
        ),
        file=sys.stderr,
    )
    print(
        "memory-peak: at the footprint's peak ({:.0f} s): anon {:.2f}, memfd {:.2f}, RSS {:.2f} GB".format(
            at_peak["seconds"], at_peak["anon"] / GB, at_peak["memfd"] / GB, at_peak["rss"] / GB
        ),
        file=sys.stderr,
    )
    print(
        "memory-peak: the process tree: up to {} processes, the largest RSS {:.2f} GB, footprint {:.2f} GB".format(
            peak["processes"], peak["largest_rss"] / GB, peak["tree_footprint"] / GB
        ),
        file=sys.stderr,
    )
    return code


if __name__ == "__main__":
    sys.exit(main())

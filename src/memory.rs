//! The memory a run can use, for the estimate checked before a suite starts: the kernel's
//! MemAvailable, less where this process's cgroup (v2 or v1) limits it further, or what
//! `ICBENCH_MEMORY_AVAILABLE` says.

use anyhow::{anyhow, Result};

/// Plans for this many bytes instead of the memory this machine has available (another
/// machine's, or a share of this one); also what the tests set.
pub const MEMORY_ENV: &str = "ICBENCH_MEMORY_AVAILABLE";

/// The memory this process can still use: `ICBENCH_MEMORY_AVAILABLE` if set, else what the
/// machine has (see [`room`]); `None` where neither can be read.
pub fn available() -> Result<Option<u64>> {
    if let Some(v) = std::env::var_os(MEMORY_ENV) {
        let v = v.to_string_lossy();
        return v
            .trim()
            .parse::<u64>()
            .map(Some)
            .map_err(|_| anyhow!("{MEMORY_ENV}={v:?}: expected a number of bytes"));
    }
    let read = |path: &str| std::fs::read_to_string(path).ok();
    Ok(room(&read))
}

/// MemAvailable from `/proc/meminfo`, less what the process's cgroup leaves: v2 (the line
/// `0::/PATH` of `/proc/self/cgroup`: `memory.max` less `memory.current`) or v1 (the line
/// naming the `memory` controller: `memory.limit_in_bytes` less `memory.usage_in_bytes`).
/// `read` gives a file's text (the tests hand it a machine of their own).
pub fn room(read: &dyn Fn(&str) -> Option<String>) -> Option<u64> {
    let meminfo = read("/proc/meminfo")?;
    let kib = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse::<u64>()
        .ok()?;
    let mut available = kib * 1024;
    let number = |path: String| read(&path).and_then(|t| t.trim().parse::<u64>().ok());
    let cgroups = read("/proc/self/cgroup").unwrap_or_default();
    for line in cgroups.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let path = path.trim_end_matches('/');
        // A v2 limit of `max` and v1's "no limit" (a number near 2^63) leave MemAvailable.
        let (limit, usage) = if controllers.is_empty() {
            (
                number(format!("/sys/fs/cgroup{path}/memory.max")),
                number(format!("/sys/fs/cgroup{path}/memory.current")),
            )
        } else if controllers.split(',').any(|c| c == "memory") {
            (
                number(format!("/sys/fs/cgroup/memory{path}/memory.limit_in_bytes")),
                number(format!("/sys/fs/cgroup/memory{path}/memory.usage_in_bytes")),
            )
        } else {
            continue;
        };
        if let (Some(limit), Some(usage)) = (limit, usage) {
            available = available.min(limit.saturating_sub(usage));
        }
    }
    Some(available)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn machine(files: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let files: HashMap<String, String> = files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect();
        move |p: &str| files.get(p).cloned()
    }

    const MEMINFO: (&str, &str) = (
        "/proc/meminfo",
        "MemTotal:       24000000 kB\nMemFree:        1000 kB\nMemAvailable:   20000000 kB\n",
    );

    /// [`MEMINFO`]'s machine with this process in the cgroup v2 group `group` (as
    /// /proc/self/cgroup names it), whose `memory.max` and `memory.current` are under
    /// /sys/fs/cgroup/`dir`.
    fn cgroup_v2(
        group: &str,
        dir: &str,
        max: &str,
        current: &str,
    ) -> impl Fn(&str) -> Option<String> {
        let file = |name: &str| format!("/sys/fs/cgroup/{dir}/{name}");
        let (cgroup, max_file, current_file) = (
            format!("0::{group}\n"),
            file("memory.max"),
            file("memory.current"),
        );
        machine(&[
            MEMINFO,
            ("/proc/self/cgroup", &cgroup),
            (&max_file, &format!("{max}\n")),
            (&current_file, &format!("{current}\n")),
        ])
    }

    #[test]
    fn mem_available_without_a_cgroup_limit() {
        assert_eq!(room(&machine(&[MEMINFO])), Some(20_480_000_000));
        let v2_unlimited = cgroup_v2("/user.slice", "user.slice", "max", "5000");
        assert_eq!(room(&v2_unlimited), Some(20_480_000_000));
        let v1_unlimited = machine(&[
            MEMINFO,
            ("/proc/self/cgroup", "4:memory:/\n3:cpu,cpuacct:/\n"),
            (
                "/sys/fs/cgroup/memory/memory.limit_in_bytes",
                "9223372036854771712\n",
            ),
            ("/sys/fs/cgroup/memory/memory.usage_in_bytes", "5000\n"),
        ]);
        assert_eq!(room(&v1_unlimited), Some(20_480_000_000));
        assert_eq!(room(&machine(&[])), None);
    }

    #[test]
    fn a_cgroup_limit_leaves_what_is_left_of_it() {
        let v2 = cgroup_v2("/docker/abc/", "docker/abc", "8000000000", "1000000000");
        assert_eq!(room(&v2), Some(7_000_000_000));
        let v1 = machine(&[
            MEMINFO,
            (
                "/proc/self/cgroup",
                "12:pids:/docker/abc\n5:memory:/docker/abc\n1:name=systemd:/docker/abc\n",
            ),
            (
                "/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes",
                "16000000000\n",
            ),
            (
                "/sys/fs/cgroup/memory/docker/abc/memory.usage_in_bytes",
                "6000000000\n",
            ),
        ]);
        assert_eq!(room(&v1), Some(10_000_000_000));
    }
}

//! What a run ran: each canister module's bytes (SHA-256) and, where known, its compiler,
//! and the facts of the machine a count could depend on. A count is meant to be the same on
//! every machine; when one moves, the record says whether the module or the machine
//! changed. Kept in results.json under `provenance` (absent in the files of older versions,
//! which still read).

use serde::{Deserialize, Serialize};

use super::Report;
use crate::engine::embedded::memory::write_log::HeapWrites;

/// The results.json field.
pub const PROVENANCE: &str = "provenance";

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// Each module the run held, the default first.
    pub modules: Vec<ModuleRun>,
    /// The machine the run ran on; a merge of shards run on several: each, once.
    pub machines: Vec<Machine>,
}

/// A canister module as a run held it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleRun {
    /// Its name in canisters/prebuilt/modules.txt (`bench`, `motoko`), or canbench's file.
    pub name: String,
    /// The SHA-256 of its bytes as given (gzipped, if they were).
    pub sha256: String,
    /// `moc HASH` or `rustc VERSION`, where the module or its record says
    /// ([`crate::bench_canister::compiler`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiler: Option<String>,
    /// The committed module it is (`canisters/prebuilt/bench.wasm`), if it is one: its
    /// record names the sources it was built from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub committed: Option<String>,
}

impl ModuleRun {
    pub fn of(name: &str, wasm: &[u8]) -> ModuleRun {
        use sha2::{Digest, Sha256};
        ModuleRun {
            name: name.to_string(),
            sha256: hex::encode(Sha256::digest(wasm)),
            compiler: crate::bench_canister::compiler(wasm),
            committed: crate::bench_canister::committed(wasm).map(|m| m.prebuilt_wasm.into()),
        }
    }

    /// `bench 1be8bf44 (canisters/prebuilt/bench.wasm)`, `motoko 51cf9913 (moc HASH)`.
    fn short(&self) -> String {
        let about: Vec<&str> = [&self.committed, &self.compiler]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect();
        let sha = &self.sha256[..self.sha256.len().min(8)];
        match about.is_empty() {
            true => format!("{} {sha}", self.name),
            false => format!("{} {sha} ({})", self.name, about.join(", ")),
        }
    }
}

/// The facts of a machine that a count could depend on: the CPU (glibc picks its memcpy,
/// memset and string functions by its features), the kernel (its write log, its page
/// handling), transparent huge pages, and how the embedded engine found the heap's written
/// pages. `unknown` where the system does not say.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    /// `model name` of /proc/cpuinfo.
    pub cpu: String,
    /// The features glibc's x86-64 string and memory functions are chosen by, as
    /// /proc/cpuinfo's flags name those the CPU has ([`GLIBC_DISPATCH`]); elsewhere, its
    /// `Features` line.
    pub cpu_features: String,
    /// `GLIBC_TUNABLES`, when set: it can turn features off for glibc's choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glibc_tunables: Option<String>,
    /// The kernel's release (`uname -r`).
    pub kernel: String,
    /// Transparent huge pages' mode: `always`, `madvise` or `never`.
    pub transparent_hugepages: String,
    /// The embedded engine's heap-write mechanism (`ICBENCH_HEAP_WRITES`, what the kernel
    /// offers); none for a PocketIC server's run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heap_writes: Option<String>,
}

/// The x86-64 features (as /proc/cpuinfo's flags name them; `abm` is LZCNT) whose presence
/// selects among glibc's variants of memcpy, memmove, memset, memcmp, strlen and their kin
/// (sysdeps/x86_64/multiarch: SSE2 to AVX-512, BMI, ERMS and FSRM for `rep movsb`, RTM).
pub const GLIBC_DISPATCH: [&str; 18] = [
    "sse2", "ssse3", "sse4_1", "sse4_2", "avx", "avx2", "avx512f", "avx512bw", "avx512vl",
    "avx512dq", "bmi1", "bmi2", "abm", "movbe", "popcnt", "erms", "fsrm", "rtm",
];

impl Machine {
    /// This machine's facts; the heap-write mechanism when the run's engine is the
    /// embedded one (`embedded`).
    pub fn this(embedded: bool) -> Machine {
        let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let field = |name: &str| {
            cpuinfo.lines().find_map(|l| {
                let (key, value) = l.split_once(':')?;
                (key.trim() == name).then(|| value.trim().to_string())
            })
        };
        let cpu_features = match field("flags") {
            Some(flags) => {
                let has: Vec<&str> = flags.split_whitespace().collect();
                let dispatch = GLIBC_DISPATCH.iter().filter(|f| has.contains(f));
                dispatch.copied().collect::<Vec<_>>().join(" ")
            }
            None => field("Features").unwrap_or_default(),
        };
        let known = |s: String| match s.trim() {
            "" => "unknown".to_string(),
            s => s.to_string(),
        };
        // `always [madvise] never`: the mode in brackets.
        let thp = read("/sys/kernel/mm/transparent_hugepage/enabled");
        let thp = thp.split_once('[').and_then(|(_, r)| r.split_once(']'));
        Machine {
            cpu: known(field("model name").unwrap_or_default()),
            cpu_features: known(cpu_features),
            glibc_tunables: std::env::var("GLIBC_TUNABLES").ok(),
            kernel: known(read("/proc/sys/kernel/osrelease")),
            transparent_hugepages: known(thp.map(|(mode, _)| mode.into()).unwrap_or_default()),
            heap_writes: embedded
                .then(|| HeapWrites::configured().ok().map(HeapWrites::said))
                .flatten(),
        }
    }

    /// `AMD EPYC (sse2 ... popcnt), kernel 6.18.44, transparent huge pages madvise, heap
    /// writes found by kernel write log`.
    pub fn line(&self) -> String {
        let mut line = format!(
            "{} ({}), kernel {}, transparent huge pages {}",
            self.cpu, self.cpu_features, self.kernel, self.transparent_hugepages
        );
        if let Some(t) = &self.glibc_tunables {
            line += &format!(", GLIBC_TUNABLES={t}");
        }
        if let Some(w) = &self.heap_writes {
            line += &format!(", heap writes found by {w}");
        }
        line
    }

    /// Its facts by name, for naming those two machines differ in.
    fn facts(&self) -> [(&'static str, String); 6] {
        let or_none = |v: &Option<String>| v.clone().unwrap_or_else(|| "(none)".into());
        [
            ("CPU", self.cpu.clone()),
            ("CPU features", self.cpu_features.clone()),
            ("GLIBC_TUNABLES", or_none(&self.glibc_tunables)),
            ("kernel", self.kernel.clone()),
            ("transparent huge pages", self.transparent_hugepages.clone()),
            ("heap writes", or_none(&self.heap_writes)),
        ]
    }

    /// Each fact `new` differs from this machine in: `kernel 6.1 (base) against 6.18 (new)`.
    pub fn differences(&self, new: &Machine) -> Vec<String> {
        let facts = self.facts().into_iter().zip(new.facts());
        facts
            .filter(|((_, b), (_, n))| b != n)
            .map(|((what, b), (_, n))| format!("{what} {b} (base) against {n} (new)"))
            .collect()
    }
}

impl Provenance {
    /// A run of `modules` (name, bytes) on this machine, on the embedded engine when
    /// `embedded`.
    pub fn of<'n, 'w>(
        modules: impl IntoIterator<Item = (&'n str, &'w [u8])>,
        embedded: bool,
    ) -> Provenance {
        Provenance {
            modules: modules
                .into_iter()
                .map(|(name, wasm)| ModuleRun::of(name, wasm))
                .collect(),
            machines: vec![Machine::this(embedded)],
        }
    }

    /// One line: `Module: bench 1be8bf44 (...). Machine: AMD EPYC (...), ...`.
    pub fn line(&self) -> String {
        let modules: Vec<String> = self.modules.iter().map(ModuleRun::short).collect();
        let machines: Vec<String> = self.machines.iter().map(Machine::line).collect();
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        format!(
            "Module{}: {}. Machine{}: {}.",
            plural(modules.len()),
            modules.join(", "),
            plural(machines.len()),
            machines.join("; ")
        )
    }

    /// The shards' provenance as one run's: their modules (the same in every shard: the
    /// shard's signature holds their hashes) and each machine once. None when no shard
    /// recorded one.
    pub fn joined(parts: &[Option<Provenance>]) -> Option<Provenance> {
        let mut all = parts.iter().flatten();
        let mut joined = all.next()?.clone();
        for p in all {
            for m in &p.machines {
                if !joined.machines.contains(m) {
                    joined.machines.push(m.clone());
                }
            }
        }
        Some(joined)
    }
}

/// How the runs `base` and `new` differ in what they ran: each module whose bytes differ
/// (or that one of them did not hold) and each machine fact that differs, one phrase each;
/// a run without a record says so. Empty when they ran the same modules on alike machines.
pub fn differences(base: &Report, new: &Report) -> Vec<String> {
    let (b, n) = match (base.provenance(), new.provenance()) {
        (Some(b), Some(n)) => (b, n),
        (None, None) => return Vec::new(),
        (b, _) => {
            let which = if b.is_none() { "base" } else { "new" };
            return vec![format!(
                "the {which} run does not record its modules and machine (results.json of an \
                 older icbench)"
            )];
        }
    };
    let mut out = Vec::new();
    let sha = |p: &Provenance, name: &str| {
        let m = p.modules.iter().find(|m| m.name == name);
        m.map(|m| m.sha256.clone())
    };
    let short = |sha: Option<String>| -> String {
        sha.map_or("(none)".into(), |s| s[..s.len().min(8)].into())
    };
    let names = b.modules.iter().chain(&n.modules).map(|m| m.name.as_str());
    for name in super::table::first_seen(names) {
        let (bs, ns) = (sha(&b, name), sha(&n, name));
        if bs != ns {
            let (bs, ns) = (short(bs), short(ns));
            out.push(format!("module {name} {bs} (base) against {ns} (new)"));
        }
    }
    if let (Some(bm), Some(nm)) = (b.machines.first(), n.machines.first()) {
        out.extend(bm.differences(nm));
    }
    out
}

/// The line `icbench compare` says when the runs differ in what they ran (a count may have
/// moved by a module's bytes; it must not by a machine); none when they do not.
pub fn differences_line(differences: &[String]) -> Option<String> {
    (!differences.is_empty())
        .then(|| format!("The runs ran otherwise: {}.", differences.join("; ")))
}

/// A comment's provenance paragraph: what the new run ran (`new`), then how the runs
/// differ in it; none when neither is known.
pub fn paragraph(new: Option<&Provenance>, differences: &[String]) -> Option<String> {
    let parts: Vec<String> = new
        .map(Provenance::line)
        .into_iter()
        .chain(differences_line(differences))
        .collect();
    (!parts.is_empty()).then(|| parts.join(" "))
}

#[cfg(test)]
mod tests;

impl Report {
    /// Records what the run ran on.
    pub fn set_provenance(&mut self, provenance: &Provenance) {
        self.set_extra(PROVENANCE, provenance);
    }

    /// What the run ran on, if it says (a results.json of an older version does not).
    pub fn provenance(&self) -> Option<Provenance> {
        self.extra::<Provenance>(PROVENANCE)
    }
}

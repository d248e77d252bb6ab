//! modules.txt, parsed and checked: the canister modules, how each is built and what it is
//! built from. Compiled twice: into this crate's build script (`#[path]`), which turns the
//! list into the `MODULES` of the library, and into the library, where icbench's tests
//! hold it to the other readers of the list; so it uses std only.

/// The list, relative to this crate.
pub const FILE: &str = "modules.txt";
/// This crate's folder, where the modules are committed, relative to the project root.
pub const PREBUILT_DIR: &str = "canisters/prebuilt";
/// Where scripts/build-canister.sh writes the modules, relative to the project root.
pub const BUILT_DIR: &str = "target/canister";

/// Sources every module's build reads: the build script and the toolchain pin.
pub const BUILD_SOURCES: [&str; 2] = ["scripts/build-canister.sh", "rust-toolchain.toml"];
/// The converter, a source of every module the build runs it on (`rewire wasi`, or a did).
pub const CONVERTER: &str = "scripts/wasi2ic-post";

/// The `target` of a module the Motoko compiler builds (moc from npm, run by the crate
/// folder's build.js), not cargo: its features are moc's options of [`MOC_FEATURES`], it
/// embeds its did itself and needs no converter.
pub const MOC: &str = "moc";
/// The features a Motoko module may have: moc's options, each given to build.js as
/// `--NAME` (`legacy-persistence`: classical persistence, `moc --legacy-persistence`).
pub const MOC_FEATURES: [&str; 1] = ["legacy-persistence"];

/// The keys of a module.
const KEYS: [&str; 8] = [
    "crate", "target", "features", "rewire", "did", "wasm", "sources", "requires",
];

/// One module of the list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    pub name: &'a str,
    pub crate_dir: &'a str,
    pub target: &'a str,
    pub features: Vec<&'a str>,
    /// `rewire wasi`: the build runs scripts/wasi2ic-post's rewiring of the WASI imports.
    pub rewire_wasi: bool,
    pub did: Option<&'a str>,
    pub sources: Vec<&'a str>,
    /// The exports a module given for it must have (`canister_update NAME`, ...).
    pub requires: Vec<String>,
    /// The file name: target/canister/WASM when built, canisters/prebuilt/WASM committed.
    pub wasm: &'a str,
}

impl Entry<'_> {
    /// What the build does, as the list gives it (`-` for none): crate, target, features,
    /// rewire, did. The sources record hashes it beside the sources, so a change to the
    /// module's line of the list is a change to what it is built from.
    pub fn recipe(&self) -> String {
        let features = if self.features.is_empty() {
            "-".to_string()
        } else {
            self.features.join(",")
        };
        let rewire = if self.rewire_wasi { "wasi" } else { "none" };
        let did = self.did.unwrap_or("-");
        format!(
            "{} {} {features} {rewire} {did}",
            self.crate_dir, self.target
        )
    }

    /// The committed module, relative to the project root.
    pub fn prebuilt_wasm(&self) -> String {
        format!("{PREBUILT_DIR}/{}", self.wasm)
    }

    /// Its record, relative to the project root.
    pub fn prebuilt_record(&self) -> String {
        format!("{PREBUILT_DIR}/{}", self.record())
    }

    /// Where scripts/build-canister.sh writes it, relative to the project root.
    pub fn built(&self) -> String {
        format!("{BUILT_DIR}/{}", self.wasm)
    }

    /// The module's line of `scripts/build-canister.sh --list`: its name, its recipe, the
    /// committed module and the built one.
    pub fn list_line(&self) -> String {
        format!(
            "{} {} {} {}",
            self.name,
            self.recipe(),
            self.prebuilt_wasm(),
            self.built()
        )
    }

    /// The record of its sources, beside the committed module (`bench.sources`).
    pub fn record(&self) -> String {
        format!("{}.sources", self.wasm.trim_end_matches(".wasm"))
    }

    /// Whether the Motoko compiler builds it (`target moc`), not cargo.
    pub fn moc(&self) -> bool {
        self.target == MOC
    }

    /// Whether the build runs the converter on it: moc embeds a Motoko module's did itself.
    pub fn converted(&self) -> bool {
        self.rewire_wasi || (self.did.is_some() && !self.moc())
    }
}

/// A module's block as read: its name, the line it starts on, its keys' values.
struct Block<'a> {
    name: &'a str,
    line: usize,
    keys: Vec<(&'a str, Vec<&'a str>)>,
}

/// The modules of `text` (modules.txt), in order; the error is one line naming the line.
pub fn parse(text: &str) -> Result<Vec<Entry<'_>>, String> {
    let mut modules = Vec::new();
    let mut block: Option<Block> = None;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest
                .strip_suffix(']')
                .ok_or_else(|| format!("{FILE} line {n}: `{line}` is not `[name]`"))?;
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            {
                return Err(format!(
                    "{FILE} line {n}: module name `{name}` is not lowercase letters, digits and -"
                ));
            }
            if let Some(done) = block.take() {
                modules.push(entry(done)?);
            }
            if modules.iter().any(|m: &Entry| m.name == name) {
                return Err(format!("{FILE} line {n}: module `{name}` is listed twice"));
            }
            block = Some(Block {
                name,
                line: n,
                keys: Vec::new(),
            });
            continue;
        }
        let Some(Block { keys, .. }) = block.as_mut() else {
            return Err(format!(
                "{FILE} line {n}: `{line}` comes before any `[name]`"
            ));
        };
        let mut words = line.split_whitespace();
        let key = words.next().expect("a line that is not blank has a word");
        if !KEYS.contains(&key) {
            return Err(format!(
                "{FILE} line {n}: unknown key `{key}`; the keys are {}",
                KEYS.join(", ")
            ));
        }
        if keys.iter().any(|(k, _)| *k == key) {
            return Err(format!("{FILE} line {n}: `{key}` is given twice"));
        }
        let values: Vec<&str> = words.collect();
        if values.is_empty() {
            return Err(format!(
                "{FILE} line {n}: `{key}` has no value (`-` for none)"
            ));
        }
        keys.push((key, values));
    }
    if let Some(done) = block.take() {
        modules.push(entry(done)?);
    }
    if modules.is_empty() {
        return Err(format!("{FILE} lists no module"));
    }
    let mut files: Vec<&str> = modules.iter().map(|m| m.wasm).collect();
    files.sort_unstable();
    if let Some(w) = files.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!("{FILE}: two modules are committed as `{}`", w[0]));
    }
    Ok(modules)
}

/// A block's keys checked and made an entry; errors name the module and its line.
fn entry<'a>(Block { name, line, keys }: Block<'a>) -> Result<Entry<'a>, String> {
    let at = format!("{FILE} line {line}: module `{name}`");
    let values = |key: &str| -> Result<&Vec<&'a str>, String> {
        keys.iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
            .ok_or_else(|| format!("{at} has no `{key}` line"))
    };
    let one = |key: &str| -> Result<&'a str, String> {
        match values(key)?.as_slice() {
            [value] => Ok(*value),
            more => Err(format!("{at}: `{key}` takes one value, not {}", more.len())),
        }
    };
    let none_or = |value: &'a str| (value != "-").then_some(value);
    let path = |key: &str, value: &'a str| -> Result<&'a str, String> {
        let bad = value.starts_with('/')
            || value.ends_with('/')
            || value.contains('\\')
            || value
                .split('/')
                .any(|c| c.is_empty() || c == "." || c == "..");
        if bad {
            return Err(format!(
                "{at}: `{key}` {value} is not a plain path relative to the project root"
            ));
        }
        Ok(value)
    };

    let crate_dir = path("crate", one("crate")?)?;
    let target = one("target")?;
    let features = match none_or(one("features")?) {
        None => Vec::new(),
        Some(list) => {
            let features: Vec<&str> = list.split(',').collect();
            if features.iter().any(|f| f.is_empty()) {
                return Err(format!("{at}: features `{list}` has an empty name"));
            }
            features
        }
    };
    let rewire_wasi = match one("rewire")? {
        "wasi" => true,
        "none" => false,
        other => {
            return Err(format!(
                "{at}: rewire `{other}` is neither `wasi` nor `none`"
            ))
        }
    };
    let did = match none_or(one("did")?) {
        Some(did) if !did.ends_with(".did") => {
            return Err(format!("{at}: did `{did}` is not a .did file"));
        }
        did => did.map(|d| path("did", d)).transpose()?,
    };
    let wasm = one("wasm")?;
    if wasm.contains('/') || !wasm.ends_with(".wasm") || wasm.len() == ".wasm".len() {
        return Err(format!(
            "{at}: wasm `{wasm}` is not a file name ending in .wasm"
        ));
    }
    let sources = values("sources")?
        .iter()
        .map(|s| path("sources", s))
        .collect::<Result<Vec<_>, _>>()?;
    let requires = match values("requires")?.as_slice() {
        ["-"] => Vec::new(),
        methods => methods
            .iter()
            .map(|m| match m.split_once(':') {
                Some((mode @ ("update" | "query"), method)) if !method.is_empty() => {
                    Ok(format!("canister_{mode} {method}"))
                }
                _ => Err(format!(
                    "{at}: requires `{m}` is not `update:NAME` or `query:NAME`"
                )),
            })
            .collect::<Result<_, _>>()?,
    };
    if target == MOC && (rewire_wasi || did.is_none()) {
        return Err(format!(
            "{at}: a Motoko module (target {MOC}) has rewire none and a did (moc's interface of it)"
        ));
    }
    if let Some(f) = features
        .iter()
        .find(|f| target == MOC && !MOC_FEATURES.contains(f))
    {
        return Err(format!(
            "{at}: a Motoko module's features are moc's options ({}), not `{f}`",
            MOC_FEATURES.join(", ")
        ));
    }
    let entry = Entry {
        name,
        crate_dir,
        target,
        features,
        rewire_wasi,
        did,
        sources,
        requires,
        wasm,
    };
    // The sources must cover what the build reads, or a change to it would go unseen.
    let covered = |p: &str| {
        entry
            .sources
            .iter()
            .any(|s| p == *s || p.strip_prefix(s).is_some_and(|r| r.starts_with('/')))
    };
    let mut needed: Vec<&str> = vec![crate_dir];
    needed.extend(did);
    needed.extend(BUILD_SOURCES);
    if entry.converted() {
        needed.push(CONVERTER);
    }
    if let Some(missing) = needed.into_iter().find(|p| !covered(p)) {
        return Err(format!(
            "{at}: its sources do not cover {missing}, which its build reads"
        ));
    }
    Ok(entry)
}

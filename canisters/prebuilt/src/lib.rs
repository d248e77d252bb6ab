//! The canister modules committed in canisters/prebuilt, inside the binary that links this
//! crate: icbench then needs no file of its source tree at run time. modules.txt lists them
//! (how each is built, from what, what it must export); `MODULES` is that list with each
//! module's committed bytes and record.
//!
//! The build script checks every module's bytes against its record; icbench's own build
//! script checks each record against the canister's sources when they are there (a checkout).

pub mod list;

/// A module of modules.txt (see its header for each key) and its committed bytes.
pub struct Prebuilt {
    pub name: &'static str,
    pub crate_dir: &'static str,
    pub target: &'static str,
    pub features: &'static [&'static str],
    pub rewire_wasi: bool,
    pub did: Option<&'static str>,
    /// Its build as the list gives it ([`list::Entry::recipe`]): part of what its record's
    /// sources-sha256 covers.
    pub recipe: &'static str,
    /// The files and folders its sources-sha256 covers, relative to the project root.
    pub sources: &'static [&'static str],
    /// The exports a module given for it must have besides its stores' (`canister_update
    /// NAME`, ...; icbench's store table adds each store's).
    pub requires: &'static [&'static str],
    /// Where scripts/build-canister.sh writes it, the committed module and its record,
    /// relative to the project root.
    pub built: &'static str,
    pub prebuilt_wasm: &'static str,
    pub prebuilt_sources: &'static str,
    /// The committed module (scripts/update-prebuilt-canister.sh writes it).
    pub wasm: &'static [u8],
    /// Its record: the SHA-256 of the sources it was built from (`sources-sha256 ...`) and
    /// of the module itself (`module-sha256 ...`).
    pub record: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/modules.rs"));

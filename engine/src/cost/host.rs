//! The machine a replica or PocketIC server runs on (`--host`): its OS page size decides how
//! many pages a message's memory accesses count as, and so what every vintage charges.
//!
//! The replica tracks memory in OS pages of its own machine, `ic_sys::PAGE_SIZE`: 16 KiB in a
//! build for `aarch64` + `apple` (macOS on Apple silicon), 4 KiB in every other build
//! (rs/sys/src/lib.rs, `#[cfg(all(target_arch = "aarch64", target_vendor = "apple"))] pub
//! const PAGE_SIZE: usize = 16384;`, read through the code search; the older stored version
//! d4697259 has 4096 for every build). Every page charge counts those pages:
//!
//! * before the memory tracker, the heap's written pages after an update
//!   (`dirty_page_overhead * access.wasm_dirty_pages.len()`, whose entries are `PageIndex`es
//!   of `PAGE_SIZE`: rs/embedders/src/wasmtime_embedder.rs, index id 2425545614), and stable
//!   memory's in `stable_write` (its bytemap holds a byte per OS page, `page_size_shift =
//!   PAGE_SIZE.trailing_zeros()`: rs/embedders/src/wasm_utils/system_api_replacements.rs @
//!   0c3226cfc2aee4dab2ae34297ef637f6bc223418), 1,000 per page either way;
//! * the stable page limits, `2 * GiB / PAGE_SIZE` and the like, in OS pages
//!   (rs/config/src/embedders.rs, index id 2397380199): the same bytes on every host;
//! * under the memory tracker, `page_overhead` per OS page of each Wasm page, so
//!   `OS_PAGES_IN_WASM_PAGE = WASM_PAGE_SIZE_IN_BYTES / PAGE_SIZE` of them
//!   (rs/memory_tracker/src/deterministic/conversions.rs @
//!   0277d7c1ce537e83fea8e9900cbf5bdcb76ee16b): 16 × 5,000 on Linux, 4 × 5,000 on a Mac.
//!   dfinity/ic #9894 (merged 2026-04-15) made the replica's own tests use `ic_sys::PAGE_SIZE`
//!   "so the values are correct on arm64-darwin (16 KiB pages) as well as on Linux (4 KiB
//!   pages)"; a review of #11344 (2026-08-28): "a Linux page is 4KiB and a MacOS Page is
//!   16KiB ... OS pages ... is what actually incurs a cost".
//!
//! An x86_64 server on a Mac (canbench downloads that build, run by Rosetta 2) is built with 4
//! KiB pages: its host is [`Host::Linux`] here, whatever the machine.

use super::OS_PAGE_SIZE;

/// The page size a server's build tracks memory in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Host {
    /// 4 KiB pages: Linux (x86_64 or arm64), and every x86_64 build, on a Mac too. The
    /// replica's mainnet nodes.
    #[default]
    Linux,
    /// 16 KiB pages: a native arm64-darwin server (macOS on Apple silicon).
    MacosArm64,
}

impl Host {
    /// Every host, the default first.
    pub const ALL: [Host; 2] = [Host::Linux, Host::MacosArm64];

    /// `--host NAME`.
    pub const fn name(self) -> &'static str {
        match self {
            Host::Linux => "linux",
            Host::MacosArm64 => "macos-arm64",
        }
    }

    /// What the host is, for `--help`.
    pub const fn summary(self) -> &'static str {
        match self {
            Host::Linux => "4 KiB OS pages: Linux, and any x86_64 server (also one run by Rosetta on a Mac); mainnet",
            Host::MacosArm64 => "16 KiB OS pages: a native arm64-darwin server (macOS on Apple silicon)",
        }
    }

    /// Bytes in one of the host's OS pages (`ic_sys::PAGE_SIZE`).
    pub const fn os_page_size(self) -> u64 {
        match self {
            Host::Linux => OS_PAGE_SIZE,
            Host::MacosArm64 => 4 * OS_PAGE_SIZE,
        }
    }

    /// The engine's 4 KiB pages in one of the host's OS pages, as a shift (0 on Linux).
    pub const fn page_shift(self) -> u32 {
        (self.os_page_size() / OS_PAGE_SIZE).trailing_zeros()
    }

    /// The host called `name`, or an error naming the known ones.
    pub fn by_name(name: &str) -> Result<Host, String> {
        Host::ALL
            .into_iter()
            .find(|h| h.name() == name)
            .ok_or_else(|| {
                let known: Vec<&str> = Host::ALL.iter().map(|h| h.name()).collect();
                format!(
                    "unknown host '{name}': known hosts are {}",
                    known.join(", ")
                )
            })
    }
}

/// The values of `--host` (a run's, `icbench canbench`'s), each with what it is, in any case.
pub fn value_parser() -> impl clap::builder::TypedValueParser<Value = Host> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(
        Host::ALL.map(|h| clap::builder::PossibleValue::new(h.name()).help(h.summary())),
    )
    .map(|typed| {
        Host::ALL
            .into_iter()
            .find(|h| h.name().eq_ignore_ascii_case(&typed))
            .expect("clap took one of the hosts' names")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mac_counts_16_kib_pages_linux_4_kib() {
        assert_eq!(Host::default(), Host::Linux);
        assert_eq!(Host::Linux.os_page_size(), 4096);
        assert_eq!(Host::MacosArm64.os_page_size(), 16384);
        assert_eq!(Host::Linux.page_shift(), 0);
        assert_eq!(Host::MacosArm64.page_shift(), 2);
        assert_eq!(Host::by_name("macos-arm64"), Ok(Host::MacosArm64));
        assert_eq!(
            Host::by_name("macos"),
            Err("unknown host 'macos': known hosts are linux, macos-arm64".into())
        );
    }
}

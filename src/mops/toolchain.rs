//! Where mops keeps the tools it runs (moc, wasm-opt), for finding them offline as it does.

use std::path::PathBuf;

/// mops' toolchain cache (`globalCacheDir` in cli/mops.ts): `$XDG_CACHE_HOME/mops`, else the
/// platform's.
pub fn mops_cache() -> Option<PathBuf> {
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|x| !x.is_empty()) {
        return Some(PathBuf::from(x).join("mops"));
    }
    let home = PathBuf::from(std::env::var_os("HOME")?);
    Some(if cfg!(target_os = "macos") {
        home.join("Library/Caches/mops")
    } else {
        home.join(".cache/mops")
    })
}

pub fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

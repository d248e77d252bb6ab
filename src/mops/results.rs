//! mops' results file, `.bench/<bench file name>.json`, as `mops bench --save` writes it
//! (`JSON.stringify(json, null, 2)`, no newline at the end) and `--compare` reads it.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use serde::{Deserialize, Serialize};

use super::runner::Stats;

/// The directory under the root that holds the results files.
pub const DIR: &str = ".bench";

/// One results file.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Saved {
    pub version: u32,
    pub moc: String,
    pub replica: String,
    #[serde(rename = "replicaVersion")]
    pub replica_version: String,
    pub gc: String,
    #[serde(rename = "forceGc")]
    pub force_gc: bool,
    /// `[row:col, figures]`, in the order the cells ran.
    pub results: Vec<(String, Stats)>,
}

impl Saved {
    pub fn get(&self, key: &str) -> Option<&Stats> {
        self.results.iter().find(|(k, _)| k == key).map(|(_, s)| s)
    }
}

/// Where the results of the bench file `file` go: `.bench/<its name without .mo>.json`.
pub fn path(root: &Path, file: &Path) -> PathBuf {
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("bench");
    root.join(DIR).join(format!("{stem}.json"))
}

/// The results file at `path`, if there is one; a file that is not mops' is an error.
pub fn read(path: &Path) -> Result<Option<Saved>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| anyhow!("{} is not a mops results file: {e}", path.display()))
}

/// The file's text, as mops writes it.
pub fn render(saved: &Saved) -> String {
    serde_json::to_string_pretty(saved).expect("plain data serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_of_mops_reads_back_byte_for_byte() {
        let text = r#"{
  "version": 1,
  "moc": "0.12.1",
  "replica": "pocket-ic",
  "replicaVersion": "4.0.0",
  "gc": "copying",
  "forceGc": true,
  "results": [
    [
      "Array:reset1",
      {
        "rts_stable_memory_size": 0,
        "stable_memory_size": 0,
        "instructions": 4455,
        "rts_memory_size": 0,
        "rts_total_allocation": 616,
        "rts_collector_instructions": -7294024,
        "rts_mutator_instructions": -7922,
        "rts_logical_stable_memory_size": 0,
        "rts_heap_size": -399736,
        "rts_reclaimed": 400352
      }
    ]
  ]
}"#;
        let saved: Saved = serde_json::from_str(text).unwrap();
        assert_eq!(saved.get("Array:reset1").unwrap().instructions, 4455);
        assert_eq!(render(&saved), text);
    }
}

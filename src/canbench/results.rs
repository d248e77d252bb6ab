//! canbench's result types (canbench-rs 0.2.0 and later: four plain `nat64` fields) and its
//! `canbench_results.yml` file.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use candid::{CandidType, Deserialize};
use serde::Serialize;

/// The canbench release whose formats and version checks are emulated.
pub const CANBENCH_VERSION: &str = "0.7.0";

/// One measurement. Missing fields read as 0 in results files (`serde(default)`), and the
/// YAML keys come out in this field order, as canbench writes them.
#[derive(CandidType, Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct Measurement {
    #[serde(default)]
    pub calls: u64,
    #[serde(default)]
    pub instructions: u64,
    #[serde(default)]
    pub heap_increase: u64,
    #[serde(default)]
    pub stable_memory_increase: u64,
}

/// A bench's reply. `scopes` is a sorted map, a `vec record { text; Measurement }` in Candid.
#[derive(CandidType, Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct BenchResult {
    pub total: Measurement,
    #[serde(default)]
    pub scopes: BTreeMap<String, Measurement>,
}

pub type Results = BTreeMap<String, BenchResult>;

#[derive(Serialize, Deserialize)]
struct ResultsFile {
    benches: Results,
    version: String,
}

/// Parses a results file's text; refuses one written by a newer canbench, with canbench's
/// own message.
pub fn parse(text: &str, name: &Path) -> Result<Results> {
    let file: ResultsFile = yaml_serde::from_str(text)
        .map_err(|e| anyhow!("invalid results file {}: {e}", name.display()))?;
    let ours = semver::Version::parse(CANBENCH_VERSION).expect("valid version");
    let theirs = semver::Version::parse(file.version.trim()).map_err(|e| {
        anyhow!(
            "couldn't parse version {:?} in results file {}: {e}",
            file.version,
            name.display()
        )
    })?;
    if ours < theirs {
        bail!("canbench is at version {ours} while the results were generated with version {theirs}. Please upgrade canbench.");
    }
    Ok(file.benches)
}

/// Reads the previous results; a missing file means none (as canbench).
pub fn read(path: &Path) -> Result<Results> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse(&text, path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Results::new()),
        Err(e) => Err(e).with_context(|| format!("reading results file {}", path.display())),
    }
}

/// The file's text: the benches of this run sorted by name, then `version`.
pub fn render(results: &Results) -> String {
    yaml_serde::to_string(&ResultsFile {
        benches: results.clone(),
        version: CANBENCH_VERSION.to_string(),
    })
    .expect("results serialize to YAML")
}

pub fn write(path: &Path, results: &Results) -> Result<()> {
    crate::report::write_files(path, vec![(path.to_path_buf(), render(results))])
        .map(drop)
        .with_context(|| format!("writing results file {}", path.display()))
}

/// A measurement in one call, for the tests of this runner.
#[cfg(test)]
pub(crate) fn m(calls: u64, instructions: u64, heap: u64, stable: u64) -> Measurement {
    Measurement {
        calls,
        instructions,
        heap_increase: heap,
        stable_memory_increase: stable,
    }
}

/// A bench's result with its scopes, for the tests of this runner.
#[cfg(test)]
pub(crate) fn bench(total: Measurement, scopes: &[(&str, Measurement)]) -> BenchResult {
    BenchResult {
        total,
        scopes: scopes
            .iter()
            .map(|(s, m)| (s.to_string(), m.clone()))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_layout_is_canbench_s() {
        let mut r = Results::new();
        r.insert("fibonacci_20".into(), bench(m(1, 729, 0, 0), &[]));
        r.insert(
            "b_scoped".into(),
            bench(m(1, 3834, 1, 2), &[("s", m(10, 970, 0, 0))]),
        );
        let text = render(&r);
        assert_eq!(
            text,
            "benches:
  b_scoped:
    total:
      calls: 1
      instructions: 3834
      heap_increase: 1
      stable_memory_increase: 2
    scopes:
      s:
        calls: 10
        instructions: 970
        heap_increase: 0
        stable_memory_increase: 0
  fibonacci_20:
    total:
      calls: 1
      instructions: 729
      heap_increase: 0
      stable_memory_increase: 0
    scopes: {}
version: 0.7.0
"
        );
        assert_eq!(parse(&text, Path::new("r.yml")).unwrap(), r);
    }

    /// Scope names are any text a canister passes to `bench_scope`; canbench writes them with
    /// libyaml's emitter, which quotes a name that would read back as another type or as YAML
    /// syntax, writes a multi-line name as a block scalar and a name over 128 bytes as an
    /// explicit `? key`. Pinned byte for byte, and every name reads back.
    #[test]
    fn odd_scope_names_are_quoted_as_canbench_quotes_them() {
        let long = "x".repeat(129);
        let names = [
            "plain_name",
            "",
            "123",
            "true",
            "null",
            "~",
            "a: b",
            "#x",
            "it's",
            "multi\nline",
            "\u{fc}",
            "2024-01-01",
            &long,
        ];
        let scopes = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.to_string(), m(i as u64, u64::MAX, 0, 0)))
            .collect();
        let r: Results = [(
            "odd_names".to_string(),
            BenchResult {
                total: m(1, 5, 0, 0),
                scopes,
            },
        )]
        .into();
        // The 129-byte name is `{long}`; the YAML has no other braces.
        let expected = format!(
            "benches:
  odd_names:
    total:
      calls: 1
      instructions: 5
      heap_increase: 0
      stable_memory_increase: 0
    scopes:
      '':
        calls: 1
        instructions: 18446744073709551615
        heap_increase: 0
        stable_memory_increase: 0
      '#x':
        calls: 7
        instructions: 18446744073709551615
        heap_increase: 0
        stable_memory_increase: 0
      '123':
        calls: 2
        instructions: 18446744073709551615
        heap_increase: 0
        stable_memory_increase: 0
      2024-01-01:
        calls: 11
        instructions: 18446744073709551615
        heap_increase: 0
        stable_memory_increase: 0
      'a: b':
        calls: 6
        instructions: 18446744073709551615
        heap_increase: 0
        stable_memory_increase: 0
      it's:
        calls: 8
        instructions: 18446744073709551615
        heap_increase: 0
        stable_memory_increase: 0
      ? |-
        multi
        line
      : calls: 9
        instructions: 18446744073709551615
        heap_increase: 0
        stable_memory_increase: 0
      'null':
        calls: 4
        instructions: 18446744073709551615
        heap_increase: 0
        stable_memory_increase: 0
      plain_name:
        calls: 0
        instructions: 18446744073709551615
        heap_increase: 0
        stable_memory_increase: 0
      'true':
        calls: 3
        instructions: 18446744073709551615
        heap_increase: 0
        stable_memory_increase: 0
      ? {long}
      : calls: 12
        instructions: 18446744073709551615
        heap_increase: 0
        stable_memory_increase: 0
      '~':
        calls: 5
        instructions: 18446744073709551615
        heap_increase: 0
        stable_memory_increase: 0
      \u{fc}:
        calls: 10
        instructions: 18446744073709551615
        heap_increase: 0
        stable_memory_increase: 0
version: 0.7.0
"
        );
        assert_eq!(render(&r), expected);
        assert_eq!(parse(&expected, Path::new("r.yml")).unwrap(), r);
    }

    #[test]
    fn old_files_read_with_defaults_and_unknown_keys() {
        // canbench's own fixture format (version 0.1.15: no calls, unknown keys).
        let r = parse(
            "benches:\n  a:\n    total:\n      instructions: 3540000\n      heap_delta: 1\n      heap_increase: 65\n    scopes: {}\n  b:\n    total:\n      stable_memory_increase: 3\nversion: 0.1.15\n",
            Path::new("r.yml"),
        )
        .unwrap();
        assert_eq!(r["a"].total, m(0, 3_540_000, 65, 0));
        assert_eq!(r["b"].total, m(0, 0, 0, 3));
        assert!(r["b"].scopes.is_empty());
    }

    #[test]
    fn newer_version_is_refused_equal_and_older_accepted() {
        let e = parse("benches: {}\nversion: 99.0.0\n", Path::new("r.yml")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "canbench is at version 0.7.0 while the results were generated with version 99.0.0. Please upgrade canbench."
        );
        assert!(parse("benches: {}\nversion: 0.7.1\n", Path::new("r.yml")).is_err());
        assert!(parse("benches: {}\nversion: 0.7.0\n", Path::new("r.yml")).is_ok());
        assert!(parse("benches: {}\nversion: 0.2.0\n", Path::new("r.yml")).is_ok());
    }

    #[test]
    fn bad_files_are_errors_naming_the_file() {
        for text in [
            "benches: {}\n",                                    // no version
            "benches:\n  a:\n    scopes: {}\nversion: 0.2.0\n", // total is required
            "benches: {}\nversion: not-a-version\n",
            "{{{",
        ] {
            let e = parse(text, Path::new("dir/r.yml")).unwrap_err().to_string();
            assert!(e.contains("dir/r.yml"), "{text:?}: {e}");
        }
        let e = parse(
            "benches:\n  a:\n    total:\n      calls: -1\nversion: 0.1.0\n",
            Path::new("dir/r.yml"),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid results file dir/r.yml: benches.a.total.calls: invalid type: integer `-1`, expected u64 at line 4 column 14"
        );
        assert!(read(Path::new("/nonexistent/dir/r.yml"))
            .unwrap()
            .is_empty());
    }

    #[test]
    fn candid_reply_decodes() {
        let r = bench(m(1, 207, 0, 0), &[("s", m(2, 5, 1, 0))]);
        let bytes = candid::encode_one(&r).unwrap();
        assert_eq!(candid::decode_one::<BenchResult>(&bytes).unwrap(), r);
    }
}

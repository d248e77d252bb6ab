//! The instruction profiles of a run: which scenarios keep theirs (`--profile PATTERN`),
//! and the files they are written to (`profiles/ID.folded` and `profiles/ID.svg` under the
//! run's directory).

use std::path::{Path, PathBuf};

use super::{scenario_ids, Report};
use crate::engine::page_map::PageMap;
use crate::engine::Profile;

/// The directory under a run's output that holds the profiles.
pub const DIR: &str = "profiles";

/// Whether `id` matches `pattern`: `*` stands for any run of characters (slashes
/// included), everything else for itself, and the pattern must cover the whole id
/// (`sqlite-wal/*`, `*/insert/1`, `btree/middle/insert/10`).
pub fn matches(pattern: &str, id: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == id;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !id.starts_with(first) || id.len() < first.len() + last.len() || !id.ends_with(last) {
        return false;
    }
    let mut rest = &id[first.len()..id.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// The error of a pattern that matches none of `ids`: it names them.
pub fn no_match(pattern: &str, ids: &[String]) -> String {
    let shown: Vec<&str> = ids.iter().take(40).map(String::as_str).collect();
    let more = match ids.len().saturating_sub(shown.len()) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    format!(
        "--profile {pattern:?} matches no scenario; the ids are: {}{more} (`*` matches any text, e.g. --profile '{}')",
        shown.join(", "),
        ids.first()
            .and_then(|id| id.split('/').next())
            .map(|store| format!("{store}/*"))
            .unwrap_or_else(|| "*".into())
    )
}

/// What [`select`] did with a report's results.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Selected {
    /// Results whose id matches the pattern.
    pub matched: usize,
    /// Of those, the ones that have a profile (a refused or derived row has none).
    pub kept: usize,
}

/// Keeps the profiles of the results whose id matches `pattern` and names their files in
/// the `profile` column; every other result's profile is dropped.
pub fn select(report: &mut Report, pattern: &str) -> Selected {
    let ids = scenario_ids(&report.results);
    let mut selected = Selected::default();
    for (r, id) in report.results.iter_mut().zip(&ids) {
        if !matches(pattern, id) {
            r.profile_data = None;
            r.page_map_data = None;
            continue;
        }
        selected.matched += 1;
        if r.profile_data.is_some() {
            r.profile = format!("{DIR}/{id}.folded");
            selected.kept += 1;
        }
    }
    selected
}

/// The scenario id of a `profile` column's file (`profiles/ID.folded`).
pub fn id_of_file(file: &str) -> Option<&str> {
    file.strip_prefix(DIR)?
        .strip_prefix('/')?
        .strip_suffix(".folded")
}

/// The profiles a report keeps, as (id, file relative to the run's directory, profile).
pub fn kept(report: &Report) -> Vec<(&str, &str, &Profile)> {
    report
        .results
        .iter()
        .filter(|r| !r.profile.is_empty())
        .filter_map(|r| {
            let id = id_of_file(&r.profile)?;
            Some((id, r.profile.as_str(), r.profile_data.as_ref()?))
        })
        .collect()
}

/// report.md's list of the profiled scenarios: id, charged instructions and the two files.
/// From the results alone, so a merged report lists what the unsharded one does.
pub fn table(report: &Report) -> Option<super::Table> {
    let ids = scenario_ids(&report.results);
    let mut table = super::Table::new(
        ["scenario", "charged instructions", "profile", "flame graph"]
            .map(String::from)
            .to_vec(),
    );
    let mut any = false;
    for (r, id) in report.results.iter().zip(&ids) {
        if r.profile.is_empty() {
            continue;
        }
        any = true;
        let svg = r.profile.replace(".folded", ".svg");
        table.push(vec![
            format!("`{id}`"),
            super::format::thousands(r.instructions),
            format!("[{}]({})", r.profile, r.profile),
            format!("[{svg}]({svg})"),
        ]);
    }
    any.then_some(table)
}

/// The profile's stacks as folded-stack lines.
fn stacks_of(profile: &Profile) -> Vec<(Vec<String>, u64)> {
    profile
        .stacks()
        .into_iter()
        .map(|(stack, n)| (stack.into_iter().map(String::from).collect(), n))
        .collect()
}

/// The functions that spent the most of `profile` themselves, as a table.
pub fn top_functions(profile: &Profile, top: usize) -> String {
    super::flame::Folded::new(stacks_of(profile)).top_table(top)
}

/// `profile` as folded stacks and as a flame graph titled `title` and its total. Nothing to
/// draw (a canbench bench that never read the counter): an empty folded text, and a graph
/// that says so rather than none.
fn render(title: &str, profile: &Profile) -> Result<(String, String), String> {
    if profile.total() > 0 {
        let folded = super::flame::Folded::new(stacks_of(profile));
        return Ok((folded.to_text(), folded.flame_graph(title)?));
    }
    let note = format!(
        "<?xml version=\"1.0\" standalone=\"no\"?>\n<svg version=\"1.1\" width=\"1200\" height=\"60\" xmlns=\"http://www.w3.org/2000/svg\"><text x=\"600\" y=\"30\" text-anchor=\"middle\" font-family=\"Verdana\" font-size=\"14\">{}: no instructions measured</text></svg>\n",
        escape_xml(title)
    );
    Ok((String::new(), note))
}

fn escape_xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Writes `profile` as `STEM.folded` and its flame graph `STEM.svg` (titled `title` and its
/// total), creating the directory; returns both paths.
pub fn write_profile(stem: &Path, title: &str, profile: &Profile) -> Result<[PathBuf; 2], String> {
    let (folded_text, svg_text) = render(title, profile)?;
    // Appended, not replacing what follows a dot: `List.split-100` is a name, not an extension.
    let with = |ext: &str| {
        let mut path = stem.as_os_str().to_owned();
        path.push(format!(".{ext}"));
        PathBuf::from(path)
    };
    let (folded, svg) = (with("folded"), with("svg"));
    if let Some(dir) = stem.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    for (path, text) in [(&folded, folded_text), (&svg, svg_text)] {
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok([folded, svg])
}

/// The files of each kept profile under `dir` (the folded stacks and the flame graph beside
/// them) as (path, text), their directories created: the report writes them with its other
/// files, all renamed into place together.
pub fn files(report: &Report, dir: &Path) -> std::io::Result<Vec<(PathBuf, String)>> {
    let mut files = Vec::new();
    for (id, file, profile) in kept(report) {
        let folded = dir.join(file);
        if let Some(parent) = folded.parent() {
            crate::interrupt::create_dir_all(parent)?;
        }
        let (folded_text, svg_text) = render(id, profile).map_err(std::io::Error::other)?;
        let svg = folded.with_extension("svg");
        files.push((folded, folded_text));
        files.push((svg, svg_text));
    }
    let page_charge = super::tracker_page_charge(report.host());
    for (id, file, map) in page_maps(report) {
        files.push((dir.join(file), super::page_map::svg(id, map, page_charge)));
    }
    Ok(files)
}

/// The page maps of the kept profiles, as (id, file relative to the run's directory:
/// `profiles/ID.pages.svg`, map).
pub fn page_maps(report: &Report) -> Vec<(&str, String, &PageMap)> {
    report
        .results
        .iter()
        .filter_map(|r| {
            let id = id_of_file(&r.profile)?;
            Some((id, page_map_file(&r.profile), r.page_map_data.as_ref()?))
        })
        .collect()
}

/// The page map's file beside a profile's (`profiles/ID.folded` → `profiles/ID.pages.svg`).
pub fn page_map_file(profile: &str) -> String {
    format!("{}.pages.svg", profile.trim_end_matches(".folded"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{fixture, ScenarioResult};

    #[test]
    fn a_pattern_is_the_whole_id_with_stars_for_any_text() {
        let id = "sqlite-wal/middle/insert/1";
        for yes in [
            id,
            "*",
            "sqlite-wal/*",
            "*/insert/1",
            "sqlite-*/middle/*/1",
            "**",
        ] {
            assert!(matches(yes, id), "{yes}");
        }
        for no in [
            "sqlite-wal/middle/insert/10",
            "sqlite-wal",
            "*/insert/10",
            "btree/*",
            "sqlite-wal/*/1/*/insert",
            "",
        ] {
            assert!(!matches(no, id), "{no}");
        }
    }

    #[test]
    fn a_profiles_files_are_its_name_with_an_extension_after_any_dot() {
        let dir = crate::engine::testing::fresh_temp_dir("profiles", "dots");
        let mut profile = Profile::new();
        profile.add_profile(&["f"], &Profile::new());
        let [a, _] = write_profile(&dir.join("List.split-100"), "t", &profile).unwrap();
        let [b, svg] = write_profile(&dir.join("List.all-100"), "t", &profile).unwrap();
        assert_eq!(a, dir.join("List.split-100.folded"));
        assert_eq!(
            (b, svg),
            (
                dir.join("List.all-100.folded"),
                dir.join("List.all-100.svg")
            )
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn select_keeps_the_matching_profiles_and_names_their_files() {
        let mut report = fixture::report(vec![
            fixture::result("btree", "", "middle", "insert", 1, 50_000),
            fixture::result("sqlite", "WAL", "middle", "insert", 1, 500_000),
            fixture::result("sqlite", "OFF", "middle", "insert", 1, 180_000),
            fixture::result("sqlite", "OFF", "end", "insert", 10, 200_000),
        ]);
        let mut p = Profile::new();
        p.add(&["main"], 5);
        for r in &mut report.results {
            r.profile_data = Some(p.clone());
        }
        let ids = scenario_ids(&report.results);
        assert_eq!(
            ids,
            [
                "btree/middle/insert/1",
                "sqlite-wal/middle/insert/1",
                "sqlite-off/middle/insert/1",
                "sqlite-off/end/insert/10"
            ]
        );
        let pattern = "sqlite-*/middle/*";
        let selected = select(&mut report, pattern);
        let expected = ids.iter().filter(|id| matches(pattern, id)).count();
        assert!(expected > 0 && expected < ids.len());
        assert_eq!(
            selected,
            Selected {
                matched: expected,
                kept: expected
            }
        );
        for (r, id) in report.results.iter().zip(&ids) {
            if matches(pattern, id) {
                assert_eq!(r.profile, format!("profiles/{id}.folded"));
                assert!(r.profile_data.is_some());
            } else {
                assert_eq!(r.profile, "");
                assert!(r.profile_data.is_none());
            }
        }
        assert_eq!(select(&mut report, "nothing/*"), Selected::default());
        let err = no_match("nothing/*", &ids);
        assert!(err.contains("matches no scenario; the ids are: "), "{err}");
        assert!(err.contains(&ids[0]), "{err}");
    }

    #[test]
    fn ids_shared_by_several_results_take_their_rows_then_a_number() {
        let at = |rows: u64| ScenarioResult {
            rows_before: rows,
            ..fixture::result("btree", "", "middle", "insert", 1, 50_000)
        };
        let results = vec![at(1_000), at(2_000), at(2_000), {
            let mut r = at(1_000);
            r.position = "Fits Batch".into();
            r
        }];
        assert_eq!(
            scenario_ids(&results),
            [
                "btree/middle/insert/1@1000",
                "btree/middle/insert/1@2000#1",
                "btree/middle/insert/1@2000#2",
                "btree/fits-batch/insert/1"
            ]
        );
    }
}

//! Comma-separated list flags (`--stores`, `--journal-modes`, `--batches`, `--suite`, the
//! tune lists, every suite's): a value given twice would be measured twice and written twice
//! into results.csv, so it is refused, in one place for every flag of every command, before
//! any work (tests/it/inputs.rs runs the binary on each kind of list).

use clap::parser::ValueSource;
use clap::{Arg, ArgMatches, Command};

/// The first value given twice to a list flag of `cmd` (or of the subcommand `matches`
/// ran), as a one-line error.
pub(crate) fn refuse_repeated(cmd: &Command, matches: &ArgMatches) -> Result<(), String> {
    for arg in cmd.get_arguments() {
        if arg.get_value_delimiter().is_none()
            || matches.value_source(arg.get_id().as_str()) != Some(ValueSource::CommandLine)
        {
            continue;
        }
        let Some(raw) = matches.get_raw(arg.get_id().as_str()) else {
            continue;
        };
        let values: Vec<String> = raw.map(|v| v.to_string_lossy().into_owned()).collect();
        if let Some(repeated) = first_repeated(arg, &values) {
            let flag = arg
                .get_long()
                .map_or_else(|| arg.get_id().to_string(), |l| format!("--{l}"));
            return Err(format!(
                "{flag} {}: {repeated} is given twice; each value is run once, so name it once",
                values.join(",")
            ));
        }
    }
    match matches.subcommand() {
        Some((name, sub)) => match cmd.find_subcommand(name) {
            Some(sub_cmd) => refuse_repeated(sub_cmd, sub),
            None => Ok(()),
        },
        None => Ok(()),
    }
}

/// The first of `values` that means the same as an earlier one: the same possible value
/// (by name or alias, in any case where the flag ignores case), the same number, or the same
/// text up to ASCII case (no list here tells values apart by case alone).
fn first_repeated<'a>(arg: &Arg, values: &'a [String]) -> Option<&'a str> {
    let possible = arg.get_possible_values();
    let ignore_case = arg.is_ignore_case_set();
    let canonical = |v: &str| -> String {
        let v = v.trim();
        if let Some(p) = possible.iter().find(|p| p.matches(v, ignore_case)) {
            return p.get_name().to_string();
        }
        match v.parse::<i128>() {
            Ok(n) => n.to_string(),
            Err(_) => v.to_ascii_lowercase(),
        }
    };
    let mut seen = std::collections::HashSet::new();
    values
        .iter()
        .find(|v| !seen.insert(canonical(v)))
        .map(String::as_str)
}

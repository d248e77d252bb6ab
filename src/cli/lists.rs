//! Comma-separated list flags (`--stores`, `--journal-modes`, `--batches`, `--suite`, the
//! tune lists, every suite's): a value given twice would be measured twice and written twice
//! into results.csv, so it is refused, in one place for every flag of every command, before
//! any work.

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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{ArgAction, ValueEnum};

    #[derive(Clone, Copy, ValueEnum)]
    enum Mode {
        Wal,
        #[value(alias = "del")]
        Delete,
    }

    fn cli() -> Command {
        Command::new("t")
            .arg(
                Arg::new("modes")
                    .long("modes")
                    .value_delimiter(',')
                    .ignore_case(true)
                    .action(ArgAction::Append)
                    .value_parser(clap::value_parser!(Mode)),
            )
            .arg(
                Arg::new("sizes")
                    .long("sizes")
                    .value_delimiter(',')
                    .action(ArgAction::Append)
                    .value_parser(clap::value_parser!(u64))
                    .default_values(["1", "1"]),
            )
            .arg(Arg::new("one").long("one"))
            .subcommand(
                Command::new("sub").arg(
                    Arg::new("names")
                        .long("names")
                        .value_delimiter(',')
                        .action(ArgAction::Append),
                ),
            )
    }

    fn check(args: &[&str]) -> Result<(), String> {
        let cmd = cli();
        let matches = cmd.clone().try_get_matches_from(args).unwrap();
        refuse_repeated(&cmd, &matches)
    }

    #[test]
    fn a_value_named_twice_in_any_spelling_is_refused_and_distinct_values_pass() {
        assert_eq!(check(&["t", "--modes", "wal,delete"]), Ok(()));
        assert_eq!(
            check(&["t", "--modes", "wal,WAL"]),
            Err(
                "--modes wal,WAL: WAL is given twice; each value is run once, so name it once"
                    .into()
            )
        );
        // An alias is its value; a second occurrence of the flag adds to the same list.
        assert!(check(&["t", "--modes", "delete", "--modes", "del"]).is_err());
        assert!(check(&["t", "--sizes", "10,010"])
            .unwrap_err()
            .contains("010"));
        assert_eq!(check(&["t", "--sizes", "10,100"]), Ok(()));
        // Defaults are not the user's to repeat.
        assert_eq!(check(&["t"]), Ok(()));
        assert!(check(&["t", "sub", "--names", "a,b,A"])
            .unwrap_err()
            .starts_with("--names a,b,A: A is given twice"));
        assert_eq!(check(&["t", "sub", "--names", "a,b"]), Ok(()));
    }
}

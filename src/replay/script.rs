//! A replay's steps: `--call`s and a script file, one step a line.
//!
//! ```text
//! # a comment
//! add_user ("alice", 42)          # an update, or a query if the module exports it as one
//! query get_user (42)
//! 100 x update add_user ("bob", 7) # 100 times: mean, median, p99 and max
//! caller aaaaa-aa                 # who sends the calls from here on (`anonymous`)
//! advance 90s                     # the clock; then a round: the timer and heartbeat
//! tick                            # a round at the current time
//! upgrade new.wasm (record {})    # an upgrade with its argument
//! reply ryjl3-tyaaa-aaaaa-aaaba-cai account_balance (record { e8s = 5 : nat64 })
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use candid::Principal;

use super::interface::CallKind;

#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    Call {
        kind: Option<CallKind>,
        method: String,
        /// Candid text, as written.
        args: String,
        times: u32,
    },
    /// None: the anonymous principal.
    Caller(Option<Principal>),
    Advance(Duration),
    Tick,
    Upgrade {
        wasm: PathBuf,
        args: String,
    },
    /// What calls to `method` of `callee`, a canister not in the replay, are answered with
    /// from here on (candid text), in place of the reject for an absent canister.
    Reply {
        callee: Principal,
        method: String,
        args: String,
    },
}

/// A step and where it was written (`script.txt:3`, `--call 2`).
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub at: String,
    pub step: Step,
}

/// The most times one line may repeat its call.
pub const MAX_TIMES: u32 = 100_000;

/// The steps of a script file; an error names the line. Paths in it are relative to its
/// directory.
pub fn read(path: &Path) -> Result<Vec<Line>> {
    let text = std::fs::read_to_string(path).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    let base = path.parent().unwrap_or(Path::new(""));
    let mut lines = Vec::new();
    for (i, text) in text.lines().enumerate() {
        let at = format!("{}:{}", path.display(), i + 1);
        if let Some(step) = parse(text, base).map_err(|e| anyhow!("{at}: {e}"))? {
            lines.push(Line { at, step });
        }
    }
    Ok(lines)
}

/// One line: a step, or None for a blank line or a comment.
pub fn parse(line: &str, base: &Path) -> Result<Option<Step>> {
    let line = strip_comment(line).trim();
    if line.is_empty() {
        return Ok(None);
    }
    let (word, rest) = split_word(line);
    let step = match word {
        "caller" => Step::Caller(match rest.trim() {
            "" => bail!("caller needs a principal (or `anonymous`)"),
            "anonymous" => None,
            p => Some(Principal::from_text(p).map_err(|e| anyhow!("{p} is not a principal: {e}"))?),
        }),
        "advance" => Step::Advance(duration(rest.trim())?),
        "tick" if rest.trim().is_empty() => Step::Tick,
        "reply" => {
            let (callee, rest) = split_word(rest);
            let (method, args) = split_word(rest);
            if method.is_empty() {
                bail!("reply needs a canister, its method and the reply: `reply CANISTER METHOD (ARGS)`");
            }
            Step::Reply {
                callee: Principal::from_text(callee)
                    .map_err(|e| anyhow!("{callee} is not a principal: {e}"))?,
                method: method.to_string(),
                args: args.trim().to_string(),
            }
        }
        "upgrade" => {
            let rest = rest.trim();
            if rest.is_empty() {
                bail!("upgrade needs the new module's file");
            }
            let (file, args) = split_word(rest);
            Step::Upgrade {
                wasm: base.join(file),
                args: args.trim().to_string(),
            }
        }
        _ => call(line)?,
    };
    Ok(Some(step))
}

/// `[N x] [query|update] METHOD [ARGS]`.
fn call(line: &str) -> Result<Step> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (first, rest) = split_word(line);
    let (times, line) = match first.strip_suffix('x') {
        Some(n) if digits(n) => (Some(n), rest),
        _ if digits(first) => match split_word(rest) {
            ("x", rest) => (Some(first), rest),
            _ => bail!("{line}: a repeated call is written `N x METHOD (ARGS)`"),
        },
        _ => (None, line),
    };
    let times = match times.map(str::parse::<u32>) {
        None => 1,
        Some(Ok(n)) if (1..=MAX_TIMES).contains(&n) => n,
        Some(_) => bail!(
            "{} x: a call repeats 1 to {MAX_TIMES} times",
            times.unwrap_or_default()
        ),
    };
    let (mut word, mut rest) = split_word(line);
    let kind = match word {
        "query" => Some(CallKind::Query),
        "update" => Some(CallKind::Update),
        _ => None,
    };
    if kind.is_some() {
        (word, rest) = split_word(rest);
    }
    if word.is_empty() {
        bail!("a call needs a method name");
    }
    if !word.chars().all(|c| c.is_alphanumeric() || c == '_') {
        bail!("{word} is not a step (a method name, caller, advance, tick, upgrade or reply)");
    }
    Ok(Step::Call {
        kind,
        method: word.to_string(),
        args: rest.trim().to_string(),
        times,
    })
}

fn split_word(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    match s.find(|c: char| c.is_whitespace() || c == '(') {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    }
}

/// The line up to a `#` that is not inside a candid string.
fn strip_comment(line: &str) -> &str {
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            '#' if !in_string => return &line[..i],
            _ => {}
        }
    }
    line
}

/// `90s`, `5m`, `250ms`, `2h`, `1d`, `1000ns`, `10us`.
pub fn duration(text: &str) -> Result<Duration> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (n, unit) = text.split_at(split);
    let n: u64 = n
        .parse()
        .map_err(|_| anyhow!("advance needs a duration such as 90s, 5m or 250ms, not `{text}`"))?;
    let ns_per = match unit {
        "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        _ => bail!("advance: unknown unit `{unit}` in `{text}` (ns, us, ms, s, m, h, d)"),
    };
    let ns = n
        .checked_mul(ns_per)
        .ok_or_else(|| anyhow!("advance {text}: too long"))?;
    Ok(Duration::from_nanos(ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(line: &str) -> Step {
        parse(line, Path::new("d")).unwrap().unwrap()
    }

    #[test]
    fn lines_parse_into_steps() {
        let call = |kind, method: &str, args: &str, times| Step::Call {
            kind,
            method: method.into(),
            args: args.into(),
            times,
        };
        assert_eq!(
            step("add (1, \"#x\") # c"),
            call(None, "add", "(1, \"#x\")", 1)
        );
        assert_eq!(step("get_all"), call(None, "get_all", "", 1));
        assert_eq!(
            step("query get(3)"),
            call(Some(CallKind::Query), "get", "(3)", 1)
        );
        assert_eq!(
            step("100 x update add (1)"),
            call(Some(CallKind::Update), "add", "(1)", 100)
        );
        assert_eq!(step("5x add (1)"), call(None, "add", "(1)", 5));
        assert_eq!(step("advance 90s"), Step::Advance(Duration::from_secs(90)));
        assert_eq!(step("tick"), Step::Tick);
        assert_eq!(step("caller anonymous"), Step::Caller(None));
        assert_eq!(
            step("upgrade new.wasm (record {})"),
            Step::Upgrade {
                wasm: Path::new("d").join("new.wasm"),
                args: "(record {})".into()
            }
        );
        assert_eq!(
            step("reply aaaaa-aa raw_rand (blob \"x\")"),
            Step::Reply {
                callee: Principal::management_canister(),
                method: "raw_rand".into(),
                args: "(blob \"x\")".into()
            }
        );
        assert_eq!(parse("  # only a comment", Path::new("")).unwrap(), None);
    }

    #[test]
    fn bad_lines_say_what_is_wrong() {
        for (line, error) in [
            (
                "advance 5 parsecs",
                "advance: unknown unit ` parsecs` in `5 parsecs` (ns, us, ms, s, m, h, d)",
            ),
            (
                "advance soon",
                "advance needs a duration such as 90s, 5m or 250ms, not `soon`",
            ),
            ("0 x add", "0 x: a call repeats 1 to 100000 times"),
            (
                "caller nobody",
                "nobody is not a principal: Text must be in valid Base32 encoding.",
            ),
            ("upgrade", "upgrade needs the new module's file"),
            (
                "add-user (1)",
                "add-user is not a step (a method name, caller, advance, tick, upgrade or reply)",
            ),
            (
                "reply aaaaa-aa",
                "reply needs a canister, its method and the reply: `reply CANISTER METHOD (ARGS)`",
            ),
        ] {
            let got = parse(line, Path::new("")).unwrap_err().to_string();
            assert_eq!(got, error, "{line}");
        }
    }
}

//! The SQLite pragma values that `SqliteConfig` and `SqliteSettings` carry as text: the
//! canister parses, applies and persists them (as one byte each), the host selects journal
//! modes with them and sends their names.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A pragma whose value is one of a few upper-case names; `code` is its persisted byte.
macro_rules! named_values {
    ($(#[$meta:meta])* $name:ident, $pragma:literal {
        $v0:ident = $t0:literal / $c0:literal $(, $variant:ident = $text:literal / $code:literal)* $(,)?
    }) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $(#[$meta])*
        pub enum $name { $v0 $(, $variant)* }

        impl $name {
            pub const PRAGMA: &'static str = $pragma;
            /// Every value, in code order.
            pub const ALL: [$name; [$c0 $(, $code)*].len()] = [$name::$v0 $(, $name::$variant)*];

            /// The name, as SQLite reports it.
            pub fn as_str(self) -> &'static str {
                match self { $name::$v0 => $t0, $($name::$variant => $text),* }
            }

            /// The byte the canister persists.
            pub fn code(self) -> u8 {
                match self { $name::$v0 => $c0, $($name::$variant => $code),* }
            }

            pub fn from_code(code: u8) -> Option<Self> {
                Self::ALL.iter().copied().find(|v| v.code() == code)
            }

            /// Case-insensitive, as SQLite itself.
            pub fn from_name(text: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|v| v.as_str().eq_ignore_ascii_case(text))
            }

            /// The canister's parse (its error is the canister's reply): white space around
            /// the name is ignored.
            pub fn parse(text: &str) -> Result<Self, String> {
                Self::from_name(text.trim()).ok_or_else(|| {
                    let names: Vec<&str> = Self::ALL.iter().map(|v| v.as_str()).collect();
                    format!("unknown {} {:?}: expected one of {}", $pragma, text, names.join(", "))
                })
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

named_values!(
    /// `PRAGMA journal_mode`. In results and on the command line by its upper-case name.
    #[derive(Serialize, Deserialize)]
    #[serde(rename_all = "UPPERCASE")]
    #[cfg_attr(feature = "clap", derive(clap::ValueEnum), value(rename_all = "UPPER"))]
    JournalMode, "journal_mode" {
        Delete = "DELETE" / 0,
        Truncate = "TRUNCATE" / 1,
        Persist = "PERSIST" / 2,
        Memory = "MEMORY" / 3,
        Wal = "WAL" / 4,
        Off = "OFF" / 5,
    }
);

named_values!(
    /// `PRAGMA synchronous`; SQLite reads it back as 0..=3, which is also our code.
    Synchronous, "synchronous" {
        Off = "OFF" / 0,
        Normal = "NORMAL" / 1,
        Full = "FULL" / 2,
        Extra = "EXTRA" / 3,
    }
);

named_values!(
    /// `PRAGMA locking_mode`.
    LockingMode, "locking_mode" {
        Normal = "NORMAL" / 0,
        Exclusive = "EXCLUSIVE" / 1,
    }
);

/// The host's parse (`--journal-modes wal`, results files): case-insensitive, exact.
impl FromStr for JournalMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        JournalMode::from_name(s).ok_or_else(|| {
            format!(
                "unknown journal mode {s:?}; accepted: {}",
                JournalMode::ALL.map(|m| m.as_str()).join(", ")
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_in_any_case_and_codes_round_trip() {
        for m in JournalMode::ALL {
            assert_eq!(m.as_str().to_lowercase().parse::<JournalMode>(), Ok(m));
            assert_eq!(
                JournalMode::parse(&format!(" {} ", m.as_str().to_lowercase())),
                Ok(m)
            );
            assert_eq!(JournalMode::from_code(m.code()), Some(m));
            assert_eq!(m.to_string(), m.as_str());
        }
        for s in Synchronous::ALL {
            assert_eq!(Synchronous::from_code(s.code()), Some(s));
            assert_eq!(Synchronous::parse(s.as_str()), Ok(s));
        }
        for l in LockingMode::ALL {
            assert_eq!(LockingMode::from_code(l.code()), Some(l));
            assert_eq!(LockingMode::parse(l.as_str()), Ok(l));
        }
        assert_eq!(JournalMode::from_code(JournalMode::ALL.len() as u8), None);
    }

    #[test]
    fn the_host_parse_takes_no_white_space_the_canister_parse_does() {
        assert!(" WAL".parse::<JournalMode>().is_err());
        assert_eq!(JournalMode::parse(" WAL\n"), Ok(JournalMode::Wal));
    }

    #[test]
    fn unknown_names_list_what_is_accepted() {
        assert_eq!(
            "journal".parse::<JournalMode>(),
            Err("unknown journal mode \"journal\"; accepted: DELETE, TRUNCATE, PERSIST, MEMORY, WAL, OFF".to_string())
        );
        assert_eq!(
            LockingMode::parse("shared"),
            Err("unknown locking_mode \"shared\": expected one of NORMAL, EXCLUSIVE".to_string())
        );
    }

    #[test]
    fn serde_names_are_the_sqlite_names() {
        use serde::de::IntoDeserializer;
        use serde::de::value::{Error, StrDeserializer};
        for m in JournalMode::ALL {
            let text: StrDeserializer<'_, Error> = m.as_str().into_deserializer();
            assert_eq!(JournalMode::deserialize(text), Ok(m));
        }
    }

    #[cfg(feature = "clap")]
    #[test]
    fn clap_takes_the_same_names_in_any_case() {
        use clap::ValueEnum;
        for m in JournalMode::ALL {
            let value = m.to_possible_value().expect("no variant is skipped");
            assert_eq!(value.get_name(), m.as_str());
            let lower = m.as_str().to_lowercase();
            assert_eq!(<JournalMode as ValueEnum>::from_str(&lower, true), Ok(m));
        }
    }
}

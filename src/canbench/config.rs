//! `canbench.yml`, as canbench reads it: paths relative to the current directory, unknown
//! keys ignored, `wasm_path` required.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;

/// The config file name canbench looks for; `CANBENCH_CFG_FILE` overrides it.
pub const DEFAULT_CONFIG: &str = "canbench.yml";
pub const CONFIG_ENV: &str = "CANBENCH_CFG_FILE";
pub const DEFAULT_RESULTS: &str = "canbench_results.yml";
pub const DEFAULT_CSV_RESULTS: &str = "canbench_results.csv";

#[derive(Debug, Default, PartialEq, Deserialize)]
pub struct Config {
    pub build_cmd: Option<String>,
    pub wasm_path: PathBuf,
    pub results_path: Option<PathBuf>,
    pub csv_results_path: Option<PathBuf>,
    pub init_args: Option<InitArgs>,
    pub stable_memory: Option<StableMemory>,
    pub env_vars: Option<EnvVars>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
pub struct InitArgs {
    pub hex: String,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
pub struct StableMemory {
    pub file: PathBuf,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
pub struct EnvVars {
    pub file: PathBuf,
}

impl Config {
    pub fn parse(text: &str, name: &Path) -> Result<Config> {
        yaml_serde::from_str(text)
            .map_err(|e| anyhow!("invalid config file {}: {e}", name.display()))
    }

    /// Reads the config at `path`, or the default name (`CANBENCH_CFG_FILE` or
    /// `canbench.yml`, in the current directory) when none is given.
    pub fn load(path: Option<&Path>) -> Result<(PathBuf, Config)> {
        let path = match path {
            Some(p) => p.to_path_buf(),
            None => PathBuf::from(
                std::env::var(CONFIG_ENV).unwrap_or_else(|_| DEFAULT_CONFIG.to_string()),
            ),
        };
        if !path.is_file() {
            bail!("configuration file not found: '{}'", path.display());
        }
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading config file {}", path.display()))?;
        let config = Config::parse(&text, &path)?;
        Ok((path, config))
    }
}

/// The install argument: hex-decoded raw bytes, passed verbatim (no Candid encoding).
pub fn decode_init_args(hex_text: &str) -> Result<Vec<u8>> {
    hex::decode(hex_text).map_err(|e| anyhow!("invalid init_args hex value {hex_text:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_config_parses_and_ignores_unknown_keys() {
        let c = Config::parse(
            "build_cmd: make\nwasm_path: ./a.wasm.gz\nresults_path: r.yml\ncsv_results_path: r.csv\n\
             init_args:\n  hex: 4449444c0000\nstable_memory:\n  file: s.bin\nsomething_new: 1\n",
            Path::new("c.yml"),
        )
        .unwrap();
        assert_eq!(c.build_cmd.as_deref(), Some("make"));
        assert_eq!(c.wasm_path, PathBuf::from("./a.wasm.gz"));
        assert_eq!(c.results_path, Some(PathBuf::from("r.yml")));
        assert_eq!(c.csv_results_path, Some(PathBuf::from("r.csv")));
        assert_eq!(c.init_args.unwrap().hex, "4449444c0000");
        assert_eq!(c.stable_memory.unwrap().file, PathBuf::from("s.bin"));
        assert!(c.env_vars.is_none());
    }

    /// YAML as people write canbench.yml: comments, a `---` start, quoted and flow values, hex
    /// that looks like a number (read as the text written, never as an integer), unknown
    /// nested keys, an alias, `~` for an absent option.
    #[test]
    fn yaml_forms_people_write() {
        let c = Config::parse(
            "# canbench config\n---\nbuild_cmd: &b 'cargo build # not a comment'\n\
             wasm_path: \"./out/a.wasm\"  # trailing comment\n\
             results_path: ~\n\
             init_args: {hex: 00112233}\n\
             env_vars:\n  file: env.csv\n  extra:\n    nested: [1, 2]\n\
             future:\n  key: *b\n",
            Path::new("c.yml"),
        )
        .unwrap();
        assert_eq!(c.build_cmd.as_deref(), Some("cargo build # not a comment"));
        assert_eq!(c.wasm_path, PathBuf::from("./out/a.wasm"));
        assert_eq!(c.results_path, None);
        assert_eq!(c.init_args.unwrap().hex, "00112233");
        assert_eq!(c.env_vars.unwrap().file, PathBuf::from("env.csv"));
        for (hex, read) in [
            ("1234", "1234"),
            ("1e10", "1e10"),
            ("'00'", "00"),
            ("\"\"", ""),
        ] {
            let c = Config::parse(
                &format!("wasm_path: a\ninit_args:\n  hex: {hex}\n"),
                Path::new("c.yml"),
            )
            .unwrap();
            assert_eq!(c.init_args.unwrap().hex, read, "{hex}");
        }
    }

    /// Bad YAML is an error naming the file, the problem and where it is.
    #[test]
    fn bad_yaml_messages() {
        for (text, message) in [
            (
                "wasm_path: [\n",
                "wasm_path: invalid type: sequence, expected path string at line 1 column 12",
            ),
            (
                "wasm_path: a\ninit_args: 5\n",
                "init_args: invalid type: integer `5`, expected struct InitArgs at line 2 column 12",
            ),
            (
                "\twasm_path: a\n",
                "found character that cannot start any token, while scanning for the next token",
            ),
            ("wasm_path: a\nwasm_path: b\n", "duplicate field `wasm_path`"),
            (
                "wasm_path: a\n---\nwasm_path: b\n",
                "deserializing from YAML containing more than one document is not supported",
            ),
            ("", "missing field `wasm_path`"),
        ] {
            let e = Config::parse(text, Path::new("dir/c.yml")).unwrap_err();
            assert_eq!(e.to_string(), format!("invalid config file dir/c.yml: {message}"));
        }
    }

    #[test]
    fn wasm_path_is_required() {
        let e = Config::parse("build_cmd: make\n", Path::new("c.yml")).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("c.yml") && msg.contains("wasm_path"), "{msg}");
    }

    #[test]
    fn init_args_hex() {
        assert_eq!(
            decode_init_args("4449444c0001710568656c6c6f").unwrap(),
            b"DIDL\x00\x01\x71\x05hello"
        );
        assert_eq!(decode_init_args("").unwrap(), Vec::<u8>::new());
        let e = decode_init_args("4449zz").unwrap_err().to_string();
        assert!(
            e.starts_with("invalid init_args hex value \"4449zz\""),
            "{e}"
        );
        assert!(decode_init_args("abc").is_err(), "odd length");
    }

    #[test]
    fn missing_config_file_is_canbench_message() {
        let e = Config::load(Some(Path::new("/nonexistent/canbench.yml"))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "configuration file not found: '/nonexistent/canbench.yml'"
        );
    }
}

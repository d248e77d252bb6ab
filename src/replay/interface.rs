//! A canister's interface as a replay types its calls by: the methods its module exports
//! and, where the module carries it (the `candid:service` metadata dfx and moc embed), their
//! candid types. Arguments are candid text, as `dfx canister call` takes them.

use anyhow::{anyhow, bail, Result};
use candid::types::{Function, Type, TypeInner};
use candid::{IDLArgs, TypeEnv};

use crate::engine::embedded::{check_module, decompress, metadata};

/// How a method is called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallKind {
    Update,
    Query,
}

impl CallKind {
    pub fn name(self) -> &'static str {
        match self {
            CallKind::Update => "update",
            CallKind::Query => "query",
        }
    }
}

pub struct Interface {
    /// `canister_update NAME`, `canister_query NAME`, ... as exported.
    exports: Vec<String>,
    /// The candid service, when the module carries one.
    service: Option<(TypeEnv, Type)>,
}

impl Interface {
    /// The interface of `wasm` (raw or gzipped); an error names what is wrong with it.
    pub fn of(wasm: &[u8]) -> Result<Interface> {
        let exports = check_module(wasm)?;
        let raw = decompress(wasm)?;
        let service = match metadata(&raw, "candid:service") {
            None => None,
            Some(bytes) => {
                let text = std::str::from_utf8(bytes)
                    .map_err(|_| anyhow!("the module's candid:service metadata is not UTF-8"))?;
                let prog: candid_parser::IDLProg = text.parse().map_err(|e| {
                    anyhow!("the module's candid:service metadata does not parse: {e}")
                })?;
                let mut env = TypeEnv::new();
                let actor = candid_parser::check_prog(&mut env, &prog).map_err(|e| {
                    anyhow!("the module's candid:service metadata does not type-check: {e}")
                })?;
                actor.map(|actor| (env, actor))
            }
        };
        Ok(Interface { exports, service })
    }

    fn exported(&self, kind: &str, method: &str) -> bool {
        self.exports
            .iter()
            .any(|e| e.strip_prefix(kind).and_then(|r| r.strip_prefix(' ')) == Some(method))
    }

    /// How `method` is called when the step does not say: as a query if the module exports
    /// it as one, else as an update (dfx's default). An error for a method it does not export.
    pub fn kind(&self, method: &str, asked: Option<CallKind>) -> Result<CallKind> {
        let update = self.exported("canister_update", method);
        let query = self.exported("canister_query", method)
            || self.exported("canister_composite_query", method);
        match (asked, update, query) {
            (_, false, false) => {
                let mut known: Vec<&str> = self
                    .exports
                    .iter()
                    .filter_map(|e| {
                        [
                            "canister_update ",
                            "canister_query ",
                            "canister_composite_query ",
                        ]
                        .iter()
                        .find_map(|p| e.strip_prefix(p))
                    })
                    .collect();
                known.sort_unstable();
                bail!(
                    "unknown method {method}: the module exports {}",
                    known.join(", ")
                )
            }
            (Some(CallKind::Query), true, false) => {
                bail!("{method} is an update method: it cannot be called as a query")
            }
            (Some(kind), _, _) => Ok(kind),
            (None, _, true) => Ok(CallKind::Query),
            (None, _, false) => Ok(CallKind::Update),
        }
    }

    fn method(&self, method: &str) -> Option<(&TypeEnv, &Function)> {
        let (env, actor) = self.service.as_ref()?;
        let (_, ty) = env
            .as_service(actor)
            .ok()?
            .iter()
            .find(|(m, _)| m == method)?;
        env.as_func(ty).ok().map(|f| (env, f))
    }

    /// The candid bytes of `args` (candid text) for `method`, typed against its service
    /// where the module has one: an error for text that does not parse or type-check.
    pub fn encode(&self, method: &str, args: &str) -> Result<Vec<u8>> {
        let parsed = parse_args(args)?;
        match self.method(method) {
            Some((env, f)) => parsed
                .annotate_types(true, env, &f.args)
                .and_then(|a| a.to_bytes_with_types(env, &f.args))
                .map_err(|e| anyhow!("{args} does not type-check against {method} : {f}: {e}")),
            None => parsed.to_bytes().map_err(|e| anyhow!("{args}: {e}")),
        }
    }

    /// The candid bytes of an install's or upgrade's argument: typed by the service's
    /// init arguments where the module declares them (`service : (Init) -> {...}`).
    pub fn encode_init(&self, args: &str) -> Result<Vec<u8>> {
        let parsed = parse_args(args)?;
        let init = self
            .service
            .as_ref()
            .and_then(|(env, actor)| match actor.as_ref() {
                TypeInner::Class(init, _) => Some((env, init)),
                _ => None,
            });
        match init {
            Some((env, types)) => parsed
                .annotate_types(true, env, types)
                .and_then(|a| a.to_bytes_with_types(env, types))
                .map_err(|e| anyhow!("{args} does not type-check against the init arguments: {e}")),
            None => parsed.to_bytes().map_err(|e| anyhow!("{args}: {e}")),
        }
    }

    /// A reply as candid text, typed by `method`'s results where the service gives them.
    pub fn decode(&self, method: &str, bytes: &[u8]) -> String {
        let decoded = match self.method(method) {
            Some((env, f)) => IDLArgs::from_bytes_with_types(bytes, env, &f.rets),
            None => IDLArgs::from_bytes(bytes),
        };
        match decoded {
            Ok(args) => args.to_string(),
            Err(_) => format!("blob \"{}\" (not candid)", hex::encode(bytes)),
        }
    }
}

/// Candid text as `dfx canister call` takes it: a tuple `(…)`, or one value without the
/// parentheses; empty: no arguments.
pub fn parse_args(text: &str) -> Result<IDLArgs> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(IDLArgs::new(&[]));
    }
    candid_parser::parse_idl_args(text)
        .or_else(|e| candid_parser::parse_idl_args(&format!("({text})")).map_err(|_| e))
        .map_err(|e| anyhow!("{text} is not candid: {}", one_line(&e.to_string())))
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

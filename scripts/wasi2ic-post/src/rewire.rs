//! WASI → IC: ic-wasi-polyfill compiles an implementation of every WASI function into the
//! module and exports it as `__ic_custom_<name>`. The IC offers no WASI imports, so each
//! call to an imported WASI function is pointed at that implementation and the imports
//! are dropped. This is what wasi2ic does; we do it on walrus directly to keep binaryen
//! (pulled in by wasi2ic's ic-wasm dependency) out of the build.

use std::collections::HashMap;

use anyhow::{bail, Result};
use walrus::ir::VisitorMut;
use walrus::{ConstExpr, ElementItems, ExportItem, FunctionId, ImportKind, Module};

/// The WASI module names the polyfill implements.
const WASI_MODULES: [&str; 2] = ["wasi_snapshot_preview1", "wasi_unstable"];
const POLYFILL_PREFIX: &str = "__ic_custom_";

/// Rewires every WASI import to its polyfill implementation. Returns how many imports
/// were rewired; an import with no implementation, or one whose type differs, is an error
/// naming it (a silent leftover would make the replica refuse the module).
pub fn rewire_wasi(module: &mut Module) -> Result<usize> {
    let replacements = replacements(module)?;
    if replacements.is_empty() {
        return Ok(0);
    }
    let mut remap = Remap(&replacements);
    for (_, func) in module.funcs.iter_local_mut() {
        let entry = func.entry_block();
        walrus::ir::dfs_pre_order_mut(&mut remap, func, entry);
    }
    for elem in module.elements.iter_mut() {
        match &mut elem.items {
            ElementItems::Functions(ids) => ids.iter_mut().for_each(|id| remap.apply(id)),
            ElementItems::Expressions(_, exprs) => {
                for expr in exprs {
                    if let ConstExpr::RefFunc(id) = expr {
                        remap.apply(id);
                    }
                }
            }
        }
    }
    let globals: Vec<_> = module.globals.iter().map(|g| g.id()).collect();
    for global in globals {
        if let walrus::GlobalKind::Local(ConstExpr::RefFunc(id)) =
            &mut module.globals.get_mut(global).kind
        {
            remap.apply(id);
        }
    }
    run_initialize_as_start(module);
    // Drops the now-unreferenced WASI imports (and anything only they kept alive).
    walrus::passes::gc::run(module);
    Ok(replacements.len())
}

/// Imports the IC does not provide, as `module.name`.
pub fn foreign_imports(module: &Module) -> Vec<String> {
    module
        .imports
        .iter()
        .filter(|imp| imp.module != "ic0")
        .map(|imp| format!("{}.{}", imp.module, imp.name))
        .collect()
}

fn replacements(module: &Module) -> Result<HashMap<FunctionId, FunctionId>> {
    let exported: HashMap<&str, FunctionId> = module
        .exports
        .iter()
        .filter_map(|e| match e.item {
            ExportItem::Function(f) => Some((e.name.as_str(), f)),
            _ => None,
        })
        .collect();
    let mut map = HashMap::new();
    let mut missing = Vec::new();
    for imp in module.imports.iter() {
        let ImportKind::Function(import_fn) = imp.kind else {
            continue;
        };
        if !WASI_MODULES.contains(&imp.module.as_str()) {
            continue;
        }
        let wanted = format!("{POLYFILL_PREFIX}{}", imp.name);
        // By name first (the name section survives a release build), then by export.
        let found = module
            .funcs
            .by_name(&wanted)
            .or_else(|| exported.get(wanted.as_str()).copied());
        let Some(implementation) = found else {
            missing.push(format!("{}.{}", imp.module, imp.name));
            continue;
        };
        let (want_ty, have_ty) = (
            module.funcs.get(import_fn).ty(),
            module.funcs.get(implementation).ty(),
        );
        if want_ty != have_ty {
            bail!(
                "{wanted} does not have the type of the import {}.{}",
                imp.module,
                imp.name
            );
        }
        map.insert(import_fn, implementation);
    }
    if !missing.is_empty() {
        bail!(
            "no ic-wasi-polyfill implementation ({POLYFILL_PREFIX}NAME) for: {}; is \
             ic-wasi-polyfill linked in?",
            missing.join(", ")
        );
    }
    Ok(map)
}

/// A WASI reactor initialises itself in `_initialize` (static constructors); on the IC
/// that must happen when the module is instantiated, so it becomes the start function
/// and stops being an export the replica would not understand.
fn run_initialize_as_start(module: &mut Module) {
    let Some(init) = module.funcs.by_name("_initialize").or_else(|| {
        module.exports.iter().find_map(|e| match e.item {
            ExportItem::Function(f) if e.name == "_initialize" => Some(f),
            _ => None,
        })
    }) else {
        return;
    };
    if module.start.is_none() {
        module.start = Some(init);
    }
    let export = module
        .exports
        .iter()
        .find(|e| e.name == "_initialize")
        .map(|e| e.id());
    if let Some(id) = export {
        module.exports.delete(id);
    }
}

struct Remap<'a>(&'a HashMap<FunctionId, FunctionId>);

impl Remap<'_> {
    fn apply(&self, id: &mut FunctionId) {
        if let Some(new) = self.0.get(id) {
            *id = *new;
        }
    }
}

impl VisitorMut for Remap<'_> {
    fn visit_function_id_mut(&mut self, function: &mut FunctionId) {
        self.apply(function);
    }
}

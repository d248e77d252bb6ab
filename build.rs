//! `cfg(pocket_ic_server)` when POCKET_IC_BIN is set, so the PocketIC contract tests run
//! then and are reported as ignored (with the reason) otherwise.

fn main() {
    println!("cargo::rerun-if-env-changed=POCKET_IC_BIN");
    println!("cargo::rustc-check-cfg=cfg(pocket_ic_server)");
    if std::env::var_os("POCKET_IC_BIN").is_some_and(|v| !v.is_empty()) {
        println!("cargo::rustc-cfg=pocket_ic_server");
    }
}

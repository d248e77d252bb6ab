//! wasi2ic-post IN OUT [--did FILE] [--no-rewire]: the converter on its own (see lib.rs), for
//! scripts/build-canister.sh when no icbench binary is at hand.

fn main() -> std::process::ExitCode {
    wasi2ic_post::main_with_args(std::env::args_os().skip(1))
}

//! Plain wasmtime, the benches' baseline: a workload's `work` export on an instance whose
//! imports do nothing (the reply calls always, any others as the caller links them).

/// The store and `work: () -> i64` of `wasm` instantiated on `engine`; `link` adds the
/// no-op imports beyond `ic0.msg_reply_data_append` and `ic0.msg_reply`.
pub fn instantiate_work(
    engine: &wasmtime::Engine,
    wasm: &[u8],
    link: impl FnOnce(&mut wasmtime::Linker<()>),
) -> (wasmtime::Store<()>, wasmtime::TypedFunc<(), i64>) {
    let module = wasmtime::Module::new(engine, wasm).expect("the workload compiles");
    let mut linker = wasmtime::Linker::new(engine);
    let ok = "a no-op import links";
    linker
        .func_wrap("ic0", "msg_reply_data_append", |_: i32, _: i32| {})
        .expect(ok);
    linker.func_wrap("ic0", "msg_reply", || {}).expect(ok);
    link(&mut linker);
    let mut store = wasmtime::Store::new(engine, ());
    let instance = linker
        .instantiate(&mut store, &module)
        .expect("the workload instantiates");
    let work = instance
        .get_typed_func::<(), i64>(&mut store, "work")
        .expect("work: () -> i64");
    (store, work)
}

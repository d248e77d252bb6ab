//! Calls to canisters: a call assembled (`call_new`, `call_data_append`, `call_on_cleanup`,
//! `call_cycles_add*`, of no cycles) and sent with `call_perform`, and a response's reject as a reject
//! callback reads it. The engine delivers the calls an update message sent once it has
//! committed ([`crate::embedded::EmbeddedEngine`]'s call tree); a system task's calls
//! it cannot deliver, so they trap there as before.

use wasmtime::{Error, Result};

use super::heap_access::{define_copy, read_heap};
use super::registration::{charge, require, violation, Addr, Def, C};
use super::{ApiType, HostTrap};

/// A function in the module's table and the value it is called with (the replica's
/// `WasmClosure`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Closure {
    pub func: u32,
    pub env: u64,
}

/// A call the message assembled or sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutCall {
    pub callee: Vec<u8>,
    pub method: String,
    pub arg: Vec<u8>,
    pub on_reply: Closure,
    pub on_reject: Closure,
    pub on_cleanup: Option<Closure>,
}

/// Defines `d` if it is one of the calls' functions; says whether it was.
pub(super) fn define<A: Addr>(d: &mut Def<'_>) -> Result<bool> {
    let f = d.fee;
    match d.name {
        "call_new" => d.define(
            move |c: &mut C<'_>,
                  callee_src: A,
                  callee_size: A,
                  name_src: A,
                  name_size: A,
                  reply_fun: A,
                  reply_env: A,
                  reject_fun: A,
                  reject_env: A|
                  -> Result<()> {
                charge(c, f.charge(callee_size.get() + name_size.get()))?;
                may_call(c, "call_new")?;
                let callee = read_heap(c, "call_new", callee_src.get(), callee_size.get())?;
                let name = read_heap(c, "call_new", name_src.get(), name_size.get())?;
                let method = String::from_utf8(name)
                    .map_err(|_| violation("ic0.call_new: the method name is not UTF-8".into()))?;
                // A call still being assembled is discarded.
                c.data_mut().msg.building = Some(OutCall {
                    callee,
                    method,
                    arg: Vec::new(),
                    on_reply: closure(reply_fun, reply_env),
                    on_reject: closure(reject_fun, reject_env),
                    on_cleanup: None,
                });
                Ok(())
            },
        )?,
        "call_data_append" => d.define(move |c: &mut C<'_>, src: A, size: A| -> Result<()> {
            charge(c, f.charge(size.get()))?;
            building(c, "call_data_append")?;
            let bytes = read_heap(c, "call_data_append", src.get(), size.get())?;
            if let Some(call) = &mut c.data_mut().msg.building {
                call.arg.extend_from_slice(&bytes);
            }
            Ok(())
        })?,
        "call_on_cleanup" => d.define(move |c: &mut C<'_>, fun: A, env: A| -> Result<()> {
            charge(c, f.base)?;
            let call = building(c, "call_on_cleanup")?;
            if call.on_cleanup.is_some() {
                return Err(violation(
                    "ic0.call_on_cleanup: the cleanup closure is already set".into(),
                ));
            }
            call.on_cleanup = Some(closure(fun, env));
            Ok(())
        })?,
        "call_cycles_add" => d.define(move |c: &mut C<'_>, amount: i64| -> Result<()> {
            charge(c, f.base)?;
            add_cycles(c, "call_cycles_add", amount as u64 as u128)
        })?,
        "call_cycles_add128" => {
            d.define(move |c: &mut C<'_>, high: i64, low: i64| -> Result<()> {
                charge(c, f.base)?;
                let amount = ((high as u64 as u128) << 64) | low as u64 as u128;
                add_cycles(c, "call_cycles_add128", amount)
            })?
        }
        "call_perform" => d.define(move |c: &mut C<'_>| -> Result<i32> {
            charge(c, f.base)?;
            building(c, "call_perform")?;
            let msg = &mut c.data_mut().msg;
            let call = msg.building.take().expect("checked above");
            msg.calls.push(call);
            Ok(0)
        })?,
        "msg_reject_code" => d.define(move |c: &mut C<'_>| -> Result<i32> {
            charge(c, f.base)?;
            require(c, "msg_reject_code", c.data().msg.api.is_callback())?;
            Ok(c.data()
                .msg
                .reject
                .as_ref()
                .map_or(0, |(code, _)| *code as i32))
        })?,
        "msg_reject_msg_size" => d.define(move |c: &mut C<'_>| -> Result<A> {
            charge(c, f.base)?;
            let text = reject_message(c, "msg_reject_msg_size")?;
            Ok(A::from_len(text.len()))
        })?,
        "msg_reject_msg_copy" => define_copy::<A>(d, |s| {
            s.msg.reject.as_ref().map_or(&[][..], |(_, m)| m.as_bytes())
        })?,
        _ => return Ok(false),
    }
    Ok(true)
}

fn closure<A: Addr>(func: A, env: A) -> Closure {
    Closure {
        func: func.get() as u32,
        env: env.get(),
    }
}

/// Calls may be sent from an update and its callbacks; a system task's calls the engine
/// cannot deliver.
fn may_call(c: &C<'_>, api: &str) -> Result<()> {
    let kind = c.data().msg.api;
    if matches!(kind, ApiType::Heartbeat | ApiType::GlobalTimer) {
        return Err(Error::new(HostTrap::Unsupported(format!(
            "{api} in a system task"
        ))));
    }
    require(
        c,
        api,
        matches!(kind, ApiType::Update) || kind.is_callback(),
    )
}

/// The call being assembled, or a contract violation naming `api`.
fn building<'a>(c: &'a mut C<'_>, api: &str) -> Result<&'a mut OutCall> {
    may_call(c, api)?;
    c.data_mut()
        .msg
        .building
        .as_mut()
        .ok_or_else(|| violation(format!("ic0.{api}: no call is being assembled")))
}

/// Attaching no cycles is what every Motoko call does; cycles the engine does not move (no
/// callee accepts any, and none is refunded), so attaching some traps.
fn add_cycles(c: &mut C<'_>, api: &str, amount: u128) -> Result<()> {
    building(c, api)?;
    if amount > 0 {
        return Err(Error::new(HostTrap::Unsupported(format!(
            "{api} with {amount} cycles (calls carry no cycles)"
        ))));
    }
    Ok(())
}

/// The reject message of a reject callback.
fn reject_message(c: &C<'_>, api: &str) -> Result<String> {
    require(c, api, c.data().msg.api == ApiType::RejectCallback)?;
    Ok(c.data()
        .msg
        .reject
        .as_ref()
        .map(|(_, m)| m.clone())
        .unwrap_or_default())
}

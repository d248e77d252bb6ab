//! The message's input and output: its argument, caller and method name, the reply or
//! reject, and `accept_message`, which no entry point the engine runs may call.

use wasmtime::Result;

use super::heap_access::{copy_out, define_copy, read_heap};
use super::registration::{charge, require, violation, Addr, Def, C};
use super::Response;

/// Defines `d` if it is one of the message's functions; says whether it was.
pub(super) fn define<A: Addr>(d: &mut Def<'_>) -> Result<bool> {
    let f = d.fee;
    match d.name {
        "msg_arg_data_size" => d.define(move |c: &mut C<'_>| -> Result<A> {
            charge(c, f.base)?;
            require(c, "msg_arg_data_size", c.data().msg.api.has_arg())?;
            Ok(A::from_len(c.data().msg.arg.len()))
        })?,
        "msg_arg_data_copy" => d.define(
            move |c: &mut C<'_>, dst: A, off: A, size: A| -> Result<()> {
                charge(c, f.charge(size.get()))?;
                require(c, "msg_arg_data_copy", c.data().msg.api.has_arg())?;
                // Taken and put back: the argument may be large, and copy_out needs the caller.
                let arg = std::mem::take(&mut c.data_mut().msg.arg);
                let r = copy_out(
                    c,
                    "msg_arg_data_copy",
                    &arg,
                    dst.get(),
                    off.get(),
                    size.get(),
                );
                c.data_mut().msg.arg = arg;
                r
            },
        )?,
        "msg_caller_size" => d.value(|s| A::from_len(s.msg.caller.len()))?,
        "msg_caller_copy" => define_copy::<A>(d, |s| &s.msg.caller)?,
        "msg_method_name_size" => d.value(|s| A::from_len(s.msg.method.len()))?,
        "msg_method_name_copy" => define_copy::<A>(d, |s| s.msg.method.as_bytes())?,
        "msg_reply_data_append" => d.define(move |c: &mut C<'_>, src: A, size: A| -> Result<()> {
            charge(c, f.charge(size.get()))?;
            require_open_reply(c, "msg_reply_data_append")?;
            let bytes = read_heap(c, "msg_reply_data_append", src.get(), size.get())?;
            let buf = &mut c.data_mut().msg.reply_buf;
            if buf.len() + bytes.len() > MAX_RESPONSE_BYTES {
                return Err(violation(format!("ic0.msg_reply_data_append: application payload size ({}) cannot be larger than {MAX_RESPONSE_BYTES}", buf.len() + bytes.len())));
            }
            buf.extend_from_slice(&bytes);
            Ok(())
        })?,
        "msg_reply" => d.define(move |c: &mut C<'_>| -> Result<()> {
            charge(c, f.base)?;
            require_open_reply(c, "msg_reply")?;
            let reply = std::mem::take(&mut c.data_mut().msg.reply_buf);
            c.data_mut().msg.response = Some(Response::Reply(reply));
            Ok(())
        })?,
        "msg_reject" => d.define(move |c: &mut C<'_>, src: A, size: A| -> Result<()> {
            charge(c, f.charge(size.get()))?;
            require_open_reply(c, "msg_reject")?;
            let bytes = read_heap(c, "msg_reject", src.get(), size.get())?;
            c.data_mut().msg.response = Some(Response::Reject(
                String::from_utf8_lossy(&bytes).into_owned(),
            ));
            Ok(())
        })?,
        "accept_message" => d.define(move |c: &mut C<'_>| -> Result<()> {
            charge(c, f.base)?;
            Err(violation(format!(
                "\"ic0.accept_message\" cannot be executed in {} mode",
                c.data().msg.api.name()
            )))
        })?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// The reply functions need an entry point that can reply and a call not yet answered.
fn require_open_reply(caller: &C<'_>, api: &str) -> Result<()> {
    require(caller, api, caller.data().msg.api.can_reply())?;
    if caller.data().msg.response.is_some() || caller.data().msg.replied {
        return Err(violation(format!("ic0.{api}: the call is already replied")));
    }
    Ok(())
}

/// The largest reply a canister may produce (`MAX_INTER_CANISTER_PAYLOAD_IN_BYTES` is
/// 2 MiB; ingress replies may be up to this size as well).
pub const MAX_RESPONSE_BYTES: usize = 2 * 1024 * 1024;

//! The canister's identity and state: its id, status and version, its certified data, its
//! controllers, and whether it runs replicated.

use wasmtime::Result;

use super::heap_access::{define_copy, read_heap};
use super::registration::{charge, violation, Addr, Def, C};
use super::ApiType;

/// Defines `d` if it is one of the canister state's functions; says whether it was.
pub(super) fn define<A: Addr>(d: &mut Def<'_>) -> Result<bool> {
    let f = d.fee;
    match d.name {
        "canister_self_size" => d.value(|s| A::from_len(s.canister_id.len()))?,
        "canister_self_copy" => define_copy::<A>(d, |s| &s.canister_id)?,
        "canister_status" => d.value(|_| 1i32)?, // running
        "canister_version" => d.value(|s| s.canister_version as i64)?,
        "certified_data_set" => d.define(move |c: &mut C<'_>, src: A, size: A| -> Result<()> {
            charge(c, f.charge(size.get()))?;
            if size.get() > 32 {
                return Err(violation(format!(
                    "ic0.certified_data_set: certified data can be at most 32 bytes, got {}",
                    size.get()
                )));
            }
            let bytes = read_heap(c, "certified_data_set", src.get(), size.get())?;
            c.data_mut().certified_data = bytes;
            Ok(())
        })?,
        "data_certificate_present" => d.value(|_| 0i32)?,
        "is_controller" => d.define(move |c: &mut C<'_>, src: A, size: A| -> Result<i32> {
            charge(c, f.charge(size.get()))?;
            let bytes = read_heap(c, "is_controller", src.get(), size.get())?;
            if bytes.len() > 29 {
                return Err(violation(format!(
                    "ic0.is_controller: {} bytes is not a principal",
                    bytes.len()
                )));
            }
            Ok(c.data().controllers.contains(&bytes) as i32)
        })?,
        "in_replicated_execution" => {
            d.value(|s| !matches!(s.msg.api, ApiType::Query | ApiType::CompositeQuery) as i32)?
        }
        _ => return Ok(false),
    }
    Ok(true)
}

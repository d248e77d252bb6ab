//! The System API imports of the hand-written test canisters, under the names their WAT
//! bodies call, so each module states only its memory, globals and functions.

/// What every hand-written canister calls: the counter, the reply and the trap.
pub const REPLY_IMPORTS: &str = r#"
  (import "ic0" "performance_counter" (func $pc (param i32) (result i64)))
  (import "ic0" "msg_reply_data_append" (func $append (param i32 i32)))
  (import "ic0" "msg_reply" (func $reply))
  (import "ic0" "trap" (func $trap (param i32 i32)))
"#;

/// Stable memory: grow, write and read (64-bit).
pub const STABLE64_IMPORTS: &str = r#"
  (import "ic0" "stable64_grow" (func $sgrow (param i64) (result i64)))
  (import "ic0" "stable64_write" (func $swrite (param i64 i64 i64)))
  (import "ic0" "stable64_read" (func $sread (param i64 i64 i64)))
"#;

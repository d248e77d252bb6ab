//! How an `ic0` function is registered: the one helper every area uses ([`Def`]), which
//! checks the module's import type, hands the instruction counter in and out as the
//! instrumentation passes it, and folds the memory tracker's page charges around the call;
//! and what every body shares: charging its fee and refusing a call the spec forbids.

use std::mem::MaybeUninit;

use wasmtime::{bail, Caller, Error, FuncType, Linker, Result, Val, ValRaw, ValType};

use super::{HostState, HostTrap};
use crate::cost::{self, ApiFee};

pub(super) type C<'a> = Caller<'a, HostState>;

/// One `ic0` function being linked: the linker, the function's name, how the counter is
/// passed, the type the module imports it with, and its fee, looked up once here (a name
/// lookup per call cost 5% of a SQLite benchmark run).
pub(super) struct Def<'a> {
    linker: &'a mut Linker<HostState>,
    pub name: &'a str,
    passing: CounterPassing,
    import: &'a FuncType,
    pub fee: ApiFee,
}

impl<'a> Def<'a> {
    pub fn new(
        linker: &'a mut Linker<HostState>,
        name: &'a str,
        passing: CounterPassing,
        import: &'a FuncType,
    ) -> Self {
        Def {
            linker,
            name,
            passing,
            import,
            fee: fee(name),
        }
    }

    /// Defines the function as `f`.
    pub fn define<Args, R: Results, F: HostFn<Args, R>>(&mut self, f: F) -> Result<()> {
        define_api(self.linker, self.name, self.passing, self.import, f)
    }

    /// A function without arguments that charges its base fee and returns what `get`
    /// reads off the host state.
    pub fn value<R: Raw>(&mut self, get: fn(&HostState) -> R) -> Result<()> {
        let base = self.fee.base;
        self.define(move |c: &mut C<'_>| -> Result<R> {
            charge(c, base)?;
            Ok(get(c.data()))
        })
    }
}

fn fee(name: &str) -> ApiFee {
    cost::system_api_fee(name).unwrap_or(ApiFee {
        base: 0,
        per_byte: 0,
    })
}

/// Subtracts `amount` from the instruction counter, as the replica's `charge_direct_fee`.
pub(super) fn charge(caller: &mut C<'_>, amount: u64) -> Result<()> {
    let state = caller.data_mut();
    if state.left < 0 {
        bail!(HostTrap::OutOfInstructions);
    }
    state.left = state
        .left
        .saturating_sub(amount.min(i64::MAX as u64) as i64);
    if state.left < 0 {
        bail!(HostTrap::OutOfInstructions);
    }
    Ok(())
}

pub(super) fn violation(msg: String) -> Error {
    Error::new(HostTrap::ContractViolation(msg))
}

pub(super) fn require(caller: &C<'_>, api: &str, ok: bool) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(violation(format!(
            "\"ic0.{api}\" cannot be executed in {} mode",
            caller.data().msg.api.name()
        )))
    }
}

/// A heap address or byte count as the System API passes it: `i32` in a wasm32 module and
/// `i64` in a wasm64 one (the replica links its functions generically over this type). The
/// 32-bit stable memory API, counter types and flags stay `i32` in both.
pub(super) trait Addr: Raw {
    /// The unsigned value.
    fn get(self) -> u64;
    /// A host-side length; the data behind every `*_size` is far below 2 GiB.
    fn from_len(n: usize) -> Self;
}

impl Addr for i32 {
    fn get(self) -> u64 {
        self as u32 as u64
    }
    fn from_len(n: usize) -> Self {
        n as i32
    }
}

impl Addr for i64 {
    fn get(self) -> u64 {
        self as u64
    }
    fn from_len(n: usize) -> Self {
        n as i64
    }
}

/// A value System API functions take or return (`i32` or `i64`), moved through wasmtime's
/// raw value slots.
pub(super) trait Raw: Copy + Send + Sync + 'static {
    const TY: ValType;
    /// # Safety
    /// `v` holds an initialised value of type [`Self::TY`].
    unsafe fn read(v: &MaybeUninit<ValRaw>) -> Self;
    fn raw(self) -> ValRaw;
}

/// [`Raw`] for `$int`, of Wasm type `ValType::$ty`, read from a slot with `ValRaw::$get`.
macro_rules! raw {
    ($int:ident, $ty:ident, $get:ident) => {
        impl Raw for $int {
            const TY: ValType = ValType::$ty;
            unsafe fn read(v: &MaybeUninit<ValRaw>) -> Self {
                // SAFETY: the caller passes an initialised slot of this type.
                unsafe { v.assume_init_ref() }.$get()
            }
            fn raw(self) -> ValRaw {
                ValRaw::$int(self)
            }
        }
    };
}
raw!(i32, I32, get_i32);
raw!(i64, I64, get_i64);

/// What a System API function returns: nothing or one value.
pub(super) trait Results: Sized {
    fn types() -> Vec<ValType>;
    /// Writes the results to the start of `out`; returns how many.
    fn write(self, out: &mut [MaybeUninit<ValRaw>]) -> usize;
}

impl Results for () {
    fn types() -> Vec<ValType> {
        Vec::new()
    }
    fn write(self, _: &mut [MaybeUninit<ValRaw>]) -> usize {
        0
    }
}

impl<T: Raw> Results for T {
    fn types() -> Vec<ValType> {
        vec![T::TY]
    }
    fn write(self, out: &mut [MaybeUninit<ValRaw>]) -> usize {
        out[0] = MaybeUninit::new(self.raw());
        1
    }
}

/// A System API function body, `Fn(&mut Caller, args...) -> Result<R>`, callable on
/// wasmtime's raw argument slots. `Args` is the tuple of argument types.
pub(super) trait HostFn<Args, R>: Send + Sync + 'static {
    fn params() -> Vec<ValType>;
    /// # Safety
    /// `args` starts with initialised values of the types [`Self::params`] gives.
    unsafe fn call(&self, caller: &mut C<'_>, args: &[MaybeUninit<ValRaw>]) -> Result<R>;
}

macro_rules! host_fn {
    ($($a:ident $i:tt),*) => {
        impl<F, R, $($a: Raw),*> HostFn<($($a,)*), R> for F
        where
            F: Fn(&mut C<'_>, $($a),*) -> Result<R> + Send + Sync + 'static,
        {
            fn params() -> Vec<ValType> {
                vec![$($a::TY),*]
            }
            #[allow(unused_variables)]
            unsafe fn call(&self, caller: &mut C<'_>, args: &[MaybeUninit<ValRaw>]) -> Result<R> {
                // SAFETY: the caller passes `args` initialised with the types `params` gives,
                // argument `$i` of type `$a` among them.
                self(caller, $(unsafe { $a::read(&args[$i]) }),*)
            }
        }
    };
}
host_fn!();
host_fn!(A0 0);
host_fn!(A0 0, A1 1);
host_fn!(A0 0, A1 1, A2 2);
host_fn!(A0 0, A1 1, A2 2, A3 3);
host_fn!(A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7);

/// How the instrumented code hands the instruction counter to System API functions (see
/// [`crate::instrument::Counter`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum CounterPassing {
    /// In the exported counter global, read and written through wasmtime's `Global` API
    /// (the replica's code).
    Global,
    /// As an extra last argument and an extra last result: a plain value, no store lookups.
    Argument,
    /// Not at all: the module is not instrumented (see [`super::link_unmetered`]).
    Unmetered,
}

/// Defines `ic0.name` as `f`, with the counter passed as `passing` says; `import` is the
/// function type the module imports it with, checked against the System API's.
fn define_api<Args, R: Results, F: HostFn<Args, R>>(
    l: &mut Linker<HostState>,
    name: &str,
    passing: CounterPassing,
    import: &FuncType,
    f: F,
) -> Result<()> {
    let (mut params, mut results) = (F::params(), R::types());
    let expected = FuncType::new(l.engine(), params.clone(), results.clone());
    if passing == CounterPassing::Argument {
        params.push(ValType::I64);
        results.push(ValType::I64);
    }
    let ty = FuncType::new(l.engine(), params.clone(), results.clone());
    if !FuncType::eq(import, &ty) {
        // Name the signature the module wrote, without the counter the instrumentation added.
        let strip = |types: Vec<ValType>| -> Vec<ValType> {
            let n = types.len() - (passing == CounterPassing::Argument) as usize;
            types.into_iter().take(n).collect()
        };
        let found = FuncType::new(
            l.engine(),
            strip(import.params().collect()),
            strip(import.results().collect()),
        );
        bail!("the module imports it as {found}, but its signature is {expected}");
    }
    let counter_arg = params.len().saturating_sub(1);
    let counter_result = results.len().saturating_sub(1);
    let body = move |mut c: C<'_>, slots: &mut [MaybeUninit<ValRaw>]| -> Result<()> {
        let left = match passing {
            // SAFETY: wasmtime checked the call against `ty`, whose last parameter is i64.
            CounterPassing::Argument => unsafe { i64::read(&slots[counter_arg]) },
            CounterPassing::Global => match c.data().counter {
                Some(g) => g.get(&mut c).unwrap_i64(),
                None => bail!("instruction counter missing"),
            },
            CounterPassing::Unmetered => i64::MAX,
        };
        c.data_mut().left = left;
        c.data_mut().fold_page_charges();
        // SAFETY: the slots hold the arguments of type `ty` (checked by wasmtime).
        let result = unsafe { f.call(&mut c, slots) };
        // Pages the call itself touched (copies into and out of the heap, stable memory).
        c.data_mut().fold_page_charges();
        match result {
            Ok(value) => {
                value.write(slots);
                let left = c.data().left;
                match passing {
                    CounterPassing::Argument => {
                        slots[counter_result] = MaybeUninit::new(ValRaw::i64(left))
                    }
                    CounterPassing::Global => set_counter(&mut c, left)?,
                    CounterPassing::Unmetered => {}
                }
                Ok(())
            }
            Err(e) => {
                // The message ends here: leave the charged counter where the host reads it.
                if passing != CounterPassing::Unmetered {
                    let left = c.data().left;
                    set_counter(&mut c, left)?;
                }
                Err(e)
            }
        }
    };
    // SAFETY: `body` writes exactly the results of `ty` (the function's result, if any,
    // then the counter with `CounterPassing::Argument`), and reads only its parameters.
    unsafe { l.func_new_unchecked("ic0", name, ty, body)? };
    Ok(())
}

fn set_counter(c: &mut C<'_>, left: i64) -> Result<()> {
    match c.data().counter {
        Some(g) => g.set(c, Val::I64(left)),
        None => bail!("instruction counter missing"),
    }
}

//! What every suite shares around its own work: how it is declared to the CLI
//! ([`Define`], from which [`Suite`](super::Suite) follows), how its plan runs ([`Measure`],
//! from which [`Plan`](super::Plan) follows, given a [`Run`]), and how its run starts and
//! ends ([`Session`]: the clock, the engine's name, the log of the work, the canister
//! installed, and the report assembled from the suite's header and its measured outcomes).

mod define;
mod measure;
mod session;

pub(crate) use define::default_from_flags;
pub use define::{default_plan, store_selected, Define, Reads};
pub use measure::{Measure, Run};
pub use session::{Header, Session};

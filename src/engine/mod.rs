pub mod cost;
pub mod instrument;

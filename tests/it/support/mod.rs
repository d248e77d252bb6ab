//! Helpers shared by several test modules.

pub mod canbench_fixture;

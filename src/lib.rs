pub mod engine;
pub mod report;

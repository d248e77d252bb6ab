pub mod cost;

//! The host API offered to tool code: one module per table.

pub mod fs;
pub mod json;
pub mod log;
pub mod time;

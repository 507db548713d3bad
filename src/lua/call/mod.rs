//! The running call: what Lua code runs under and what host functions act for.
//! `clock` enforces deadlines (and cancellation) from a count hook, `timer` wakes futures
//! whose deadlines passed without the async runtime's timers, `current` is the call whose
//! handler runs on a VM at this moment. The sandbox and the host API use these, so this
//! room sits below them.

pub(crate) mod asking;
pub(crate) mod clock;
pub(crate) mod current;
pub(crate) mod timer;

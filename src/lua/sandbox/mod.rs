//! What keeps tool code inside its sandbox besides the VM's own settings: `require` that
//! resolves only inside allowed folders (`require`), the pre-scan that refuses a file
//! nested too deep for any parser (`depth`), and Lua patterns run by a bounded matcher
//! with no backtracking blow-up (`patterns`).

pub(crate) mod depth;
pub(crate) mod patterns;
pub(crate) mod require;

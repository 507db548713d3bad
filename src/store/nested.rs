//! Store calls made from inside an `update` function are refused at once.
//!
//! The function runs while its update holds this process's writer lock and SQLite's write
//! lock on the file. A nested write would wait for a lock its own thread holds (a deadlock
//! that no deadline could end, since the thread is blocked outside Lua), and a nested read
//! would see the value from before the update. So every store call on a thread that is
//! running an update function fails with [`StoreError::Nested`]: whatever the function
//! needs, it computes from the `old` value it is given. Lua code reaches this through
//! every path that stays on the thread (another file's function, a `lib/` module, a
//! coroutine); `ctx.call`, which would hand the work to another VM, asks [`inside_update`]
//! and is refused the same way.

use super::StoreError;
use std::cell::Cell;

thread_local! {
    /// How many update functions are running on this thread (at most one, since a nested
    /// update is refused; a count keeps the guard honest).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// True while an update function runs on this thread.
pub(crate) fn inside_update() -> bool {
    DEPTH.with(Cell::get) > 0
}

/// Fails when called from inside an update function.
pub(super) fn refuse_inside_update() -> Result<(), StoreError> {
    if inside_update() {
        Err(StoreError::Nested)
    } else {
        Ok(())
    }
}

/// Marks this thread as running an update function until dropped (also on unwind).
pub(super) struct InsideUpdate(());

impl InsideUpdate {
    pub(super) fn enter() -> Self {
        DEPTH.with(|depth| depth.set(depth.get() + 1));
        Self(())
    }
}

impl Drop for InsideUpdate {
    fn drop(&mut self) {
        DEPTH.with(|depth| depth.set(depth.get().saturating_sub(1)));
    }
}

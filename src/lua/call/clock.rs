//! Deadlines for Lua code, enforced from a count hook installed on every VM.
//!
//! Whatever runs on a VM runs under the *current deadline* of that VM: the deadline of the
//! call being polled, or of the probe, hook or file being run. Every 4,096 instructions the
//! hook compares it with the clock. Past the deadline it first *yields* the running
//! coroutine (a `pcall` cannot catch a yield; the call's future then sees the deadline and
//! drops the coroutine). Where yielding is impossible (a `table.sort` comparator, a
//! metamethod called from C, code outside any coroutine, `<close>` handlers while a dropped
//! coroutine is reset) it switches that thread to a hook on *every* instruction and raises
//! on each one, so no `pcall` loop can keep going: the loop's own next instruction raises
//! outside the `pcall`. A thread switched that way goes back to the cheap hook the next
//! time it runs without an expired deadline.

use mlua::{HookTriggers, Lua, VmState};
use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Instructions between two deadline checks.
pub(crate) const CHECK_INTERVAL: u32 = 4096;

/// The VM's current deadline and what the hook has done about it.
#[derive(Debug, Default)]
pub(crate) struct Clock {
    /// The deadline of the code running now, if any.
    pub deadline: Option<Instant>,
    /// The budget behind the deadline, for the message.
    pub budget: Duration,
    /// The hook has tried yielding for this deadline.
    pub yielded: bool,
    /// The hook found the deadline passed (the code ran out of time).
    pub tripped: bool,
    /// Threads switched to the every-instruction hook.
    escalated: HashSet<usize>,
    /// The cancellation token of the call being polled: once cancelled, its code is out
    /// of time whatever its deadline.
    cancel: Option<CancellationToken>,
}

/// Installs the hook; call once when the VM is created, before any thread exists.
pub(crate) fn install(lua: &Lua) -> mlua::Result<()> {
    lua.set_app_data(Clock::default());
    lua.set_global_hook(
        HookTriggers::new().every_nth_instruction(CHECK_INTERVAL),
        deadline_hook,
    )
}

/// The message of a deadline error.
pub(crate) fn timeout_message(budget: Duration) -> String {
    format!(
        "did not finish within {} ms (runaway loop?)",
        budget.as_millis()
    )
}

fn thread_id(lua: &Lua) -> usize {
    lua.current_thread().to_pointer() as usize
}

fn deadline_hook(lua: &Lua, _debug: &mlua::debug::Debug) -> mlua::Result<VmState> {
    enum Act {
        Continue,
        Relax,
        Yield,
        Escalate(Duration),
        Raise(Duration),
    }
    let act = {
        let Some(mut clock) = lua.app_data_mut::<Clock>() else {
            return Ok(VmState::Continue);
        };
        let expired = clock.deadline.is_some_and(|d| Instant::now() >= d)
            || clock.cancel.as_ref().is_some_and(|t| t.is_cancelled());
        if !expired {
            if !clock.escalated.is_empty() && clock.escalated.remove(&thread_id(lua)) {
                Act::Relax
            } else {
                Act::Continue
            }
        } else {
            clock.tripped = true;
            if !clock.yielded {
                clock.yielded = true;
                Act::Yield
            } else if clock.escalated.insert(thread_id(lua)) {
                Act::Escalate(clock.budget)
            } else {
                Act::Raise(clock.budget)
            }
        }
    };
    match act {
        Act::Continue => Ok(VmState::Continue),
        Act::Relax => {
            lua.set_global_hook(
                HookTriggers::new().every_nth_instruction(CHECK_INTERVAL),
                deadline_hook,
            )?;
            Ok(VmState::Continue)
        }
        Act::Yield => Ok(VmState::Yield),
        Act::Escalate(budget) => {
            lua.set_global_hook(HookTriggers::new().every_nth_instruction(1), deadline_hook)?;
            Err(mlua::Error::runtime(timeout_message(budget)))
        }
        Act::Raise(budget) => Err(mlua::Error::runtime(timeout_message(budget))),
    }
}

/// Per-call deadline state, saved between polls (several calls may interleave on a VM).
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallClock {
    /// The call's deadline.
    pub deadline: Instant,
    /// Its budget.
    pub budget: Duration,
    /// The hook already tried to yield.
    pub yielded: bool,
    /// The deadline passed while Lua ran.
    pub tripped: bool,
}

impl CallClock {
    /// A clock for a call allowed `budget` from now.
    pub(crate) fn start(budget: Duration) -> Self {
        Self {
            deadline: Instant::now() + budget,
            budget,
            yielded: false,
            tripped: false,
        }
    }

    /// Makes this the VM's current deadline.
    pub(crate) fn enter(&self, lua: &Lua) {
        if let Some(mut clock) = lua.app_data_mut::<Clock>() {
            clock.deadline = Some(self.deadline);
            clock.budget = self.budget;
            clock.yielded = self.yielded;
            clock.tripped = self.tripped;
        }
    }

    /// Takes the hook's findings back and clears the VM's deadline.
    pub(crate) fn leave(&mut self, lua: &Lua) {
        if let Some(mut clock) = lua.app_data_mut::<Clock>() {
            self.yielded = clock.yielded;
            self.tripped |= clock.tripped;
            clock.deadline = None;
            clock.yielded = false;
            clock.tripped = false;
        }
    }

    /// True once the deadline has passed.
    pub(crate) fn expired(&self) -> bool {
        Instant::now() >= self.deadline
    }
}

/// The VM's deadline state at one moment, to put back after running other code under its
/// own deadline (a tool file loaded at its first use may run while a handler's deadline is
/// current; leaving the load's deadline would otherwise clear the handler's).
pub(crate) struct SavedClock {
    deadline: Option<Instant>,
    budget: Duration,
    yielded: bool,
    tripped: bool,
}

/// The current deadline state.
pub(crate) fn save(lua: &Lua) -> Option<SavedClock> {
    lua.app_data_ref::<Clock>().map(|clock| SavedClock {
        deadline: clock.deadline,
        budget: clock.budget,
        yielded: clock.yielded,
        tripped: clock.tripped,
    })
}

/// Puts back a state taken with [`save`].
pub(crate) fn restore(lua: &Lua, saved: Option<SavedClock>) {
    if let (Some(saved), Some(mut clock)) = (saved, lua.app_data_mut::<Clock>()) {
        clock.deadline = saved.deadline;
        clock.budget = saved.budget;
        clock.yielded = saved.yielded;
        clock.tripped = saved.tripped;
    }
}

/// The deadline of the code running on this VM now (for host functions that loop: they
/// stop when it passes instead of running on past the call).
pub(crate) fn current_deadline(lua: &Lua) -> Option<Instant> {
    lua.app_data_ref::<Clock>().and_then(|clock| clock.deadline)
}

/// The cancellation token of the call running on this VM now, if any (for host functions
/// that wait: they stop when it is cancelled, as the hook stops Lua code).
pub(crate) fn current_cancel(lua: &Lua) -> Option<CancellationToken> {
    lua.app_data_ref::<Clock>()
        .and_then(|clock| clock.cancel.clone())
}

/// Marks the running code as out of time (a host function found the deadline passed) and
/// returns the timeout error to raise.
pub(crate) fn trip(lua: &Lua) -> mlua::Error {
    let budget = match lua.app_data_mut::<Clock>() {
        Some(mut clock) => {
            clock.tripped = true;
            clock.budget
        }
        None => Duration::ZERO,
    };
    mlua::Error::runtime(timeout_message(budget))
}

pin_project_lite::pin_project! {
    /// Runs `inner` (a whole call on its VM) with `token` as the VM's cancellation token
    /// while it is polled: the deadline hook stops whatever Lua the call runs — handler,
    /// probe, hook — once the token is cancelled, as if its deadline had passed.
    ///
    /// The whole call held in place (pinned with the task that runs it, not in a box of
    /// its own: one allocation and one copy of it fewer per call).
    pub(crate) struct Cancellable<F> {
        lua: Lua,
        token: CancellationToken,
        #[pin]
        inner: F,
    }
}

impl<F: Future> Cancellable<F> {
    /// Wraps `inner` for `lua`.
    pub(crate) fn new(lua: &Lua, token: CancellationToken, inner: F) -> Self {
        Self {
            lua: lua.clone(),
            token,
            inner,
        }
    }
}

impl<F: Future> Future for Cancellable<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let previous = this
            .lua
            .app_data_mut::<Clock>()
            .and_then(|mut clock| clock.cancel.replace(this.token.clone()));
        let out = this.inner.poll(cx);
        if let Some(mut clock) = this.lua.app_data_mut::<Clock>() {
            clock.cancel = previous;
        }
        out
    }
}

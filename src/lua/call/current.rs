//! The call whose handler runs on a VM at this moment, for host functions that act on its
//! behalf: `ctx.progress` and `log.*` report to the call's observer, `fs` uses the call's
//! own roots. A VM runs one handler at a time between awaits; the handler's future installs
//! its call before each poll and takes it away after, so a function kept from an earlier
//! call reports to whichever call is running it now, never to the one that made it.

use super::asking::Asking;
use crate::fs_roots::{ClientRoots, FsRoots};
use crate::registry::{Asker, CallContext, CallObserver, CallerDomain, LogLine, Progress};
use mlua::Lua;
use std::sync::Arc;

/// What host functions need of the running call.
pub(crate) struct CurrentCall {
    /// The tool being called.
    pub tool: String,
    /// Its trust domain when the call started (what `ctx.call` may reach).
    pub domain: CallerDomain,
    /// Where progress and log lines go.
    pub observer: Option<Arc<dyn CallObserver>>,
    /// The roots the call's MCP client declared (they narrow the allowed ones).
    pub fs_roots: Option<Arc<ClientRoots>>,
    /// The call's context, for `ctx.call` (when the host runs the call).
    pub ctx: Option<CallContext>,
    /// How many `ctx.call`s this call has made (for the children's call ids).
    pub children: std::sync::atomic::AtomicU32,
    /// Who answers `ctx.ask`, `ctx.roots`, `ctx.sample` (`None`: nobody).
    pub asker: Option<Arc<dyn Asker>>,
    /// The keys of the call's input requests.
    pub asking: parking_lot::Mutex<Asking>,
    /// The call is served as read-only (its tool's `read_only` annotation, or a caller's
    /// that was): every write host function refuses (docs/effects.md).
    pub read_only: bool,
    /// The MCP task the call became (set at the handover, after `prepare`): its
    /// `ctx.call`s run inside it.
    pub task_id: std::sync::OnceLock<String>,
}

impl CurrentCall {
    /// The parts of `ctx` host functions need, or `None` when there are none (the common
    /// case costs nothing per poll). `read_only`: the call is served as read-only (its
    /// tool's annotation, or `ctx`'s caller was); the tools it calls are then read-only too.
    pub(crate) fn of(
        tool: &str,
        domain: &CallerDomain,
        ctx: &CallContext,
        read_only: bool,
    ) -> Option<Arc<Self>> {
        let read_only = read_only || ctx.read_only;
        if ctx.observer().is_none()
            && ctx.fs_roots().is_none()
            && ctx.tool_caller.is_none()
            && ctx.asker().is_none()
            && !read_only
        {
            return None;
        }
        Some(Arc::new(Self {
            tool: tool.to_string(),
            domain: domain.clone(),
            observer: ctx.observer().cloned(),
            fs_roots: ctx.fs_roots().cloned(),
            ctx: ctx.tool_caller.is_some().then(|| {
                let mut ctx = ctx.clone();
                // Inherited by every `ctx.child`: a read-only tool cannot lend itself the
                // writes of a tool it calls.
                ctx.read_only = read_only;
                ctx
            }),
            children: std::sync::atomic::AtomicU32::new(0),
            asker: ctx.asker().cloned(),
            asking: parking_lot::Mutex::new(Asking::new(ctx.ask_prefix.clone())),
            read_only,
            task_id: std::sync::OnceLock::new(),
        }))
    }
}

/// The VM's slot (app data).
#[derive(Default)]
struct Slot(Option<Arc<CurrentCall>>);

/// Gives the VM its (empty) slot.
pub(crate) fn install(lua: &Lua) {
    lua.set_app_data(Slot::default());
}

/// Makes `call` the running call; returns the one it replaces, for [`leave`].
pub(crate) fn enter(lua: &Lua, call: &Option<Arc<CurrentCall>>) -> Option<Arc<CurrentCall>> {
    match (call, lua.app_data_mut::<Slot>()) {
        (Some(call), Some(mut slot)) => slot.0.replace(call.clone()),
        _ => None,
    }
}

/// Puts back what [`enter`] replaced.
pub(crate) fn leave(
    lua: &Lua,
    call: &Option<Arc<CurrentCall>>,
    previous: Option<Arc<CurrentCall>>,
) {
    if call.is_some()
        && let Some(mut slot) = lua.app_data_mut::<Slot>()
    {
        slot.0 = previous;
    }
}

/// The running call, if it carries anything for host functions.
pub(crate) fn get(lua: &Lua) -> Option<Arc<CurrentCall>> {
    lua.app_data_ref::<Slot>().and_then(|slot| slot.0.clone())
}

/// Reports progress of the running call (nothing when it has no observer).
pub(crate) fn progress(lua: &Lua, progress: Progress) {
    if let Some(observer) = get(lua).and_then(|call| call.observer.clone()) {
        observer.progress(progress);
    }
}

/// Hands a log line to the running call's observer, if any.
pub(crate) fn log(lua: &Lua, make: impl FnOnce(&str) -> LogLine) {
    if let Some(call) = get(lua)
        && let Some(observer) = &call.observer
    {
        observer.log(make(&call.tool));
    }
}

/// The fs roots of the running call: `default` (the allowed roots), narrowed to its MCP
/// client's roots when it has them — never more than `default`.
pub(crate) fn fs_roots(lua: &Lua, default: &Arc<FsRoots>) -> Arc<FsRoots> {
    match get(lua).and_then(|call| call.fs_roots.clone()) {
        Some(client) => client.within(default),
        None => default.clone(),
    }
}

/// Why the running call may not call the write host function `label` (`fs.write`, …):
/// it is served as read-only. `None` when it may (no call, or a call that may write).
pub(crate) fn write_refusal(lua: &Lua, label: &str) -> Option<String> {
    let call = get(lua)?;
    call.read_only.then(|| {
        format!(
            "{label} refused: tool '{}' is served as read-only (its read_only annotation, or \
             that of the tool that called it), and {label} writes (see docs/effects.md)",
            call.tool
        )
    })
}

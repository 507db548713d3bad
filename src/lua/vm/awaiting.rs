//! The host functions that await — `ctx.call`, the input requests (`ctx.ask`, `ctx.roots`,
//! `ctx.sample`, a `ctx.all` round), `proc.run`, `time.sleep` and the in-handler variants
//! of the host API — made at their first use in a VM rather than when it is created. mlua
//! loads and runs a Lua chunk to make each awaiting function (≈50,000 instructions, a sixth
//! of a VM's creation for the six of them), and most VMs never call most of them: a warm
//! start waits for its first VM.
//!
//! The bootstrap asks `host.make_awaiting(key)` once per key and keeps what it got; the
//! keys are its own (tool code never reaches `host`).

use crate::lua::api::{self, ApiContext};
use crate::lua::call::current;
use crate::lua::convert::{self, Mode};
use mlua::{Function, Lua, Value as LuaValue};
use serde_json::Value;

/// `host.make_awaiting(key)`: the awaiting function `key` names (`call_tool`, `input`,
/// `all_round`, or a host-API function as `module.name`), newly made.
pub(super) fn maker(lua: &Lua, api: &ApiContext) -> mlua::Result<Function> {
    let api = api.clone();
    lua.create_function(move |lua, key: mlua::LuaString| {
        let key = key.to_str()?;
        match &*key {
            "call_tool" => call_tool(lua),
            "input" => super::ask::input(lua),
            "all_round" => super::ask::all_round(lua),
            other => api::make_awaiting(lua, &api, other),
        }
    })
}

/// `ctx.call(name, args)`: another tool through the whole pipeline, as the running call
/// (its scope, selection, ids), one level deeper.
fn call_tool(lua: &Lua) -> mlua::Result<Function> {
    lua.create_async_function(|lua, (name, args): (String, LuaValue)| async move {
        // Inside a store.update function the store's write lock is held: the other
        // tool (on another VM) would wait for it while this one waits for that
        // tool. Refused before anything starts, like every store call there.
        if crate::store::inside_update() {
            return Err(mlua::Error::runtime(format!(
                "ctx.call('{name}') is refused inside a store.update function (the \
                 update holds the store's write lock until the function returns, and \
                 the other tool may need it): call it before or after the update"
            )));
        }
        let running = current::get(&lua).and_then(|call| {
            let ctx = call.ctx.clone()?;
            let caller = ctx.tool_caller.clone()?;
            Some((call, ctx, caller))
        });
        let Some((call, ctx, caller)) = running else {
            return Err(mlua::Error::runtime(
                "ctx.call is not available here (only in a handler the host runs)",
            ));
        };
        let args = match args {
            LuaValue::Nil => Value::Object(serde_json::Map::new()),
            other => convert::lua_to_json(&lua, &other, Mode::Data).map_err(|e| {
                mlua::Error::runtime(format!(
                    "ctx.call: arguments hold {} at args.{}",
                    e.reason, e.path
                ))
            })?,
        };
        let n = call
            .children
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        let parent = ctx
            .tool_call_id
            .clone()
            .unwrap_or_else(|| call.tool.clone());
        let mut child = ctx.child(format!("{parent}/{n}"), n);
        if child.task_id.is_none() {
            child.task_id = call.task_id.get().cloned();
        }
        let answer = caller.call(&call.domain, name, args, child).await;
        convert::json_to_lua(&lua, &answer)
    })
}

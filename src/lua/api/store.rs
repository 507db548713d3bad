//! `store`: JSON values that outlive the call, the VM and the process (SQLite, see
//! `crate::store`), one namespace per trust domain. Each file's `store` table is bound to its
//! domain by the bootstrap, so a plugin can neither read nor clobber another's keys; the
//! functions here take that namespace as their first argument.

use super::{ApiContext, ApiFunction, Calling, failure, function};
use crate::lua::convert::{self, Mode};
use crate::store::{StoreError, Wait};
use mlua::{Function, Lua, Value as LuaValue};
use serde_json::Value;

/// Default number of keys `store.list` returns.
const DEFAULT_LIST_LIMIT: usize = 1000;

/// The error `store.NAME` raises. Running out of time while waiting for a lock ends the
/// call as a `timeout`, like any other deadline (a `pcall` around the store call does not
/// change that).
fn raise(lua: &Lua, name: &str, error: StoreError) -> mlua::Error {
    if matches!(error, StoreError::OutOfTime) {
        crate::lua::call::clock::trip(lua);
    }
    failure("store", name, error)
}

/// The bound of this store call's lock waits: the deadline and cancellation of the code
/// running on the VM (a handler's call, else the probe deadline of top-level code or a
/// `check_fn`).
fn wait(lua: &Lua) -> Wait {
    Wait::new(
        crate::lua::call::clock::current_deadline(lua),
        crate::lua::call::clock::current_cancel(lua),
    )
}

fn to_lua(lua: &Lua, value: Option<Value>) -> mlua::Result<LuaValue> {
    match value {
        Some(value) => convert::json_to_lua(lua, &value),
        None => Ok(LuaValue::Nil),
    }
}

/// The `store` entries of the host API.
pub(crate) fn functions() -> Vec<ApiFunction> {
    let entry = |name, params, returns, doc, make| ApiFunction {
        module: "store",
        name,
        params,
        returns,
        doc,
        make,
        calling: Calling::Anywhere,
        constant: false,
    };
    vec![
        entry(
            "get",
            &[("key", "string")],
            "any",
            "The value stored under key, or nil",
            |lua, ctx: &ApiContext| {
                let store = ctx.store.clone();
                function(lua, move |lua, (ns, key): (String, String)| {
                    to_lua(
                        lua,
                        store
                            .observed("get", |store| store.get(&ns, &key, &wait(lua)))
                            .map_err(|e| raise(lua, "get", e))?,
                    )
                })
            },
        ),
        entry(
            "set",
            &[("key", "string"), ("value", "any")],
            "",
            "Stores a JSON-representable value under key (nil deletes it); durable once it returns",
            |lua, ctx: &ApiContext| {
                let store = ctx.store.clone();
                function(
                    lua,
                    move |lua, (ns, key, value): (String, String, LuaValue)| {
                        if value.is_nil() {
                            store
                                .observed("delete", |store| store.delete(&ns, &key, &wait(lua)))
                                .map_err(|e| raise(lua, "set", e))?;
                            return Ok(());
                        }
                        let json = convert::lua_to_json(lua, &value, Mode::Data)
                            .map_err(|e| failure("store", "set", e))?;
                        store
                            .observed("set", |store| store.set(&ns, &key, &json, &wait(lua)))
                            .map_err(|e| raise(lua, "set", e))
                    },
                )
            },
        ),
        entry(
            "delete",
            &[("key", "string")],
            "boolean",
            "Removes key; true when it was there",
            |lua, ctx: &ApiContext| {
                let store = ctx.store.clone();
                function(lua, move |lua, (ns, key): (String, String)| {
                    store
                        .observed("delete", |store| store.delete(&ns, &key, &wait(lua)))
                        .map_err(|e| raise(lua, "delete", e))
                })
            },
        ),
        entry(
            "list",
            &[("prefix?", "string"), ("limit?", "integer")],
            "string[]",
            "Keys starting with prefix, sorted (at most limit, default 1000, never more than 10000)",
            |lua, ctx: &ApiContext| {
                let store = ctx.store.clone();
                function(
                    lua,
                    move |lua, (ns, prefix, limit): (String, Option<String>, Option<i64>)| {
                        let limit = match limit {
                            None => DEFAULT_LIST_LIMIT,
                            Some(n) if n >= 0 => usize::try_from(n).unwrap_or(usize::MAX),
                            Some(n) => {
                                return Err(failure(
                                    "store",
                                    "list",
                                    format!("limit {n} is negative"),
                                ));
                            }
                        };
                        let keys = store
                            .observed("list", |store| {
                                store.list(&ns, prefix.as_deref().unwrap_or(""), limit, &wait(lua))
                            })
                            .map_err(|e| raise(lua, "list", e))?;
                        let keys = Value::Array(keys.into_iter().map(Value::String).collect());
                        convert::json_to_lua(lua, &keys)
                    },
                )
            },
        ),
        entry(
            "update",
            &[("key", "string"), ("change", "fun(old: any): any")],
            "any",
            "Atomically replaces the value with change(old) (nil deletes); if change raises, nothing is written",
            |lua, ctx: &ApiContext| {
                let store = ctx.store.clone();
                function(
                    lua,
                    move |lua, (ns, key, change): (String, String, Function)| {
                        let bound = wait(lua);
                        let new = store
                            .observed("update", |store| {
                                store.update(
                                    &ns,
                                    &key,
                                    |old| {
                                        let old = to_lua(lua, old)?;
                                        let new: LuaValue = change.call(old).map_err(|e| {
                                            crate::lua::error_text::lua_error_message(&e)
                                        })?;
                                        if new.is_nil() {
                                            return Ok(None);
                                        }
                                        Ok(Some(convert::lua_to_json(lua, &new, Mode::Data)?))
                                    },
                                    &bound,
                                )
                            })
                            .map_err(|e| raise(lua, "update", e))?;
                        to_lua(lua, new)
                    },
                )
            },
        ),
        entry(
            "incr",
            &[("key", "string"), ("by?", "number")],
            "number",
            "Atomically adds by (default 1) to the number under key (missing: 0); returns the sum",
            |lua, ctx: &ApiContext| {
                let store = ctx.store.clone();
                function(
                    lua,
                    move |lua, (ns, key, by): (String, String, Option<LuaValue>)| {
                        let by = match by {
                            None | Some(LuaValue::Nil) => Value::from(1),
                            Some(LuaValue::Integer(i)) => Value::from(i),
                            Some(LuaValue::Number(n)) if n.is_finite() => {
                                serde_json::Number::from_f64(n)
                                    .map_or(Value::from(1), Value::Number)
                            }
                            Some(other) => {
                                return Err(failure(
                                    "store",
                                    "incr",
                                    format!("by must be a number, got {}", other.type_name()),
                                ));
                            }
                        };
                        let sum = store
                            .observed("incr", |store| store.incr(&ns, &key, &by, &wait(lua)))
                            .map_err(|e| raise(lua, "incr", e))?;
                        convert::json_to_lua(lua, &sum)
                    },
                )
            },
        ),
    ]
}

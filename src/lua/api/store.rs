//! `store`: a host-side key/value map of JSON values, shared by every VM of the pool and
//! every tool (module-level Lua state is per VM; this is the state they share).

use super::{ApiContext, ApiFunction, Calling, failure, function};
use crate::lua::convert::{self, Mode};
use mlua::Value as LuaValue;
use parking_lot::RwLock;
use serde_json::Value;
use std::collections::HashMap;

/// The shared map.
#[derive(Debug, Default)]
pub(crate) struct Store {
    values: RwLock<HashMap<String, Value>>,
}

impl Store {
    /// The value under `key`.
    pub(crate) fn get(&self, key: &str) -> Option<Value> {
        self.values.read().get(key).cloned()
    }

    /// Sets `key`; returns the previous value.
    pub(crate) fn set(&self, key: &str, value: Value) -> Option<Value> {
        self.values.write().insert(key.to_string(), value)
    }

    /// Removes `key`; true when it was there.
    pub(crate) fn delete(&self, key: &str) -> bool {
        self.values.write().remove(key).is_some()
    }
}

/// The `store` entries of the host API.
pub(crate) fn functions() -> Vec<ApiFunction> {
    vec![
        ApiFunction {
            module: "store",
            name: "get",
            params: &[("key", "string")],
            returns: "any",
            doc: "The value stored under key, or nil",
            make: |lua, ctx: &ApiContext| {
                let store = ctx.store.clone();
                function(lua, move |lua, key: String| match store.get(&key) {
                    Some(value) => convert::json_to_lua(lua, &value),
                    None => Ok(LuaValue::Nil),
                })
            },
            calling: Calling::Anywhere,
            constant: false,
        },
        ApiFunction {
            module: "store",
            name: "set",
            params: &[("key", "string"), ("value", "any")],
            returns: "",
            doc: "Stores a JSON-representable value under key (nil deletes it)",
            make: |lua, ctx: &ApiContext| {
                let store = ctx.store.clone();
                function(lua, move |lua, (key, value): (String, LuaValue)| {
                    if value.is_nil() {
                        store.delete(&key);
                        return Ok(());
                    }
                    let json = convert::lua_to_json(lua, &value, Mode::Data)
                        .map_err(|e| failure("store", "set", e))?;
                    store.set(&key, json);
                    Ok(())
                })
            },
            calling: Calling::Anywhere,
            constant: false,
        },
        ApiFunction {
            module: "store",
            name: "delete",
            params: &[("key", "string")],
            returns: "boolean",
            doc: "Removes key; true when it was there",
            make: |lua, ctx: &ApiContext| {
                let store = ctx.store.clone();
                function(lua, move |_, key: String| Ok(store.delete(&key)))
            },
            calling: Calling::Anywhere,
            constant: false,
        },
    ]
}

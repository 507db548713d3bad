//! JSON ↔ Lua conversion, written by hand (not serde) so that it can name the path of a
//! bad value, read empty tables as the JSON the author meant, and keep arrays arrays.
//!
//! - JSON arrays become Lua sequences tagged with a shared *array marker* metatable (mlua's
//!   serde array metatable, so the fast serde path and this module agree), so an empty
//!   array survives a round trip; `json.array(t)` sets the same marker.
//! - JSON null is `json.null` (mlua's null light userdata).
//! - A Lua table is an array when it carries the marker, or when its keys are exactly
//!   `1..n` (n ≥ 1). An empty unmarked table is `{}`, except under a JSON-Schema keyword
//!   whose value is always an array (`required = {}` → `[]`) in [`Mode::Schema`].

use mlua::{Lua, LuaSerdeExt, Table, Value as LuaValue, ffi};
use serde_json::{Map, Number, Value};
use std::ffi::{c_int, c_void};

mod plain;

/// Deepest nesting accepted in either direction; deeper values are an error, not a crash.
pub(crate) const MAX_DEPTH: usize = 128;

/// How empty tables are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Handler results and `json.encode`: an empty unmarked table is `{}`.
    Data,
    /// Tool schemas: an empty table under an array-valued keyword is `[]`.
    Schema,
}

/// JSON-Schema keywords whose value is always an array.
const ARRAY_KEYWORDS: &[&str] = &[
    "required",
    "enum",
    "anyOf",
    "oneOf",
    "allOf",
    "prefixItems",
    "examples",
    "type",
];

/// A value that cannot be represented as JSON, with the path to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConvertError {
    /// Dotted path from the converted root, e.g. `parameters.properties.x`.
    pub path: String,
    /// What is wrong with it.
    pub reason: String,
}

impl std::fmt::Display for ConvertError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.reason)
        } else {
            write!(f, "{}: {}", self.path, self.reason)
        }
    }
}

impl std::error::Error for ConvertError {}

/// Prepares the array marker metatable; called once per VM.
pub(crate) fn install_array_marker(lua: &Lua) -> mlua::Result<Table> {
    let marker = lua.array_metatable();
    marker.raw_set("__name", "json.array")?;
    // Shared by every file on the VM: protected so no file can change how another file's
    // arrays behave (getmetatable returns this string instead of the table).
    marker.raw_set("__metatable", "json.array")?;
    Ok(marker)
}

/// Builds the Lua value for `value` (objects → tables, arrays → marked sequences, null →
/// `json.null`).
pub(crate) fn json_to_lua(lua: &Lua, value: &Value) -> mlua::Result<LuaValue> {
    if depth_of(value, 0) > MAX_DEPTH {
        return Err(mlua::Error::runtime(format!(
            "JSON nested deeper than {MAX_DEPTH} levels"
        )));
    }
    let marker = lua.array_metatable();
    // SAFETY: `exec_raw` runs the closure as one protected call with the marker at index 1.
    // `push_json` uses the raw API only within the stack space it checks first, and a Lua
    // error inside it (out of memory under the VM's limit, no stack left) leaves by longjmp
    // through frames that own nothing needing drop (borrows and borrowing iterators only):
    // the call then returns that error and mlua's guard restores the stack. The marker is
    // removed at the end, so the converted value is the only result.
    unsafe {
        lua.exec_raw(marker, |state| {
            push_json(state, value, 1);
            ffi::lua_remove(state, 1);
        })
    }
}

/// Pushes `value` as Lua onto `state`'s stack; the array marker is at the absolute index
/// `marker`. One protected call for the whole value: through mlua's serde path every string
/// and every table entry was a protected call of its own (the VM has a memory limit), most
/// of the cost of handing a call its arguments.
///
/// # Safety
/// Must run inside a protected call on `state` (it raises Lua errors), with `marker` a
/// valid index; and it must own nothing that needs dropping, since an error leaves it by
/// longjmp.
unsafe fn push_json(state: *mut ffi::lua_State, value: &Value, marker: c_int) {
    // SAFETY: the caller's contract; every push below is within the space checked here
    // (a container, then one key and one value at a time).
    unsafe {
        ffi::luaL_checkstack(state, 3, std::ptr::null());
        match value {
            // `json.null`: mlua's null light userdata.
            Value::Null => ffi::lua_pushlightuserdata(state, std::ptr::null_mut()),
            Value::Bool(b) => ffi::lua_pushboolean(state, c_int::from(*b)),
            // As mlua converts them: integers that fit stay integers, the rest are floats.
            Value::Number(n) => match n.as_i64() {
                Some(i) => ffi::lua_pushinteger(state, i),
                None => ffi::lua_pushnumber(state, n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(text) => {
                ffi::lua_pushlstring(state, text.as_ptr().cast(), text.len());
            }
            Value::Array(items) => {
                ffi::lua_createtable(state, c_int::try_from(items.len()).unwrap_or(0), 0);
                ffi::lua_pushvalue(state, marker);
                ffi::lua_setmetatable(state, -2);
                for (at, item) in (1..).zip(items) {
                    push_json(state, item, marker);
                    ffi::lua_rawseti(state, -2, at);
                }
            }
            Value::Object(members) => {
                ffi::lua_createtable(state, 0, c_int::try_from(members.len()).unwrap_or(0));
                for (key, member) in members {
                    ffi::lua_pushlstring(state, key.as_ptr().cast(), key.len());
                    push_json(state, member, marker);
                    ffi::lua_rawset(state, -3);
                }
            }
        }
    }
}

/// Nesting depth of a JSON value, stopping early past the limit.
fn depth_of(value: &Value, depth: usize) -> usize {
    if depth > MAX_DEPTH {
        return depth;
    }
    match value {
        Value::Array(items) => items
            .iter()
            .map(|v| depth_of(v, depth + 1))
            .max()
            .unwrap_or(depth),
        Value::Object(map) => map
            .values()
            .map(|v| depth_of(v, depth + 1))
            .max()
            .unwrap_or(depth),
        _ => depth,
    }
}

/// Reads a Lua value as JSON.
pub(crate) fn lua_to_json(lua: &Lua, value: &LuaValue, mode: Mode) -> Result<Value, ConvertError> {
    // A table is read off the stack when it holds only plain JSON; the walker reads what
    // that way gives up on (and names what is wrong).
    if let LuaValue::Table(table) = value
        && let Some(json) = plain::read(lua, table, mode)
    {
        return Ok(json);
    }
    walk(lua, value, mode)
}

/// Reads a Lua value as JSON through mlua, one value at a time, naming the path of a value
/// JSON cannot hold.
fn walk(lua: &Lua, value: &LuaValue, mode: Mode) -> Result<Value, ConvertError> {
    let mut walker = Walker {
        marker: Some(lua.array_metatable().to_pointer()),
        mode,
        seen: Vec::new(),
    };
    walker.value(value, None)
}

struct Walker {
    marker: Option<*const c_void>,
    mode: Mode,
    seen: Vec<*const c_void>,
}

/// Most `null`s a `json.array`'s holes may add beyond one per value it holds. Lua's length
/// of a table with holes is any of its borders, so a handful of assignments can give a
/// table a length of 2^60: the slots are bounded by the values that exist, never by
/// that length.
const MAX_EXTRA_HOLES: usize = 1024;

/// Whether a `json.array` of Lua length `len` holding `values` values may be converted (its
/// holes become `null`s, at most one per value plus [`MAX_EXTRA_HOLES`]).
pub(crate) fn sparse_array_allowed(len: usize, values: usize) -> bool {
    len <= values.saturating_mul(2).saturating_add(MAX_EXTRA_HOLES)
}

/// Prefixes the path of an error coming out of a child at `segment` (paths are built only
/// when something fails, so the happy path allocates none).
fn under(segment: &str, mut error: ConvertError) -> ConvertError {
    error.path = if error.path.is_empty() {
        segment.to_string()
    } else {
        format!("{segment}.{}", error.path)
    };
    error
}

impl Walker {
    fn fail(&self, reason: impl Into<String>) -> ConvertError {
        ConvertError {
            path: String::new(),
            reason: reason.into(),
        }
    }

    fn value(&mut self, value: &LuaValue, key: Option<&str>) -> Result<Value, ConvertError> {
        match value {
            LuaValue::Nil => Ok(Value::Null),
            LuaValue::Boolean(b) => Ok(Value::Bool(*b)),
            LuaValue::Integer(i) => Ok(Value::from(*i)),
            LuaValue::Number(n) => Number::from_f64(*n)
                .map(Value::Number)
                .ok_or_else(|| self.fail(format!("number {n} is not finite"))),
            LuaValue::String(s) => Ok(Value::String(s.to_string_lossy())),
            LuaValue::Table(t) => self.table(t, key),
            v if v.is_null() => Ok(Value::Null),
            other => Err(self.fail(format!("a {} is not JSON", other.type_name()))),
        }
    }

    fn table(&mut self, table: &Table, key: Option<&str>) -> Result<Value, ConvertError> {
        let ptr = table.to_pointer();
        if self.seen.contains(&ptr) {
            return Err(self.fail("table contains itself (a cycle)"));
        }
        if self.seen.len() >= MAX_DEPTH {
            return Err(self.fail(format!("nested deeper than {MAX_DEPTH} levels")));
        }
        self.seen.push(ptr);
        let result = self.table_inner(table, key);
        self.seen.pop();
        result
    }

    fn table_inner(&mut self, table: &Table, key: Option<&str>) -> Result<Value, ConvertError> {
        let marked = match (self.marker, table.metatable()) {
            (Some(marker), Some(mt)) => mt.to_pointer() == marker,
            _ => false,
        };
        // One traversal collects the pairs; the keys then say array or object.
        let mut pairs: Vec<(LuaValue, LuaValue)> = Vec::new();
        table
            .for_each(|k: LuaValue, v: LuaValue| {
                pairs.push((k, v));
                Ok(())
            })
            .map_err(|e| self.fail(e.to_string()))?;
        let len = if marked { table.raw_len() } else { pairs.len() };
        if marked && !sparse_array_allowed(len, pairs.len()) {
            return Err(self.fail(format!(
                "json.array of length {len} holds only {} values: too sparse to convert \
                 (each hole would be a null)",
                pairs.len()
            )));
        }
        let sequence = !pairs.is_empty()
            && pairs
                .iter()
                .all(|(k, _)| matches!(k, LuaValue::Integer(i) if *i >= 1 && (*i as usize) <= len));
        if marked || sequence {
            let mut items = vec![Value::Null; len];
            for (k, v) in &pairs {
                let LuaValue::Integer(index) = k else {
                    continue;
                };
                let Some(slot) = (*index as usize).checked_sub(1).filter(|i| *i < len) else {
                    continue;
                };
                items[slot] = self
                    .value(v, None)
                    .map_err(|e| under(&index.to_string(), e))?;
            }
            return Ok(Value::Array(items));
        }
        // Keys are sorted so the JSON is the same whatever Lua's hash order and
        // whether or not some dependency turns on serde_json's `preserve_order`.
        let mut named: Vec<(String, &LuaValue)> = Vec::with_capacity(pairs.len());
        for (k, v) in &pairs {
            let name = match k {
                LuaValue::String(s) => s.to_string_lossy(),
                LuaValue::Integer(i) => i.to_string(),
                LuaValue::Number(n) => n.to_string(),
                other => {
                    return Err(self.fail(format!(
                        "table key of type {} is not JSON",
                        other.type_name()
                    )));
                }
            };
            named.push((name, v));
        }
        named.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut map = Map::new();
        for (name, v) in named {
            let converted = self.value(v, Some(&name)).map_err(|e| under(&name, e))?;
            map.insert(name, converted);
        }
        if map.is_empty()
            && self.mode == Mode::Schema
            && key.is_some_and(|k| ARRAY_KEYWORDS.contains(&k))
        {
            return Ok(Value::Array(Vec::new()));
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lua() -> Lua {
        let lua = Lua::new();
        install_array_marker(&lua).unwrap();
        lua
    }

    fn eval(lua: &Lua, code: &str, mode: Mode) -> Result<Value, ConvertError> {
        let v: LuaValue = lua.load(code).eval().unwrap();
        lua_to_json(lua, &v, mode)
    }

    #[test]
    fn empty_tables_follow_the_schema_keyword() {
        let lua = lua();
        let v = eval(
            &lua,
            "return {type='object', properties={}, required={}}",
            Mode::Schema,
        );
        assert_eq!(
            v.unwrap(),
            json!({"type":"object","properties":{},"required":[]})
        );
        let v = eval(&lua, "return {required={}}", Mode::Data).unwrap();
        assert_eq!(v, json!({"required":{}}));
    }

    #[test]
    fn round_trip_keeps_arrays_and_null() {
        let lua = lua();
        let input = json!({"a":[],"b":[1,2.5,"x",null],"c":{"d":true}});
        let v = json_to_lua(&lua, &input).unwrap();
        assert_eq!(lua_to_json(&lua, &v, Mode::Data).unwrap(), input);
    }

    #[test]
    fn bad_values_name_their_path() {
        let lua = lua();
        let err = eval(&lua, "return {p={x={f=print}}}", Mode::Schema).unwrap_err();
        assert_eq!(err.path, "p.x.f");
        assert!(err.reason.contains("function"));
        let err = eval(&lua, "local t = {} t.self = t return t", Mode::Data).unwrap_err();
        assert!(err.reason.contains("cycle"), "{err}");
        let err = eval(&lua, "return {n = 0/0}", Mode::Data).unwrap_err();
        assert!(err.reason.contains("not finite"), "{err}");
    }

    /// Values a model may send: empty and nested containers, nulls inside arrays, integers
    /// beyond i64, floats, non-ASCII and embedded NUL in strings and keys.
    fn varied_json() -> Vec<Value> {
        vec![
            json!(null),
            json!(true),
            json!(-7),
            json!(u64::MAX),
            json!(1.5e300),
            json!(-0.25),
            json!("é\u{0}x"),
            json!([]),
            json!({}),
            json!([null, null, 1]),
            json!([[[]], {"": {"k\u{0}": [false, "s"]}}]),
            json!({"a": {"b": {"c": [1, 2.5, "x", null, {}]}}, "e": []}),
        ]
    }

    #[test]
    fn the_direct_conversion_matches_mluas_serde_conversion() {
        let lua = lua();
        let serde_options = mlua::serde::ser::Options::new().set_array_metatable(true);
        for input in varied_json() {
            let direct = json_to_lua(&lua, &input).unwrap();
            let through_serde = lua.to_value_with(&input, serde_options).unwrap();
            assert_eq!(
                lua_to_json(&lua, &direct, Mode::Data).unwrap(),
                lua_to_json(&lua, &through_serde, Mode::Data).unwrap(),
                "{input}"
            );
        }
    }

    #[test]
    fn converted_arrays_carry_the_array_marker() {
        let lua = lua();
        let value = json_to_lua(&lua, &json!({"list": [], "nested": [[1]]})).unwrap();
        lua.globals().set("v", value).unwrap();
        let names: (String, String, String) = lua
            .load(
                "return getmetatable(v.list), getmetatable(v.nested[1]), tostring(getmetatable(v))",
            )
            .eval()
            .unwrap();
        assert_eq!(
            names,
            ("json.array".into(), "json.array".into(), "nil".into())
        );
    }

    #[test]
    fn a_value_over_the_memory_limit_is_an_error_and_the_vm_stays_usable() {
        let lua = lua();
        let big = json!((0..20_000).map(|i| format!("item {i}")).collect::<Vec<_>>());
        lua.set_memory_limit(lua.used_memory() + 64 * 1024).unwrap();
        let err = json_to_lua(&lua, &big).unwrap_err();
        assert!(matches!(err, mlua::Error::MemoryError(_)), "{err}");
        lua.set_memory_limit(0).unwrap();
        let small = json_to_lua(&lua, &json!({"ok": [1]})).unwrap();
        assert_eq!(
            lua_to_json(&lua, &small, Mode::Data).unwrap(),
            json!({"ok": [1]})
        );
        assert_eq!(lua.load("return 1 + 1").eval::<i64>().unwrap(), 2);
    }

    #[test]
    fn mixed_tables_become_objects() {
        let lua = lua();
        let v = eval(&lua, "return {1, 2, x = 3}", Mode::Data).unwrap();
        assert_eq!(v, json!({"1":1,"2":2,"x":3}));
        let v = eval(&lua, "return {[1]=1, [3]=3}", Mode::Data).unwrap();
        assert_eq!(v, json!({"1":1,"3":3}));
    }
}

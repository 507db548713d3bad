//! The fast way of reading a Lua table as JSON: straight off the Lua stack through the C
//! API, for a table that holds only what JSON holds. mlua's `Table::for_each` turns every
//! key and value into a reference on its auxiliary thread (a slot taken and given back for
//! each), which was most of the cost of a handler's result (callgrind: ≈9k instructions for
//! a three-member result).
//!
//! It reads only what converts without a question: anything that would make the careful
//! walker ([`super::lua_to_json`]) fail or choose (a value JSON cannot hold, a non-finite
//! number, a cycle, nesting past [`MAX_DEPTH`], a key that is neither a string nor a
//! number, two keys naming the same member) makes it give up, and the walker reads the
//! value from the start — so its results and its error messages are the walker's.

use super::{ARRAY_KEYWORDS, MAX_DEPTH, Mode};
use mlua::{Lua, LuaSerdeExt, Table, ffi};
use serde_json::{Map, Number, Value};
use std::ffi::{c_int, c_void};

/// `table` as JSON, or `None` when the careful walker must read it.
pub(super) fn read(lua: &Lua, table: &Table, mode: Mode) -> Option<Value> {
    let marker = lua.array_metatable();
    let mut out = None;
    // SAFETY: `exec_raw` runs the closure as one protected call with the table at index 1
    // and the array marker at index 2. `Reader` calls only functions of the C API that
    // raise no Lua error (no allocation, no metamethod: raw traversal and raw reads, and a
    // stack check that reports failure instead of raising), so nothing longjmps through the
    // Rust frames that own the values being built. The stack is emptied before returning,
    // so the call has no results.
    let done: mlua::Result<()> = unsafe {
        lua.exec_raw((table, &marker), |state| {
            let mut reader = Reader {
                state,
                marker: ffi::lua_topointer(state, 2),
                mode,
                seen: Vec::new(),
            };
            out = reader.table(1, None);
            ffi::lua_settop(state, 0);
        })
    };
    done.ok().and(out)
}

/// One traversal's state.
struct Reader {
    state: *mut ffi::lua_State,
    /// The array marker metatable.
    marker: *const c_void,
    mode: Mode,
    /// The tables being read, outermost first (a cycle gives up).
    seen: Vec<*const c_void>,
}

impl Reader {
    /// The value at absolute stack index `at`; `key` is the member name it is read under.
    ///
    /// # Safety
    /// `at` is a valid index of `self.state`.
    unsafe fn value(&mut self, at: c_int, key: Option<&str>) -> Option<Value> {
        let state = self.state;
        // SAFETY: reads of a valid index; none of them converts or allocates.
        unsafe {
            match ffi::lua_type(state, at) {
                ffi::LUA_TNIL => Some(Value::Null),
                ffi::LUA_TBOOLEAN => Some(Value::Bool(ffi::lua_toboolean(state, at) != 0)),
                ffi::LUA_TNUMBER if ffi::lua_isinteger(state, at) != 0 => Some(Value::from(
                    ffi::lua_tointegerx(state, at, std::ptr::null_mut()),
                )),
                ffi::LUA_TNUMBER => {
                    Number::from_f64(ffi::lua_tonumberx(state, at, std::ptr::null_mut()))
                        .map(Value::Number)
                }
                ffi::LUA_TSTRING => Some(Value::String(self.text(at))),
                ffi::LUA_TTABLE => self.table(at, key),
                // `json.null`: mlua's null light userdata.
                ffi::LUA_TLIGHTUSERDATA if ffi::lua_touserdata(state, at).is_null() => {
                    Some(Value::Null)
                }
                _ => None,
            }
        }
    }

    /// The string at `at` (a string, not a number: reading a number as text would change
    /// it on the stack, under the traversal), as mlua's `to_string_lossy` reads it.
    ///
    /// # Safety
    /// `at` is a valid index of `self.state` holding a string.
    unsafe fn text(&self, at: c_int) -> String {
        let mut len = 0;
        // SAFETY: a string's bytes live as long as it is on the stack; copied at once.
        unsafe {
            let bytes = ffi::lua_tolstring(self.state, at, &mut len);
            let bytes = std::slice::from_raw_parts(bytes.cast::<u8>(), len);
            String::from_utf8_lossy(bytes).into_owned()
        }
    }

    /// The table at `at` as an array or an object, as the walker decides it.
    ///
    /// # Safety
    /// `at` is a valid absolute index of `self.state` holding a table.
    unsafe fn table(&mut self, at: c_int, key: Option<&str>) -> Option<Value> {
        let state = self.state;
        // SAFETY: traversal and reads of a valid table; every push is within the space
        // checked here (a metatable, or a key and a value, at a time).
        unsafe {
            let ptr = ffi::lua_topointer(state, at);
            if self.seen.contains(&ptr)
                || self.seen.len() >= MAX_DEPTH
                || ffi::lua_checkstack(state, 3) == 0
            {
                return None;
            }
            let marked = ffi::lua_getmetatable(state, at) != 0 && {
                let marked = ffi::lua_topointer(state, -1) == self.marker;
                ffi::lua_pop(state, 1);
                marked
            };
            // The keys first: they say array or object.
            let mut pairs = 0usize;
            let mut indices = true;
            let mut greatest = 0i64;
            ffi::lua_pushnil(state);
            while ffi::lua_next(state, at) != 0 {
                pairs += 1;
                if indices && ffi::lua_isinteger(state, -2) != 0 {
                    greatest = greatest.max(ffi::lua_tointegerx(state, -2, std::ptr::null_mut()));
                    indices = ffi::lua_tointegerx(state, -2, std::ptr::null_mut()) >= 1;
                } else {
                    indices = false;
                }
                ffi::lua_pop(state, 1);
            }
            let len = if marked {
                ffi::lua_rawlen(state, at)
            } else {
                pairs
            };
            if marked && !super::sparse_array_allowed(len, pairs) {
                // The walker reports it.
                return None;
            }
            let sequence =
                pairs > 0 && indices && usize::try_from(greatest).is_ok_and(|g| g <= len);
            self.seen.push(ptr);
            let read = if marked || sequence {
                self.array(at, len)
            } else {
                self.object(at, key)
            };
            self.seen.pop();
            read
        }
    }

    /// The array of `len` items of the table at `at`: its keys `1..=len`, in order (other
    /// keys of a marked table are left out, as the walker leaves them out).
    ///
    /// # Safety
    /// As [`Self::table`], with the stack space it checked.
    unsafe fn array(&mut self, at: c_int, len: usize) -> Option<Value> {
        let state = self.state;
        let mut items = vec![Value::Null; len];
        // SAFETY: as the caller's.
        unsafe {
            ffi::lua_pushnil(state);
            while ffi::lua_next(state, at) != 0 {
                let slot = (ffi::lua_isinteger(state, -2) != 0)
                    .then(|| ffi::lua_tointegerx(state, -2, std::ptr::null_mut()))
                    .and_then(|index| usize::try_from(index).ok())
                    .and_then(|index| index.checked_sub(1))
                    .filter(|slot| *slot < len);
                if let Some(slot) = slot {
                    let Some(item) = self.value(ffi::lua_gettop(state), None) else {
                        ffi::lua_pop(state, 2);
                        return None;
                    };
                    items[slot] = item;
                }
                ffi::lua_pop(state, 1);
            }
        }
        Some(Value::Array(items))
    }

    /// The object of the table at `at`, its members in key order (as the walker sorts
    /// them, whatever Lua's hash order and serde_json's map).
    ///
    /// # Safety
    /// As [`Self::table`], with the stack space it checked.
    unsafe fn object(&mut self, at: c_int, key: Option<&str>) -> Option<Value> {
        let state = self.state;
        let mut members: Vec<(String, Value)> = Vec::new();
        // SAFETY: as the caller's.
        unsafe {
            ffi::lua_pushnil(state);
            while ffi::lua_next(state, at) != 0 {
                let name = match ffi::lua_type(state, -2) {
                    ffi::LUA_TSTRING => Some(self.text(-2)),
                    ffi::LUA_TNUMBER if ffi::lua_isinteger(state, -2) != 0 => {
                        Some(ffi::lua_tointegerx(state, -2, std::ptr::null_mut()).to_string())
                    }
                    ffi::LUA_TNUMBER => {
                        Some(ffi::lua_tonumberx(state, -2, std::ptr::null_mut()).to_string())
                    }
                    _ => None,
                };
                let member = match name {
                    Some(name) => self
                        .value(ffi::lua_gettop(state), Some(&name))
                        .map(|value| (name, value)),
                    None => None,
                };
                let Some(member) = member else {
                    ffi::lua_pop(state, 2);
                    return None;
                };
                members.push(member);
                ffi::lua_pop(state, 1);
            }
        }
        members.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        // Two keys naming one member (`1` and `"1"`): which one the walker keeps is its
        // call.
        if members.windows(2).any(|pair| pair[0].0 == pair[1].0) {
            return None;
        }
        if members.is_empty()
            && self.mode == Mode::Schema
            && key.is_some_and(|k| ARRAY_KEYWORDS.contains(&k))
        {
            return Some(Value::Array(Vec::new()));
        }
        Some(Value::Object(members.into_iter().collect::<Map<_, _>>()))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{install_array_marker, walk};
    use super::*;
    use mlua::Value as LuaValue;

    fn lua() -> Lua {
        let lua = Lua::new();
        install_array_marker(&lua).unwrap();
        lua.globals()
            .set(
                "null",
                LuaValue::LightUserData(mlua::LightUserData(std::ptr::null_mut())),
            )
            .unwrap();
        lua.globals().set("marker", lua.array_metatable()).unwrap();
        lua
    }

    fn table(lua: &Lua, code: &str) -> Table {
        lua.load(code).eval().unwrap()
    }

    /// Tables of plain JSON in every shape the walker tells apart: the fast way reads each
    /// exactly as the walker does.
    #[test]
    fn plain_tables_read_as_the_walker_reads_them() {
        let lua = lua();
        for code in [
            "return {}",
            "return {text = 'hello', count = 3, loud = false}",
            "return {1, 2, 3}",
            "return {1, 2, x = 3}",
            "return {[1] = 'a', [3] = 'c'}",
            "return {[0] = 'a'}",
            "return {[-1] = 'a', [1] = 'b'}",
            "return {[1.5] = 'f', [2^53] = 'big'}",
            "return {a = {b = {c = {1, 2.5, 'x', null, {}}}}, e = setmetatable({}, marker)}",
            "return setmetatable({1, 2, nil, 4}, marker)",
            "return setmetatable({1, 2, x = print}, marker)",
            "return {s = 'caf\\xC3\\xA9 \\xFF bad', ['k\\0ey'] = 'nul'}",
            "return {n = null, list = {null, null, 1}}",
            "return {big = math.maxinteger, small = math.mininteger, f = -0.25}",
        ] {
            for mode in [Mode::Data, Mode::Schema] {
                let t = table(&lua, code);
                let fast = read(&lua, &t, mode).unwrap_or_else(|| panic!("read {code}"));
                let walked = walk(&lua, &LuaValue::Table(t), mode).unwrap();
                assert_eq!(fast, walked, "{code}");
            }
        }
    }

    #[test]
    fn an_empty_table_under_an_array_keyword_is_an_array_in_schema_mode() {
        let lua = lua();
        let t = table(
            &lua,
            "return {type = 'object', properties = {}, required = {}}",
        );
        assert_eq!(
            read(&lua, &t, Mode::Schema).unwrap(),
            serde_json::json!({"type": "object", "properties": {}, "required": []})
        );
        assert_eq!(
            read(&lua, &t, Mode::Data).unwrap(),
            serde_json::json!({"type": "object", "properties": {}, "required": {}})
        );
    }

    /// What the walker must judge or name is left to it: the fast way gives up, and the
    /// public conversion still gives the walker's error.
    #[test]
    fn what_the_walker_must_name_is_left_to_it() {
        let lua = lua();
        for code in [
            "return {f = print}",
            "return {deep = {deeper = {co = coroutine.create(print)}}}",
            "local t = {} t.self = t return t",
            "return {n = 0/0}",
            "return {1, 1/0}",
            "return {[true] = 1}",
            "return {[print] = 1}",
            "return {u = io and io.stdout or newproxy and newproxy() or print}",
        ] {
            let t = table(&lua, code);
            assert_eq!(read(&lua, &t, Mode::Data), None, "{code}");
            assert!(
                super::super::lua_to_json(&lua, &LuaValue::Table(t), Mode::Data).is_err(),
                "{code}"
            );
        }
    }

    #[test]
    fn two_keys_naming_one_member_are_left_to_the_walker() {
        let lua = lua();
        let t = table(&lua, "return {[1] = 'number', ['1'] = 'string', x = 1}");
        assert_eq!(read(&lua, &t, Mode::Data), None);
    }

    #[test]
    fn nesting_past_the_limit_is_left_to_the_walker() {
        let lua = lua();
        let code = format!(
            "return {}1{}",
            "{".repeat(MAX_DEPTH + 1),
            "}".repeat(MAX_DEPTH + 1)
        );
        let t = table(&lua, &code);
        assert_eq!(read(&lua, &t, Mode::Data), None);
        let err = super::super::lua_to_json(&lua, &LuaValue::Table(t), Mode::Data).unwrap_err();
        assert!(err.reason.contains("nested deeper"), "{err}");
    }

    #[test]
    fn a_table_shared_twice_is_no_cycle() {
        let lua = lua();
        let t = table(&lua, "local s = {1} return {a = s, b = s}");
        assert_eq!(
            read(&lua, &t, Mode::Data).unwrap(),
            serde_json::json!({"a": [1], "b": [1]})
        );
    }

    #[test]
    fn reading_leaves_the_vm_usable() {
        let lua = lua();
        let t = table(&lua, "return {1, {f = print}}");
        assert_eq!(read(&lua, &t, Mode::Data), None);
        let t = table(&lua, "return {a = {1, 2}}");
        for _ in 0..1000 {
            assert!(read(&lua, &t, Mode::Data).is_some());
        }
        assert_eq!(lua.load("return 1 + 1").eval::<i64>().unwrap(), 2);
    }
}

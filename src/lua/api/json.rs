//! `json`: encode, decode, `json.null`, and `json.array(t)` to mark a table as an array.

use crate::lua::convert::{self, Mode};
use mlua::{Lua, Table, Value as LuaValue};

/// Builds the `json` table.
pub fn install(lua: &Lua, array_marker: &Table) -> mlua::Result<Table> {
    let json = lua.create_table()?;
    json.set("null", LuaValue::NULL)?;
    json.set(
        "encode",
        lua.create_function(|lua, value: LuaValue| {
            let json = convert::lua_to_json(lua, &value, Mode::Data)
                .map_err(|e| mlua::Error::runtime(format!("json.encode: {e}")))?;
            Ok(json.to_string())
        })?,
    )?;
    json.set(
        "decode",
        lua.create_function(|lua, text: mlua::LuaString| {
            let parsed: serde_json::Value = serde_json::from_slice(&text.as_bytes())
                .map_err(|e| mlua::Error::runtime(format!("json.decode: {e}")))?;
            convert::json_to_lua(lua, &parsed)
        })?,
    )?;
    let marker = array_marker.clone();
    json.set(
        "array",
        lua.create_function(move |lua, table: Option<Table>| {
            let table = match table {
                Some(t) => t,
                None => lua.create_table()?,
            };
            table.set_metatable(Some(marker.clone()))?;
            Ok(table)
        })?,
    )?;
    Ok(json)
}

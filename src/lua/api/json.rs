//! `json`: encode, decode, `json.null`, `json.array(t)` to mark a table as an array, and
//! `json.base64(bytes)` (how JSON carries bytes: resource blobs, image parts).

use super::{ApiContext, ApiFunction, Calling, failure, function};
use crate::lua::convert::{self, Mode};
use mlua::{Lua, LuaSerdeExt, Table, Value as LuaValue};

/// The `json` entries of the host API.
pub(crate) fn functions() -> Vec<ApiFunction> {
    vec![
        ApiFunction {
            module: "json",
            name: "null",
            params: &[],
            returns: "lightuserdata",
            doc: "The JSON null value (Lua nil cannot stand in a table)",
            make: |_, _| Ok(LuaValue::NULL),
            calling: Calling::Anywhere,
            constant: true,
        },
        ApiFunction {
            module: "json",
            name: "encode",
            params: &[("value", "any")],
            returns: "string",
            doc: "Encodes a value as JSON text (an empty table is {}; use json.array for [])",
            make: make_encode,
            calling: Calling::Anywhere,
            constant: false,
        },
        ApiFunction {
            module: "json",
            name: "decode",
            params: &[("text", "string")],
            returns: "any",
            doc: "Decodes JSON text (null becomes json.null; arrays stay arrays)",
            make: make_decode,
            calling: Calling::Anywhere,
            constant: false,
        },
        ApiFunction {
            module: "json",
            name: "array",
            params: &[("t?", "table")],
            returns: "table",
            doc: "Marks a table as a JSON array (so an empty one encodes as [])",
            make: make_array,
            calling: Calling::Anywhere,
            constant: false,
        },
        ApiFunction {
            module: "json",
            name: "base64",
            params: &[("bytes", "string")],
            returns: "string",
            doc: "Encodes bytes as standard base64 (for a resource's `blob` or an image's `data`)",
            make: make_base64,
            calling: Calling::Anywhere,
            constant: false,
        },
    ]
}

fn make_base64(lua: &Lua, _: &ApiContext) -> mlua::Result<LuaValue> {
    use base64::Engine;
    function(lua, |_, bytes: mlua::LuaString| {
        Ok(base64::engine::general_purpose::STANDARD.encode(&*bytes.as_bytes()))
    })
}

fn make_encode(lua: &Lua, _: &ApiContext) -> mlua::Result<LuaValue> {
    function(lua, |lua, value: LuaValue| {
        let json = convert::lua_to_json(lua, &value, Mode::Data)
            .map_err(|e| failure("json", "encode", e))?;
        Ok(json.to_string())
    })
}

fn make_decode(lua: &Lua, _: &ApiContext) -> mlua::Result<LuaValue> {
    function(lua, |lua, text: mlua::LuaString| {
        let parsed: serde_json::Value =
            serde_json::from_slice(&text.as_bytes()).map_err(|e| failure("json", "decode", e))?;
        convert::json_to_lua(lua, &parsed)
    })
}

fn make_array(lua: &Lua, _: &ApiContext) -> mlua::Result<LuaValue> {
    let marker = lua.array_metatable();
    function(lua, move |lua, table: Option<Table>| {
        let table = match table {
            Some(t) => t,
            None => lua.create_table()?,
        };
        table.set_metatable(Some(marker.clone()))?;
        Ok(table)
    })
}

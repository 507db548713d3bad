//! `string.find`, `string.match`, `string.gmatch` and `string.gsub` on a pattern matcher
//! that checks the call's deadline while it backtracks. Stock Lua runs a match inside one C
//! call, where the count hook cannot stop it: `("a"):rep(300):find(("a*"):rep(6) .. "b")`
//! would pin a VM for hours. Results and error messages are stock Lua 5.4's (a property test
//! compares both on generated patterns); the bootstrap installs these into the VM's string
//! library (so method calls on strings use them too).

mod matcher;

use crate::lua::call::clock;
use matcher::{CapLen, Failure, MatchState, find_plain, no_specials, start_position};
use mlua::{Function, Lua, MultiValue, Table, Value as LuaValue};
use std::time::Instant;

/// The four functions, as a table `{find, match, gmatch, gsub}`.
pub(crate) fn install(lua: &Lua) -> mlua::Result<Table> {
    let table = lua.create_table()?;
    table.set(
        "find",
        lua.create_function(|lua, args: MultiValue| find_aux(lua, args, true))?,
    )?;
    table.set(
        "match",
        lua.create_function(|lua, args: MultiValue| find_aux(lua, args, false))?,
    )?;
    table.set("gmatch", lua.create_function(gmatch)?)?;
    table.set("gsub", lua.create_function(gsub)?)?;
    Ok(table)
}

fn type_name(value: &LuaValue) -> &'static str {
    match value {
        LuaValue::Integer(_) | LuaValue::Number(_) => "number",
        LuaValue::LightUserData(_) => "userdata",
        other => other.type_name(),
    }
}

fn bad_argument(n: usize, function: &str, message: String) -> mlua::Error {
    mlua::Error::runtime(format!("bad argument #{n} to '{function}' ({message})"))
}

/// `luaL_checklstring`: strings, and numbers converted to strings.
fn check_bytes(lua: &Lua, args: &MultiValue, n: usize, function: &str) -> mlua::Result<Vec<u8>> {
    let value = args.get(n - 1).cloned().unwrap_or(LuaValue::Nil);
    match &value {
        LuaValue::String(s) => Ok(s.as_bytes().to_vec()),
        LuaValue::Integer(_) | LuaValue::Number(_) => match lua.coerce_string(value.clone())? {
            Some(s) => Ok(s.as_bytes().to_vec()),
            None => Err(bad_argument(
                n,
                function,
                "string expected, got number".into(),
            )),
        },
        other => Err(bad_argument(
            n,
            function,
            format!("string expected, got {}", no_value(args, n, other)),
        )),
    }
}

fn no_value(args: &MultiValue, n: usize, value: &LuaValue) -> &'static str {
    if args.len() < n {
        "no value"
    } else {
        type_name(value)
    }
}

/// `luaL_optinteger`.
fn opt_integer(
    lua: &Lua,
    args: &MultiValue,
    n: usize,
    function: &str,
    default: i64,
) -> mlua::Result<i64> {
    match args.get(n - 1).cloned().unwrap_or(LuaValue::Nil) {
        LuaValue::Nil => Ok(default),
        LuaValue::Integer(i) => Ok(i),
        value => match lua.coerce_integer(value.clone()) {
            Ok(Some(i)) => Ok(i),
            _ => match value {
                LuaValue::Number(_) => Err(bad_argument(
                    n,
                    function,
                    "number has no integer representation".into(),
                )),
                LuaValue::String(_)
                    if lua.coerce_number(value.clone()).ok().flatten().is_some() =>
                {
                    Err(bad_argument(
                        n,
                        function,
                        "number has no integer representation".into(),
                    ))
                }
                other => Err(bad_argument(
                    n,
                    function,
                    format!("number expected, got {}", type_name(&other)),
                )),
            },
        },
    }
}

/// Asks the clock every few thousand steps: false once the deadline of the code running
/// now has passed (then the clock is marked as tripped, so the call ends as a timeout).
fn budget(lua: &Lua) -> impl FnMut() -> bool + '_ {
    let deadline = clock::current_deadline(lua);
    move || deadline.is_none_or(|d| Instant::now() < d)
}

fn failure(lua: &Lua, failure: Failure) -> mlua::Error {
    match failure {
        Failure::Error(message) => mlua::Error::runtime(message),
        Failure::Stopped => clock::trip(lua),
    }
}

/// One capture as a Lua value (`get_onecapture`): `i` past the captures means the whole
/// match `s..e` (only for `i == 0`).
fn capture(lua: &Lua, ms: &MatchState<'_>, i: usize, s: usize, e: usize) -> mlua::Result<LuaValue> {
    if i >= ms.level {
        if i != 0 {
            return Err(mlua::Error::runtime(format!(
                "invalid capture index %{}",
                i + 1
            )));
        }
        return lua.create_string(&ms.src[s..e]).map(LuaValue::String);
    }
    match ms.capture[i] {
        (_, CapLen::Unfinished) => Err(mlua::Error::runtime("unfinished capture")),
        (init, CapLen::Position) => Ok(LuaValue::Integer(init as i64 + 1)),
        (init, CapLen::Len(len)) => lua
            .create_string(&ms.src[init..init + len])
            .map(LuaValue::String),
    }
}

/// All captures (`push_captures`); with no captures, the whole match when `whole` is set.
fn captures(
    lua: &Lua,
    ms: &MatchState<'_>,
    whole: Option<(usize, usize)>,
) -> mlua::Result<Vec<LuaValue>> {
    let count = if ms.level == 0 && whole.is_some() {
        1
    } else {
        ms.level
    };
    let (s, e) = whole.unwrap_or((0, 0));
    (0..count).map(|i| capture(lua, ms, i, s, e)).collect()
}

fn find_aux(lua: &Lua, args: MultiValue, find: bool) -> mlua::Result<MultiValue> {
    let name = if find { "find" } else { "match" };
    let src = check_bytes(lua, &args, 1, name)?;
    let pat = check_bytes(lua, &args, 2, name)?;
    let init = start_position(opt_integer(lua, &args, 3, name, 1)?, src.len()) - 1;
    if init > src.len() {
        return Ok(MultiValue::from_vec(vec![LuaValue::Nil]));
    }
    let plain = args
        .get(3)
        .is_some_and(|v| !matches!(v, LuaValue::Nil | LuaValue::Boolean(false)));
    if find && (plain || no_specials(&pat)) {
        return Ok(match find_plain(&src[init..], &pat) {
            Some(at) => {
                let start = init + at;
                MultiValue::from_vec(vec![
                    LuaValue::Integer(start as i64 + 1),
                    LuaValue::Integer((start + pat.len()) as i64),
                ])
            }
            None => MultiValue::from_vec(vec![LuaValue::Nil]),
        });
    }
    let anchor = pat.first() == Some(&b'^');
    let pat = if anchor { &pat[1..] } else { &pat[..] };
    let mut keep_going = budget(lua);
    let mut ms = MatchState::new(&src, pat, &mut keep_going);
    let mut s1 = init;
    loop {
        ms.reset();
        if let Some(end) = ms.do_match(s1, 0).map_err(|f| failure(lua, f))? {
            return Ok(MultiValue::from_vec(if find {
                let mut out = vec![
                    LuaValue::Integer(s1 as i64 + 1),
                    LuaValue::Integer(end as i64),
                ];
                out.extend(captures(lua, &ms, None)?);
                out
            } else {
                captures(lua, &ms, Some((s1, end)))?
            }));
        }
        s1 += 1;
        if s1 > src.len() || anchor {
            break;
        }
    }
    Ok(MultiValue::from_vec(vec![LuaValue::Nil]))
}

fn gmatch(lua: &Lua, args: MultiValue) -> mlua::Result<Function> {
    let src = check_bytes(lua, &args, 1, "gmatch")?;
    let pat = check_bytes(lua, &args, 2, "gmatch")?;
    let mut position = start_position(opt_integer(lua, &args, 3, "gmatch", 1)?, src.len()) - 1;
    if position > src.len() {
        position = src.len() + 1;
    }
    let mut last_match: Option<usize> = None;
    lua.create_function_mut(move |lua, ()| {
        let mut keep_going = budget(lua);
        let mut ms = MatchState::new(&src, &pat, &mut keep_going);
        let mut start = position;
        while start <= src.len() {
            ms.reset();
            if let Some(end) = ms.do_match(start, 0).map_err(|f| failure(lua, f))?
                && Some(end) != last_match
            {
                position = end;
                last_match = Some(end);
                return captures(lua, &ms, Some((start, end))).map(MultiValue::from_vec);
            }
            start += 1;
        }
        position = start;
        Ok(MultiValue::new())
    })
}

/// Appends a string replacement with `%0`–`%9` and `%%` expanded (`add_s`).
fn add_string(
    lua: &Lua,
    out: &mut Vec<u8>,
    ms: &MatchState<'_>,
    repl: &[u8],
    s: usize,
    e: usize,
) -> mlua::Result<()> {
    let mut i = 0;
    while i < repl.len() {
        let c = repl[i];
        i += 1;
        if c != b'%' {
            out.push(c);
            continue;
        }
        let next = repl.get(i).copied().unwrap_or(0);
        i += 1;
        match next {
            b'%' => out.push(b'%'),
            b'0' => out.extend_from_slice(&ms.src[s..e]),
            d if d.is_ascii_digit() => match capture(lua, ms, (d - b'1') as usize, s, e)? {
                LuaValue::String(text) => out.extend_from_slice(&text.as_bytes()),
                LuaValue::Integer(position) => {
                    out.extend_from_slice(position.to_string().as_bytes())
                }
                _ => {}
            },
            _ => {
                return Err(mlua::Error::runtime(
                    "invalid use of '%' in replacement string",
                ));
            }
        }
    }
    Ok(())
}

fn gsub(lua: &Lua, args: MultiValue) -> mlua::Result<(LuaValue, i64)> {
    let src = check_bytes(lua, &args, 1, "gsub")?;
    let pat = check_bytes(lua, &args, 2, "gsub")?;
    let repl = args.get(2).cloned().unwrap_or(LuaValue::Nil);
    let max = opt_integer(lua, &args, 4, "gsub", src.len() as i64 + 1)?;
    let repl_text = match &repl {
        LuaValue::String(_) | LuaValue::Integer(_) | LuaValue::Number(_) => {
            Some(check_bytes(lua, &args, 3, "gsub")?)
        }
        LuaValue::Function(_) | LuaValue::Table(_) => None,
        other => {
            return Err(bad_argument(
                3,
                "gsub",
                format!(
                    "string/function/table expected, got {}",
                    no_value(&args, 3, other)
                ),
            ));
        }
    };
    let anchor = pat.first() == Some(&b'^');
    let pat = if anchor { &pat[1..] } else { &pat[..] };
    let mut keep_going = budget(lua);
    let mut ms = MatchState::new(&src, pat, &mut keep_going);
    let mut out: Vec<u8> = Vec::with_capacity(src.len());
    let mut s = 0usize;
    let mut last_match: Option<usize> = None;
    let mut n: i64 = 0;
    let mut changed = false;
    while n < max {
        ms.reset();
        let found = ms.do_match(s, 0).map_err(|f| failure(lua, f))?;
        if let Some(e) = found
            && Some(e) != last_match
        {
            n += 1;
            changed |= add_value(lua, &mut out, &ms, &repl, repl_text.as_deref(), s, e)?;
            s = e;
            last_match = Some(e);
        } else if s < src.len() {
            out.push(src[s]);
            s += 1;
        } else {
            break;
        }
        if anchor {
            break;
        }
    }
    let result = if changed {
        out.extend_from_slice(&src[s.min(src.len())..]);
        LuaValue::String(lua.create_string(&out)?)
    } else {
        match args.front() {
            Some(LuaValue::String(original)) => LuaValue::String(original.clone()),
            _ => LuaValue::String(lua.create_string(&src)?),
        }
    };
    Ok((result, n))
}

/// Appends the replacement of one match (`add_value`); true when the subject changed.
fn add_value(
    lua: &Lua,
    out: &mut Vec<u8>,
    ms: &MatchState<'_>,
    repl: &LuaValue,
    repl_text: Option<&[u8]>,
    s: usize,
    e: usize,
) -> mlua::Result<bool> {
    if let Some(text) = repl_text {
        add_string(lua, out, ms, text, s, e)?;
        return Ok(true);
    }
    let value: LuaValue = match repl {
        LuaValue::Function(f) => f.call(MultiValue::from_vec(captures(lua, ms, Some((s, e)))?))?,
        LuaValue::Table(t) => t.get(capture(lua, ms, 0, s, e)?)?,
        _ => LuaValue::Nil,
    };
    match value {
        LuaValue::Nil | LuaValue::Boolean(false) => {
            out.extend_from_slice(&ms.src[s..e]);
            Ok(false)
        }
        LuaValue::String(text) => {
            out.extend_from_slice(&text.as_bytes());
            Ok(true)
        }
        number @ (LuaValue::Integer(_) | LuaValue::Number(_)) => {
            if let Some(text) = lua.coerce_string(number)? {
                out.extend_from_slice(&text.as_bytes());
            }
            Ok(true)
        }
        other => Err(mlua::Error::runtime(format!(
            "invalid replacement value (a {})",
            type_name(&other)
        ))),
    }
}

#[cfg(test)]
mod tests;

//! The host side of `ctx.ask`, `ctx.roots`, `ctx.sample` and `ctx.all` (the Lua side is in
//! the bootstrap): a request is checked ([`ask_spec`](super::ask_spec)), keyed
//! ([`asking`](crate::lua::call::asking)) and handed to the call's
//! [`Asker`](crate::registry::Asker); a `ctx.all` round hands over every request its
//! functions made together. Awaiting the answer happens inside the handler's future, so
//! the call's deadline and cancellation stop it like any host call.

use super::ask_spec::{self, InputFn};
use crate::lua::call::current::{self, CurrentCall};
use crate::lua::convert::{self, Mode};
use crate::registry::{InputAnswer, InputKind, InputRequest, ask_round_guarded, supports_guarded};
use mlua::{Function, Lua, Table, Value as LuaValue};
use serde_json::{Value, json};
use std::sync::Arc;

/// Why nobody answers a request of a call without an asker.
const NO_ASKER: &str = "nobody can answer it here (the call has no MCP client or asker)";

/// `input` (`ctx.ask`, `ctx.roots`, `ctx.sample` on the handler thread): one request,
/// awaited.
pub(super) fn input(lua: &Lua) -> mlua::Result<Function> {
    lua.create_async_function(|lua, (name, spec): (String, LuaValue)| async move {
        let (function, kind, key) = checked(&lua, &name, spec).map_err(mlua::Error::runtime)?;
        let call = current::get(&lua);
        let key = match &call {
            Some(call) => call
                .asking
                .lock()
                .plain_key(key)
                .map_err(|e| mlua::Error::runtime(format!("{}: {e}", function.label())))?,
            None => String::new(),
        };
        let mut answers = ask(call.as_ref(), vec![InputRequest::new(key, kind.clone())]).await;
        let answer = answers.pop().unwrap_or(InputAnswer::Cancel);
        to_lua(&lua, function, &kind, answer).map_err(mlua::Error::runtime)
    })
}

/// Adds `all_begin` and `all_end` to the bootstrap's `host` table (`input` and `all_round`
/// await, so they are made at first use: [`input`], [`all_round`]).
pub(crate) fn install(lua: &Lua, host: &Table) -> mlua::Result<()> {
    host.set(
        "all_begin",
        lua.create_function(|lua, ()| {
            if let Some(call) = current::get(lua) {
                call.asking
                    .lock()
                    .begin_group()
                    .map_err(mlua::Error::runtime)?;
            }
            Ok(())
        })?,
    )?;
    host.set(
        "all_end",
        lua.create_function(|lua, ()| {
            if let Some(call) = current::get(lua) {
                call.asking.lock().end_group();
            }
            Ok(())
        })?,
    )?;
    Ok(())
}

/// One round of `ctx.all`: `{ {index, name, spec}, ... }` → `{ {ok, value}, ... }` in the
/// same order (`value`: the answer, or the message a bad request raises).
pub(super) fn all_round(lua: &Lua) -> mlua::Result<Function> {
    lua.create_async_function(|lua, round: Table| async move {
        let call = current::get(&lua);
        let mut outcomes: Vec<Result<(InputFn, InputKind), String>> = Vec::new();
        let mut requests = Vec::new();
        for item in round.sequence_values::<Table>() {
            let item = item?;
            let index: usize = item.get("index")?;
            let name: String = item.get("name")?;
            let spec: LuaValue = item.get("spec")?;
            let outcome = checked(&lua, &name, spec).and_then(|(function, kind, key)| {
                let key = match &call {
                    Some(call) => call
                        .asking
                        .lock()
                        .group_key(index, key)
                        .map_err(|e| format!("{}: {e}", function.label()))?,
                    None => String::new(),
                };
                requests.push(InputRequest::new(key, kind.clone()));
                Ok((function, kind))
            });
            outcomes.push(outcome);
        }
        let mut answers = ask(call.as_ref(), requests).await.into_iter();
        let out = lua.create_table()?;
        for outcome in outcomes {
            let entry = lua.create_table()?;
            let value = outcome.and_then(|(function, kind)| {
                let answer = answers.next().unwrap_or(InputAnswer::Cancel);
                to_lua(&lua, function, &kind, answer)
            });
            match value {
                Ok(value) => {
                    entry.set("ok", true)?;
                    entry.set("value", value)?;
                }
                Err(message) => {
                    entry.set("ok", false)?;
                    entry.set("value", message)?;
                }
            }
            out.push(entry)?;
        }
        Ok(out)
    })
}

/// What `ctx.NAME` was given, checked: the function, the request and the author's key.
fn checked(
    lua: &Lua,
    name: &str,
    spec: LuaValue,
) -> Result<(InputFn, InputKind, Option<String>), String> {
    let function = InputFn::parse(name).ok_or_else(|| format!("unknown input function {name}"))?;
    let spec = match spec {
        LuaValue::Nil => Value::Null,
        other => convert::lua_to_json(lua, &other, Mode::Schema).map_err(|e| {
            format!(
                "{}: the table holds {} at {}",
                function.label(),
                e.reason,
                e.path
            )
        })?,
    };
    let (key, kind) = ask_spec::parse(function, spec)?;
    Ok((function, kind, key))
}

/// The answers to `requests` (one round), in order: by the call's asker, or as nobody
/// can answer them. A request whose capability the asker's client did not declare is
/// answered as if nobody could be asked (a tool that declares it in `needs` is refused
/// before it runs instead).
async fn ask(call: Option<&Arc<CurrentCall>>, requests: Vec<InputRequest>) -> Vec<InputAnswer> {
    let Some(asker) = call.and_then(|call| call.asker.clone()) else {
        return requests
            .iter()
            .map(|r| InputAnswer::unanswered(&r.kind, NO_ASKER))
            .collect();
    };
    let mut answers: Vec<Option<InputAnswer>> = Vec::with_capacity(requests.len());
    let mut asked = Vec::new();
    for request in requests {
        let capability = request.kind.capability();
        if supports_guarded(&*asker, capability) {
            answers.push(None);
            asked.push(request);
        } else {
            answers.push(Some(InputAnswer::unanswered(
                &request.kind,
                &format!("the client did not declare the '{capability}' capability"),
            )));
        }
    }
    let mut given = if asked.is_empty() {
        Vec::new()
    } else {
        ask_round_guarded(&*asker, asked).await
    }
    .into_iter();
    answers
        .into_iter()
        .map(|a| a.unwrap_or_else(|| given.next().unwrap_or(InputAnswer::Cancel)))
        .collect()
}

/// The Lua value of an answer to `function`'s request: the documented tables, or the
/// message to raise for a failed request and for an answer of the wrong kind.
fn to_lua(
    lua: &Lua,
    function: InputFn,
    kind: &InputKind,
    answer: InputAnswer,
) -> Result<LuaValue, String> {
    if let InputAnswer::Failed { message } = &answer {
        return Err(if message.starts_with(function.label()) {
            message.clone()
        } else {
            format!("{}: {message}", function.label())
        });
    }
    if !answer.fits(kind) {
        return Err(format!(
            "{}: the answer does not fit the request ({})",
            function.label(),
            serde_json::to_string(&answer).unwrap_or_default()
        ));
    }
    if let (InputAnswer::Accept { content }, InputKind::Elicitation { schema, .. }) =
        (&answer, kind)
    {
        ask_spec::check_content(schema, content)
            .map_err(|e| format!("{}: {e}", function.label()))?;
    }
    let value = match answer {
        InputAnswer::Accept { content } => json!({"action": "accept", "content": content}),
        InputAnswer::Decline => json!({"action": "decline"}),
        InputAnswer::Cancel => json!({"action": "cancel"}),
        InputAnswer::Roots { roots } => Value::Array(
            roots
                .into_iter()
                .map(|root| match root.name {
                    Some(name) => json!({"uri": root.uri, "name": name}),
                    None => json!({"uri": root.uri}),
                })
                .collect(),
        ),
        InputAnswer::Sampled(sampled) => {
            json!({"role": sampled.role, "content": sampled.content, "model": sampled.model})
        }
        InputAnswer::Failed { .. } => Value::Null,
    };
    convert::json_to_lua(lua, &value).map_err(|e| format!("{}: {e}", function.label()))
}

//! The host API offered to tool code, defined in one table ([`catalogue`]): the VM installs
//! the Lua functions from it, and the LuaLS stubs (`toolhost stubs`) are generated from
//! it, so the two can never drift apart.

pub(crate) mod fs;
pub(crate) mod json;
pub(crate) mod log;
pub(crate) mod proc;
pub(crate) mod proc_script;
pub(crate) mod store;
#[cfg(feature = "cli")]
pub(crate) mod stubs;
pub(crate) mod time;

pub(crate) mod effect;
pub(crate) mod env;

use crate::fs_roots::FsRoots;
use mlua::{Lua, Table, Value as LuaValue};
use std::sync::Arc;

/// What host functions are built with.
#[derive(Debug, Clone)]
pub(crate) struct ApiContext {
    /// Where `fs` may read and write.
    pub fs_roots: Arc<FsRoots>,
    /// Programs `proc.run` may start (`[sandbox] commands`).
    pub commands: Arc<[String]>,
    /// Variables `proc.run` children get besides PATH, HOME, LANG (`[sandbox] proc_env`).
    pub proc_env: Arc<[String]>,
    /// The key/value store shared by every VM.
    pub store: Arc<crate::store::StoreInner>,
    /// The environment `env.get` and `proc.run` children read.
    pub env: crate::env_vars::EnvVars,
    /// Scripted `proc.run` answers (`toolhost test`'s `t.proc`): no program ever runs.
    pub proc_script: Option<Arc<proc_script::ProcScript>>,
}

/// Builds one host function (or value) for a VM.
pub(crate) type Maker = fn(&Lua, &ApiContext) -> mlua::Result<LuaValue>;

/// How a host function may be called.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Calling {
    /// Anywhere: at load time, in probes, in handlers, in coroutines.
    Anywhere,
    /// Only on a handler's own thread (it awaits: at load time or inside
    /// `coroutine.create`/`wrap` there is nobody to await it).
    HandlerOnly,
    /// Anywhere; on a handler's own thread this async variant is used instead, so the VM
    /// serves other calls meanwhile.
    AsyncInHandler(Maker),
}

/// One entry of the host API. (Its documentation fields feed `toolhost stubs`, so a
/// library-only build does not read them.)
#[derive(Clone)]
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) struct ApiFunction {
    /// The module table (`json`, `fs`, …).
    pub module: &'static str,
    /// The field name.
    pub name: &'static str,
    /// Parameters as (name, LuaLS type); a trailing `?` in the name marks it optional.
    pub params: &'static [(&'static str, &'static str)],
    /// LuaLS return type (empty for none; a value for constants).
    pub returns: &'static str,
    /// One-line documentation.
    pub doc: &'static str,
    /// Builds it.
    pub make: Maker,
    /// Where it may be called.
    pub calling: Calling,
    /// A constant (like `json.null`) rather than a function.
    pub constant: bool,
}

/// One module of the host API.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) struct ApiModule {
    /// The global name.
    pub name: &'static str,
    /// What it is for.
    pub doc: &'static str,
}

/// The modules, in the order the stubs list them. Each is also a capability name.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) const MODULES: &[ApiModule] = &[
    ApiModule {
        name: "json",
        doc: "JSON encoding and decoding",
    },
    ApiModule {
        name: "log",
        doc: "Logging to the host's log (stderr); `print` logs at info",
    },
    ApiModule {
        name: "time",
        doc: "Clock and sleeping; every duration is in milliseconds",
    },
    ApiModule {
        name: "env",
        doc: "Environment variables the calling tool declared in `requires_env` (or `[sandbox] env` allows)",
    },
    ApiModule {
        name: "fs",
        doc: "Files inside `[sandbox] fs_roots` (default: the working directory); relative paths resolve against the first root",
    },
    ApiModule {
        name: "proc",
        doc: "Running programs listed in `[sandbox] commands`, without a shell",
    },
    ApiModule {
        name: "store",
        doc: "Durable JSON values by key (SQLite), one namespace per plugin; survive restarts",
    },
];

/// Every host function, module by module.
pub(crate) fn catalogue() -> Vec<ApiFunction> {
    let mut all = Vec::new();
    all.extend(json::functions());
    all.extend(log::functions());
    all.extend(time::functions());
    all.extend(env::functions());
    all.extend(fs::functions());
    all.extend(proc::functions());
    all.extend(store::functions());
    all
}

/// The pieces the bootstrap assembles the libraries from: `api` (module → name →
/// function), `async` (the in-handler variants), `handler_only` (module → name → true) and
/// `writes` (module → name → true: refused in a read-only call, see `effect`).
pub(crate) fn install(lua: &Lua, ctx: &ApiContext) -> mlua::Result<Table> {
    let api = lua.create_table()?;
    let asynchronous = lua.create_table()?;
    let handler_only = lua.create_table()?;
    let writes = lua.create_table()?;
    for function in catalogue() {
        if effect::effect_of(function.module, function.name).is_some_and(effect::is_write) {
            module_table(lua, &writes, function.module)?.raw_set(function.name, true)?;
        }
        let module = module_table(lua, &api, function.module)?;
        module.raw_set(function.name, (function.make)(lua, ctx)?)?;
        match function.calling {
            Calling::Anywhere => {}
            Calling::HandlerOnly => {
                module_table(lua, &handler_only, function.module)?.raw_set(function.name, true)?;
            }
            Calling::AsyncInHandler(make) => {
                module_table(lua, &asynchronous, function.module)?
                    .raw_set(function.name, make(lua, ctx)?)?;
            }
        }
    }
    let parts = lua.create_table()?;
    parts.raw_set("api", api)?;
    parts.raw_set("async", asynchronous)?;
    parts.raw_set("handler_only", handler_only)?;
    parts.raw_set("writes", writes)?;
    Ok(parts)
}

fn module_table(lua: &Lua, parent: &Table, name: &str) -> mlua::Result<Table> {
    match parent.raw_get::<Option<Table>>(name)? {
        Some(table) => Ok(table),
        None => {
            let table = lua.create_table()?;
            parent.raw_set(name, &table)?;
            Ok(table)
        }
    }
}

/// Wraps a Rust closure as a Lua function value.
pub(crate) fn function<A, R, F>(lua: &Lua, f: F) -> mlua::Result<LuaValue>
where
    A: mlua::FromLuaMulti,
    R: mlua::IntoLuaMulti,
    F: Fn(&Lua, A) -> mlua::Result<R> + mlua::MaybeSend + 'static,
{
    lua.create_function(f).map(LuaValue::Function)
}

/// An error raised by host function `module.name`.
pub(crate) fn failure(module: &str, name: &str, reason: impl std::fmt::Display) -> mlua::Error {
    mlua::Error::runtime(format!("{module}.{name}: {reason}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_function_belongs_to_a_known_module_and_is_documented() {
        let modules: Vec<&str> = MODULES.iter().map(|m| m.name).collect();
        for function in catalogue() {
            assert!(modules.contains(&function.module), "{}", function.module);
            assert!(
                !function.doc.is_empty(),
                "{}.{}",
                function.module,
                function.name
            );
        }
        for module in MODULES {
            assert!(
                catalogue().iter().any(|f| f.module == module.name),
                "{} is empty",
                module.name
            );
        }
    }
}

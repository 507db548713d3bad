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
use mlua::{Function, Lua, Table, Value as LuaValue};
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
    /// `coroutine.create`/`wrap` there is nobody to await it). Made when a VM first calls
    /// it ([`make_awaiting`]).
    HandlerOnly,
    /// Anywhere; on a handler's own thread this async variant is used instead, so the VM
    /// serves other calls meanwhile (made when a VM first needs it, [`make_awaiting`]).
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
/// function, or `true` for a handler-only one), `async` (module → name → `true`: an
/// in-handler variant exists), `handler_only` (module → name → true) and `writes` (module →
/// name → true: refused in a read-only call, see `effect`). The functions that await — a
/// handler-only one, an in-handler variant — are made at first use by
/// [`make_awaiting`] (see `lua::vm::awaiting`).
pub(crate) fn install(lua: &Lua, ctx: &ApiContext) -> mlua::Result<Table> {
    let api = lua.create_table()?;
    let asynchronous = lua.create_table()?;
    let handler_only = lua.create_table()?;
    let writes = lua.create_table()?;
    let catalogue = catalogue();
    // The catalogue lists each module's functions together (a test checks it).
    for functions in catalogue.chunk_by(|a, b| a.module == b.module) {
        let module = functions[0].module;
        let lib = lua.create_table()?;
        let (mut awaits, mut only, mut write) = (None, None, None);
        for function in functions {
            let value = match function.calling {
                Calling::Anywhere => (function.make)(lua, ctx)?,
                Calling::HandlerOnly => {
                    mark(lua, &mut only, function.name)?;
                    LuaValue::Boolean(true)
                }
                Calling::AsyncInHandler(_) => {
                    mark(lua, &mut awaits, function.name)?;
                    (function.make)(lua, ctx)?
                }
            };
            lib.raw_set(function.name, value)?;
            if effect::effect_of(module, function.name).is_some_and(effect::is_write) {
                mark(lua, &mut write, function.name)?;
            }
        }
        api.raw_set(module, lib)?;
        for (parent, table) in [
            (&asynchronous, awaits),
            (&handler_only, only),
            (&writes, write),
        ] {
            if let Some(table) = table {
                parent.raw_set(module, table)?;
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

/// Sets `name = true` in the table of `slot`, made first if there is none yet.
fn mark(lua: &Lua, slot: &mut Option<Table>, name: &str) -> mlua::Result<()> {
    let table = match slot {
        Some(table) => table,
        None => slot.insert(lua.create_table()?),
    };
    table.raw_set(name, true)
}

/// The function that awaits for `key` (`module.name`): a handler-only function, or the
/// in-handler variant of one callable anywhere. Made when a VM first calls it.
pub(crate) fn make_awaiting(lua: &Lua, ctx: &ApiContext, key: &str) -> mlua::Result<Function> {
    let (module, name) = key.split_once('.').unwrap_or((key, ""));
    let function = catalogue()
        .into_iter()
        .find(|f| f.module == module && f.name == name)
        .ok_or_else(|| mlua::Error::runtime(format!("no host function {key}")))?;
    let made = match function.calling {
        Calling::HandlerOnly => (function.make)(lua, ctx)?,
        Calling::AsyncInHandler(make) => make(lua, ctx)?,
        Calling::Anywhere => return Err(mlua::Error::runtime(format!("{key} does not await"))),
    };
    match made {
        LuaValue::Function(function) => Ok(function),
        _ => Err(mlua::Error::runtime(format!("{key} is not a function"))),
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

    #[test]
    fn each_modules_functions_are_listed_together() {
        let catalogue = catalogue();
        let groups: Vec<&str> = catalogue
            .chunk_by(|a, b| a.module == b.module)
            .map(|group| group[0].module)
            .collect();
        let mut distinct = groups.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(groups.len(), distinct.len(), "{groups:?}");
    }
}

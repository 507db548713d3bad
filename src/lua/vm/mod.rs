//! One sandboxed Lua state with the tool files loaded into it.
//!
//! The VM owns the Lua functions of every registered tool, keyed by [`LuaFnId`]: an id
//! derived from the file's position in the load order and the registration's position in
//! the file, so every VM of a pool that loads the same files gets the same ids and the
//! registry stays independent of any Lua state.

mod ask;
mod ask_spec;
mod awaiting;
pub(crate) mod bootstrap;
mod call_values;
mod lazy;
mod module_view;
pub(crate) mod pool;
pub(crate) use module_view::ModuleView;
#[cfg(feature = "cli")]
mod test_file;

pub(crate) use lazy::LazyFile;

use crate::error::LoadError;
use crate::lua::api::env::EnvPolicy;
use crate::lua::api::{self, ApiContext};
use crate::lua::call::clock::{self, CallClock};
use crate::lua::call::{current, timer};
use crate::lua::convert::{self, Mode};
use crate::lua::error_text::{self, lua_error_message};
use crate::lua::register::{self, Binding, LoadSlot, LoadingFile};
use crate::lua::sandbox::require::{self, ModuleCache, RequireContext, SearchDir};
use crate::lua::sandbox::{depth, patterns};
use crate::registry::{CallContext, CallerDomain, FnRole, LuaFnId};
use mlua::chunk::ChunkMode;
use mlua::{Function, Lua, LuaOptions, StdLib, Table, Value as LuaValue};
use parking_lot::{Mutex, ReentrantMutex};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Maps looked up on every call, keyed by the host's own ids (no input picks a key):
/// foldhash, not SipHash.
type FastMap<K, V> = foldhash::HashMap<K, V>;

/// How VMs are set up (from `[sandbox]` and `[runtime]`).
#[derive(Debug, Clone)]
pub(crate) struct VmSettings {
    /// What the host API's functions are built with: the `fs` roots, the programs and
    /// variables of `proc.run`, the store, the environment tools see, `toolhost test`'s
    /// scripted `proc.run` answers.
    pub api: ApiContext,
    /// Environment variables every tool may read.
    pub sandbox_env: Vec<String>,
    /// Per-VM memory limit in bytes; `None` for unlimited.
    pub memory_limit_bytes: Option<usize>,
    /// How long a tool file's top-level code, a `check_fn` or a
    /// `dynamic_schema_overrides` call may run (`[runtime] probe_timeout_ms`).
    pub probe_timeout: Duration,
}

/// One file to run: where it is, how it is shown, where its modules come from and what it
/// may use.
#[derive(Debug, Clone)]
pub(crate) struct FileSpec<'a> {
    /// The file as shown to operators (load errors): the tool directory as configured.
    pub display: &'a str,
    /// The name Lua gives the chunk (error positions, which reach models): the path inside
    /// its tool directory, never an absolute host path.
    pub chunk_name: &'a str,
    /// The file's index in the load order: its identity for `env.get` grants.
    pub index: u32,
    /// Its trust domain (`builtin`, `plugin:<id>`): which module instances it shares.
    pub domain: Arc<str>,
    /// Folders `require` searches, in order.
    pub search_dirs: Arc<[SearchDir]>,
    /// Host-API tables granted; `None` grants all (built-in tools).
    pub capabilities: Option<&'a [String]>,
    /// How to grant a missing capability (for the error message), e.g.
    /// ` to plugin 'acme': add "fs" to [plugins.acme] capabilities`.
    pub capability_hint: Option<&'a str>,
}

/// A handler's value, normalised by the return rules of docs/lua-api.md.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Returned {
    /// A string.
    Text(String),
    /// A table, as JSON.
    Json(Value),
    /// A multimodal envelope table, as a JSON object.
    Multimodal(Value),
}

/// Why a handler call produced no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HandlerFailure {
    /// The handler raised; the message names file:line.
    Raised(String),
    /// The handler returned something that is not a string, table or envelope; the text is
    /// the offending type (and path for a table holding a bad value).
    Contract(String),
    /// The VM ran out of memory.
    Memory,
    /// The handler ran past its deadline (it was stopped).
    Timeout,
}

/// Why a probe (`dynamic_schema_overrides`) or a hook gave no usable answer; its `Display`
/// is the message operators and models read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FunctionFailed {
    /// It raised, ran past its deadline or could not be called: the Lua error's message.
    #[error("{0}")]
    Raised(String),
    /// Its value holds something JSON cannot (the path to it and why).
    #[error("returned {0}")]
    NotJson(convert::ConvertError),
    /// It returned a list where a table of schema fields belongs.
    #[error("returned a list, not a table of schema fields")]
    List,
    /// It returned this Lua type, not a table.
    #[error("returned a {0}, not a table")]
    NotATable(&'static str),
}

impl FunctionFailed {
    fn raised(error: &mlua::Error) -> Self {
        Self::Raised(lua_error_message(error))
    }
}

/// A sandboxed Lua state plus the functions registered into it.
pub(crate) struct LuaVm {
    lua: Lua,
    make_env: Function,
    invoke: Function,
    /// `invoke` for a handler that cannot see its `ctx` (see [`LuaVm::sees_ctx`]).
    invoke_plain: Function,
    /// Whether each handler called so far can see a second argument, with the identity of
    /// the Lua function that was checked (an id adopted again checks its new function).
    sees_ctx: Mutex<FastMap<LuaFnId, (usize, bool)>>,
    /// Makes the hidden half of a `ctx.caller` (its metatable) for `call_values`.
    caller_metatable: Function,
    /// Lua values every handler call is handed, kept between calls.
    call_values: call_values::CallValues,
    /// Opens a new synchronous run (file, probe, hook): coroutines created by an earlier
    /// run cannot be resumed by it.
    begin_sync: Function,
    /// Numbers the runs of tool files (each run's `registry` binding works only for it).
    load_tokens: AtomicU64,
    functions: Mutex<FastMap<LuaFnId, Function>>,
    /// Files whose registrations came from the cache, run at the first use of a function
    /// (see [`lazy`]).
    pending: Mutex<FastMap<u32, lazy::Pending>>,
    /// Probe functions adopted so far, by Lua identity, so that a function shared by many
    /// tools (a toolset-wide `check_fn`) gets one id and one cached answer.
    shared: HashMap<usize, LuaFnId>,
    /// Deadline for probes, hooks and top-level file code.
    probe_timeout: Duration,
    /// Held while Lua runs under a deadline: the VM has one current deadline, so two OS
    /// threads must not run code on it at once (mlua would serialise them anyway).
    running: ReentrantMutex<()>,
}

impl LuaVm {
    /// Creates the state: safe standard libraries only, the host API, the bootstrap.
    pub(crate) fn new(settings: &VmSettings) -> mlua::Result<Self> {
        let libs = StdLib::STRING
            | StdLib::TABLE
            | StdLib::MATH
            | StdLib::UTF8
            | StdLib::COROUTINE
            | StdLib::OS;
        let lua = Lua::new_with(libs, LuaOptions::new().thread_pool_size(64))?;
        if let Some(limit) = settings.memory_limit_bytes {
            lua.set_memory_limit(limit)?;
        }
        lua.set_app_data(LoadSlot::default());
        clock::install(&lua)?;
        current::install(&lua);
        lua.set_app_data(ModuleCache::default());
        lua.set_app_data(EnvPolicy {
            everyone: settings.sandbox_env.iter().cloned().collect(),
            by_file: Default::default(),
        });
        // string.dump would hand out bytecode; the string metatable must not be reachable
        // (getmetatable("").__index would be every file's string library).
        let globals = lua.globals();
        let string: Table = globals.get("string")?;
        string.set("dump", LuaValue::Nil)?;
        lua.load(r#"getmetatable("").__metatable = false"#).exec()?;

        convert::install_array_marker(&lua)?;
        let host = lua.create_table()?;
        host.set("api", api::install(&lua, &settings.api)?)?;
        host.set(
            "print",
            api::log::logger(&lua, crate::registry::LogLevel::Info)?,
        )?;
        // `ctx.progress(done, total?, message?)`: reports to the running call's observer.
        host.set(
            "progress",
            lua.create_function(
                |lua, (done, total, message): (f64, Option<f64>, Option<String>)| {
                    if !done.is_finite() || total.is_some_and(|t| !t.is_finite()) {
                        return Err(mlua::Error::runtime(
                            "ctx.progress: done and total must be finite numbers",
                        ));
                    }
                    current::progress(lua, crate::registry::Progress::new(done, total, message));
                    Ok(())
                },
            )?,
        )?;
        // The host functions that await (`ctx.call`, input requests, `proc.run`, …), made
        // at their first use (see `awaiting`).
        host.set("make_awaiting", awaiting::maker(&lua, &settings.api)?)?;
        // `ctx.ask`, `ctx.roots`, `ctx.sample`, `ctx.all`.
        ask::install(&lua, &host)?;
        host.set("patterns", patterns::install(&lua)?)?;
        // Called by the host-API glue when code outside a handler reads the world (see
        // `LoadingFile::impure`).
        host.set(
            "note_impure",
            lua.create_function(|lua, ()| {
                register::note_impure(lua);
                Ok(())
            })?,
        )?;
        // Called by the host-API glue before every write (see `api::effect`): the refusal
        // when the running call is served read-only, else nil.
        host.set(
            "write_refusal",
            lua.create_function(|lua, label: String| Ok(current::write_refusal(lua, &label)))?,
        )?;
        host.set(
            "prescan",
            lua.create_function(|_, (chunk, name): (mlua::LuaString, Option<String>)| {
                let shown = name.as_deref().unwrap_or("load");
                let shown = shown.trim_start_matches(['=', '@']);
                Ok(depth::prescan(&chunk.as_bytes(), depth::MAX_NESTING)
                    .map(|refusal| depth::refusal_message(shown, refusal)))
            })?,
        )?;
        // A host error caught in Lua, as the plain message (no mlua wrapping, no traceback).
        host.set(
            "error_text",
            lua.create_function(|_, value: LuaValue| {
                Ok(match value {
                    LuaValue::Error(error) => lua_error_message(&error),
                    other => other.to_string().unwrap_or_default(),
                })
            })?,
        )?;
        let (make_env, invoke, begin_sync, caller_metatable, invoke_plain): (
            Function,
            Function,
            Function,
            Function,
            Function,
        ) = bootstrap::chunk(&lua)?.call(host)?;
        Ok(Self {
            lua,
            make_env,
            invoke,
            invoke_plain,
            sees_ctx: Mutex::new(FastMap::default()),
            caller_metatable,
            call_values: call_values::CallValues::default(),
            begin_sync,
            load_tokens: AtomicU64::new(0),
            functions: Mutex::new(FastMap::default()),
            pending: Mutex::new(FastMap::default()),
            shared: HashMap::new(),
            probe_timeout: settings.probe_timeout,
            running: ReentrantMutex::new(()),
        })
    }

    /// Runs `load` (the loading of every tool file) with the collector stopped: nearly all
    /// a registering file allocates stays alive (its functions, schemas, environment), so
    /// incremental collection during start-up marks the same live objects over and over
    /// (it was a tenth of start-up). Garbage still cannot exceed the memory limit: at the
    /// limit Lua runs an emergency full collection before failing an allocation.
    pub(crate) fn loading_without_gc<R>(&mut self, load: impl FnOnce(&mut Self) -> R) -> R {
        let previous = self
            .lua
            .gc_set_mode(mlua::state::GcMode::Generational(Default::default()));
        let result = load(self);
        self.lua.gc_set_mode(previous);
        result
    }

    /// Runs one tool file in a fresh environment and returns what it registered. On error
    /// (the file raised, or a registration was invalid) nothing is kept.
    pub(crate) fn load_file(
        &self,
        file: &FileSpec<'_>,
        source: &[u8],
    ) -> Result<LoadingFile, LoadError> {
        let token = self.load_tokens.fetch_add(1, Ordering::Relaxed);
        if let Some(mut slot) = self.lua.app_data_mut::<LoadSlot>() {
            slot.0 = Some(LoadingFile {
                token,
                display: file.display.to_string(),
                ..LoadingFile::default()
            });
        }
        let result = self.with_watchdog(|| self.run_file(file, source, token));
        let loading = self
            .lua
            .app_data_mut::<LoadSlot>()
            .and_then(|mut slot| slot.0.take())
            .unwrap_or_default();
        match (result, loading.error) {
            (_, Some(registration_error)) => Err(registration_error),
            (Err(error), None) => {
                // Shown to the operator under the path as configured.
                let text = lua_error_message(&error);
                let text = match text.strip_prefix(file.chunk_name) {
                    Some(rest) => format!("{}{rest}", file.display),
                    None => text,
                };
                Err(LoadError::from_lua(file.display, &text))
            }
            (Ok(()), None) => Ok(LoadingFile {
                error: None,
                ..loading
            }),
        }
    }

    /// Runs synchronous Lua under the probe deadline; running past it is an error.
    fn with_watchdog<R>(&self, f: impl FnOnce() -> mlua::Result<R>) -> mlua::Result<R> {
        self.with_limit(self.probe_timeout, f)
    }

    /// Runs synchronous Lua under a deadline `limit` from now; running past it is an error.
    fn with_limit<R>(
        &self,
        limit: Duration,
        f: impl FnOnce() -> mlua::Result<R>,
    ) -> mlua::Result<R> {
        let _running = self.running.lock();
        let mut call = CallClock::start(limit);
        call.enter(&self.lua);
        let result = self.begin_sync.call::<()>(()).and_then(|()| f());
        call.leave(&self.lua);
        match result {
            Ok(_) if call.tripped => Err(mlua::Error::runtime(clock::timeout_message(limit))),
            other => other,
        }
    }

    fn run_file(&self, file: &FileSpec<'_>, source: &[u8], token: u64) -> mlua::Result<()> {
        let registry = Binding::File {
            token,
            display: file.display.to_string(),
        };
        let env = self.file_env(file, registry)?;
        self.lua
            .load(crate::lua::bom::strip_bom(source))
            .set_name(format!("@{}", file.chunk_name))
            .set_mode(ChunkMode::Text)
            .set_environment(env)
            .exec()
    }

    /// A fresh environment for `file`: its capabilities, its trust domain's modules, and a
    /// `registry` bound as `registry`.
    fn file_env(&self, file: &FileSpec<'_>, registry: Binding) -> mlua::Result<Table> {
        let capabilities = match file.capabilities {
            None => LuaValue::Nil,
            Some(names) => {
                let set = self.lua.create_table()?;
                for name in names {
                    set.set(name.as_str(), true)?;
                }
                LuaValue::Table(set)
            }
        };
        let ctx = Arc::new(RequireContext {
            dirs: file.search_dirs.clone(),
            make_env: self.make_env.clone(),
            domain: file.domain.clone(),
            capabilities: capabilities.clone(),
            hint: file.capability_hint.map(str::to_string),
        });
        let require = require::make_require(&self.lua, ctx)?;
        let registry = register::binding(&self.lua, registry)?;
        self.make_env.call((
            capabilities,
            require,
            registry,
            file.capability_hint,
            file.index,
            &*file.domain,
        ))
    }

    /// Runs a `check_fn` under the probe deadline: its Lua truthiness, or why it failed.
    pub(crate) fn call_check(&self, id: LuaFnId) -> crate::registry::ProbeOutcome {
        use crate::registry::Probed;
        let function = self.function(id).map_err(|e| lua_error_message(&e))?;
        let (answer, reason) = self
            .with_watchdog(|| function.call::<(LuaValue, LuaValue)>(()))
            .map_err(|e| lua_error_message(&e))?;
        if !matches!(answer, LuaValue::Nil | LuaValue::Boolean(false)) {
            return Ok(Probed::Yes);
        }
        // `return false, "why"`: the reason users see (a string, or nothing).
        let reason = match reason {
            LuaValue::String(text) => Some(text.to_string_lossy()).filter(|t| !t.is_empty()),
            _ => None,
        };
        Ok(Probed::No(reason))
    }

    /// Runs a `dynamic_schema_overrides` function under the probe deadline; its result must
    /// be a table of schema fields (nil means no overrides).
    pub(crate) fn call_overrides(
        &self,
        id: LuaFnId,
    ) -> Result<Option<serde_json::Map<String, Value>>, FunctionFailed> {
        let function = self.function(id).map_err(|e| FunctionFailed::raised(&e))?;
        let value = self
            .with_watchdog(|| function.call::<LuaValue>(()))
            .map_err(|e| FunctionFailed::raised(&e))?;
        match value {
            LuaValue::Nil => Ok(None),
            LuaValue::Table(_) => match convert::lua_to_json(&self.lua, &value, Mode::Schema) {
                Ok(Value::Object(map)) => Ok(Some(map)),
                Ok(Value::Array(items)) if items.is_empty() => Ok(None),
                Ok(_) => Err(FunctionFailed::List),
                Err(e) => Err(FunctionFailed::NotJson(e)),
            },
            other => Err(FunctionFailed::NotATable(other.type_name())),
        }
    }

    /// Calls a hook with one table argument (the JSON `payload`) under the probe deadline;
    /// its return value as JSON (nil is null).
    pub(crate) fn call_hook(&self, id: LuaFnId, payload: &Value) -> Result<Value, FunctionFailed> {
        let function = self.function(id).map_err(|e| FunctionFailed::raised(&e))?;
        let argument =
            convert::json_to_lua(&self.lua, payload).map_err(|e| FunctionFailed::raised(&e))?;
        let value = self
            .with_watchdog(|| function.call::<LuaValue>(argument))
            .map_err(|e| FunctionFailed::raised(&e))?;
        convert::lua_to_json(&self.lua, &value, Mode::Data).map_err(FunctionFailed::NotJson)
    }

    /// The function `id`, running its file first when it was deferred.
    fn function(&self, id: LuaFnId) -> mlua::Result<Function> {
        self.ensure_loaded(id.file_index())
            .map_err(mlua::Error::runtime)?;
        self.functions
            .lock()
            .get(&id)
            .cloned()
            .ok_or_else(|| mlua::Error::runtime(format!("function #{} is not loaded", id.0)))
    }

    /// True when this VM holds the function `id` (or will, once its deferred file runs).
    pub(crate) fn has(&self, id: LuaFnId) -> bool {
        self.functions.lock().contains_key(&id)
            || self.pending.lock().contains_key(&id.file_index())
    }

    /// Like [`Self::adopt`], but a Lua function adopted before keeps its first id (for
    /// `check_fn`s, whose answers are cached per function).
    pub(crate) fn adopt_shared(&mut self, id: LuaFnId, function: Function) -> LuaFnId {
        let identity = function.to_pointer() as usize;
        if let Some(first) = self.shared.get(&identity) {
            return *first;
        }
        self.adopt(id, function);
        self.shared.insert(identity, id);
        id
    }

    /// Keeps `function` under `id`.
    pub(crate) fn adopt(&mut self, id: LuaFnId, function: Function) -> LuaFnId {
        self.sees_ctx.get_mut().remove(&id);
        self.functions.lock().insert(id, function);
        id
    }

    /// Forgets the functions of one file (a replica VM whose file registered differently
    /// from the first VM: its tools then run on the VMs that agree).
    pub(crate) fn forget_file(&mut self, file_index: u32) {
        self.functions
            .lock()
            .retain(|id, _| id.file_index() != file_index);
        self.sees_ctx
            .get_mut()
            .retain(|id, _| id.file_index() != file_index);
        self.pending.lock().remove(&file_index);
        self.shared.retain(|_, id| id.file_index() != file_index);
    }

    /// Lets code defined in tool file `file_index` read `names` with `env.get` (the
    /// `requires_env` of a tool it registered).
    pub(crate) fn allow_env(&self, file_index: u32, names: &[String]) {
        if let Some(mut policy) = self.lua.app_data_mut::<EnvPolicy>() {
            policy.grant(file_index, names);
        }
    }

    /// Runs `work` (a call's whole pipeline on this VM) so that cancelling `token` stops
    /// any Lua it runs at the next instruction check.
    pub(crate) fn cancellable<F: std::future::Future>(
        &self,
        token: tokio_util::sync::CancellationToken,
        work: F,
    ) -> clock::Cancellable<F> {
        clock::Cancellable::new(&self.lua, token, work)
    }

    /// Where the Lua function `id` is defined, as `file:line` (for messages).
    pub(crate) fn position(&self, id: LuaFnId) -> Option<String> {
        let info = self.functions.lock().get(&id)?.info();
        let file = info.short_src?;
        Some(match info.line_defined {
            Some(line) => format!("{file}:{line}"),
            None => file,
        })
    }

    /// Calls a handler with `(args, ctx)` (`(args)` when it cannot see a second argument, see
    /// [`LuaVm::sees_ctx`]) as a coroutine (so async host APIs can yield)
    /// under a deadline of `budget`, and normalises its return value (docs/lua-api.md): string →
    /// text, table → JSON text, multimodal envelope → object. `read_only`: the call is served
    /// as read-only (every write host function refuses).
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn call_handler(
        &self,
        id: LuaFnId,
        tool_name: &str,
        domain: &CallerDomain,
        args: &Value,
        ctx: &CallContext,
        budget: Duration,
        read_only: bool,
    ) -> Result<Returned, HandlerFailure> {
        let call = CallClock::start(budget);
        let guarded = Deadlined {
            vm: self,
            call,
            current: current::CurrentCall::of(tool_name, domain, ctx, read_only),
            inner: Some(Box::pin(self.invoke(id, tool_name, args, ctx))),
        };
        // The timer covers a handler parked in a Rust future (no Lua runs, so the hook
        // cannot fire); dropping `guarded` then stops the coroutine.
        let returned = match timer::until(call.deadline, guarded).await {
            None => return Err(HandlerFailure::Timeout),
            Some(Err(DeadlineFailure::Timeout)) => return Err(HandlerFailure::Timeout),
            Some(Err(DeadlineFailure::Lua(error))) if is_memory_error(&error) => {
                // Free what the runaway allocation left behind before the next call.
                let _ = self.lua.gc_collect();
                return Err(HandlerFailure::Memory);
            }
            Some(Err(DeadlineFailure::Lua(error))) => {
                return Err(HandlerFailure::Raised(lua_error_message(&error)));
            }
            Some(Ok(value)) => value,
        };
        self.normalise(&returned)
    }

    async fn invoke(
        &self,
        id: LuaFnId,
        tool_name: &str,
        args: &Value,
        ctx: &CallContext,
    ) -> mlua::Result<LuaValue> {
        let function = self.function(id)?;
        let args = convert::json_to_lua(&self.lua, args)?;
        // A task tool's `prepare` runs first, in a call of its own (its coroutines stay
        // its own); what it returns goes to the handler as is, on this VM.
        let prepare = self
            .functions
            .lock()
            .get(&id.sibling(FnRole::Prepare))
            .cloned();
        let prepared = match prepare {
            Some(prepare) => {
                let task_id = ctx.task_id.as_deref();
                let sees_ctx = self.sees_ctx(id.sibling(FnRole::Prepare), &prepare);
                self.run_invoke(
                    prepare,
                    sees_ctx,
                    args.clone(),
                    tool_name,
                    ctx,
                    task_id,
                    LuaValue::Nil,
                )
                .await?
            }
            None => LuaValue::Nil,
        };
        // An MCP task is created here, between `prepare` and the handler.
        let task_id = ctx.hand_over().await.or_else(|| ctx.task_id.clone());
        // The handler's `ctx.call`s run inside the task (polled within the call: it is
        // the current one).
        if let (Some(id), Some(call)) = (&task_id, current::get(&self.lua)) {
            let _ = call.task_id.set(id.clone());
        }
        let sees_ctx = self.sees_ctx(id, &function);
        self.run_invoke(
            function,
            sees_ctx,
            args,
            tool_name,
            ctx,
            task_id.as_deref(),
            prepared,
        )
        .await
    }

    /// Whether the Lua function `function` (kept as `id`) can see a second argument: it is
    /// variadic, declares two parameters or more, or is no Lua function. Asked once per
    /// function (`info` makes strings), then kept.
    fn sees_ctx(&self, id: LuaFnId, function: &Function) -> bool {
        let identity = function.to_pointer() as usize;
        if let Some(&(checked, sees)) = self.sees_ctx.lock().get(&id)
            && checked == identity
        {
            return sees;
        }
        let sees = sees_second_argument(function);
        self.sees_ctx.lock().insert(id, (identity, sees));
        sees
    }

    /// `function(args, ctx, prepared)` through the bootstrap's `invoke`; `function(args)`
    /// through `invoke_plain` when it cannot see a `ctx` (`sees_ctx` false) and nothing was
    /// prepared: the `ctx` it could not read is not built (four tables, and the strings of
    /// its values, per call).
    #[allow(clippy::too_many_arguments)]
    async fn run_invoke(
        &self,
        function: Function,
        sees_ctx: bool,
        args: LuaValue,
        tool_name: &str,
        ctx: &CallContext,
        task_id: Option<&str>,
        prepared: LuaValue,
    ) -> mlua::Result<LuaValue> {
        if !sees_ctx && prepared.is_nil() {
            return self
                .invoke_plain
                .call_async::<LuaValue>((function, args))
                .await;
        }
        let caller = &ctx.caller;
        let tool_name = self.call_values.name(&self.lua, tool_name)?;
        // The caller's kept metatable; a caller with scopes hands its values instead, and
        // its call builds a metatable of its own.
        let caller_mt = self.call_values.caller(&self.caller_metatable, caller)?;
        let (kind, id, client_id, scopes) = match (&caller_mt, caller.scopes()) {
            (Some(_), _) => (None, None, None, LuaValue::Nil),
            (None, scopes) => (
                Some(caller.kind().as_str()),
                Some(caller.id()),
                caller.client_id(),
                match scopes {
                    Some(scopes) => LuaValue::Table(
                        self.lua
                            .create_sequence_from(scopes.iter().map(String::as_str))?,
                    ),
                    None => LuaValue::Nil,
                },
            ),
        };
        // call_async runs on a recycled coroutine; `invoke` binds it to the handler and
        // builds the read-only ctx.
        self.invoke
            .call_async::<LuaValue>((
                function,
                args,
                tool_name,
                ctx.tool_call_id.as_deref(),
                ctx.session_id.as_deref(),
                task_id,
                ctx.scope.as_deref(),
                prepared,
                caller_mt,
                kind,
                id,
                client_id,
                scopes,
            ))
            .await
    }

    fn normalise(&self, value: &LuaValue) -> Result<Returned, HandlerFailure> {
        match value {
            LuaValue::String(s) => Ok(Returned::Text(s.to_string_lossy())),
            LuaValue::Table(_) => {
                let json = convert::lua_to_json(&self.lua, value, Mode::Data).map_err(|e| {
                    HandlerFailure::Contract(format!(
                        "table holding {} at result.{}",
                        e.reason, e.path
                    ))
                })?;
                // The table's own `_multimodal = true` is that member of its JSON object
                // (read there: looking it up in Lua creates the key string every call).
                let multimodal = json.get("_multimodal") == Some(&serde_json::Value::Bool(true));
                if multimodal {
                    Ok(Returned::Multimodal(json))
                } else {
                    Ok(Returned::Json(json))
                }
            }
            other if other.is_null() => Err(HandlerFailure::Contract("json.null".to_string())),
            LuaValue::Integer(_) | LuaValue::Number(_) => {
                Err(HandlerFailure::Contract("number".to_string()))
            }
            other => Err(HandlerFailure::Contract(other.type_name().to_string())),
        }
    }
}

/// Whether `function` can see a second argument it is called with: it is variadic,
/// declares two parameters or more, or is no Lua function (the sandbox has no debug
/// library to find it another way).
fn sees_second_argument(function: &Function) -> bool {
    let info = function.info();
    info.what != "Lua" || info.is_vararg || info.num_params >= 2
}

/// How a deadlined call ended without a value.
enum DeadlineFailure {
    Timeout,
    Lua(mlua::Error),
}

type LuaCall<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = mlua::Result<LuaValue>> + Send + 'a>>;

/// A handler call that runs under its own deadline whenever it is polled, and is stopped
/// (its coroutine dropped, under an expired deadline so `<close>` handlers cannot loop) once
/// the deadline passes.
struct Deadlined<'a> {
    vm: &'a LuaVm,
    call: CallClock,
    /// What host functions need of this call (observer, fs roots), installed per poll.
    current: Option<std::sync::Arc<current::CurrentCall>>,
    inner: Option<LuaCall<'a>>,
}

impl std::future::Future for Deadlined<'_> {
    type Output = Result<LuaValue, DeadlineFailure>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        use std::task::Poll;
        let this = &mut *self;
        let _running = this.vm.running.lock();
        if this.call.expired() {
            this.stop();
            return Poll::Ready(Err(DeadlineFailure::Timeout));
        }
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(Err(DeadlineFailure::Timeout));
        };
        this.call.enter(&this.vm.lua);
        let previous = current::enter(&this.vm.lua, &this.current);
        let polled = inner.as_mut().poll(cx);
        current::leave(&this.vm.lua, &this.current, previous);
        this.call.leave(&this.vm.lua);
        match polled {
            Poll::Pending => Poll::Pending,
            Poll::Ready(_) if this.call.tripped => {
                this.inner = None;
                Poll::Ready(Err(DeadlineFailure::Timeout))
            }
            Poll::Ready(result) => {
                this.inner = None;
                Poll::Ready(result.map_err(DeadlineFailure::Lua))
            }
        }
    }
}

impl Deadlined<'_> {
    /// Drops the coroutine with the deadline in force and already past.
    fn stop(&mut self) {
        if let Some(inner) = self.inner.take() {
            let _running = self.vm.running.lock();
            let mut expired = self.call;
            expired.yielded = true;
            expired.enter(&self.vm.lua);
            drop(inner);
            expired.leave(&self.vm.lua);
        }
    }
}

impl Drop for Deadlined<'_> {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A load error that names its file: Lua positions most errors (`file:line:`), but not a
/// deadline, a memory or a C-stack error.
fn is_memory_error(error: &mlua::Error) -> bool {
    matches!(error_text::root_cause(error), mlua::Error::MemoryError(_))
}

#[cfg(test)]
mod tests {
    use super::{FunctionFailed, sees_second_argument};
    use crate::lua::convert::ConvertError;

    #[test]
    fn only_a_lua_function_of_at_most_one_parameter_cannot_see_a_ctx() {
        let lua = mlua::Lua::new();
        for (code, sees) in [
            ("return function() end", false),
            ("return function(args) end", false),
            ("return function(args, ctx) end", true),
            ("return function(...) end", true),
            ("return function(args, ...) end", true),
        ] {
            let function: mlua::Function = lua.load(code).eval().expect("a function");
            assert_eq!(sees_second_argument(&function), sees, "{code}");
        }
        let native = lua.create_function(|_, ()| Ok(())).expect("a C function");
        assert!(sees_second_argument(&native));
    }

    /// What operators (hook failures) and models (override failures) read, byte for byte.
    #[test]
    fn function_failures_read_as_before() {
        let not_json = FunctionFailed::NotJson(ConvertError {
            path: "x".to_string(),
            reason: "a function".to_string(),
        });
        assert_eq!(not_json.to_string(), "returned x: a function");
        assert_eq!(
            FunctionFailed::List.to_string(),
            "returned a list, not a table of schema fields"
        );
        assert_eq!(
            FunctionFailed::NotATable("boolean").to_string(),
            "returned a boolean, not a table"
        );
        assert_eq!(
            FunctionFailed::Raised("f.lua:3: boom".into()).to_string(),
            "f.lua:3: boom"
        );
    }
}

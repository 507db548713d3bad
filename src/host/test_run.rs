//! One `toolhost test` test: the `t` table (`t.call`, `t.read`, `t.prompt`, `t.write`, `t.env`, `t.proc`,
//! `t.answer` and the
//! assertion prelude) bound to a host built for that test alone, and the test's body run
//! on its sandbox VM ([`TestSandbox`]) under a time limit. The command line finds the files
//! and reports; what touches Lua lives here, below the facade.

use super::Host;
use super::test_sandbox::TestSandbox;
use crate::dispatch::ToolResult;
use crate::lua::api::proc_script::{ProcScript, ScriptedRun};
use crate::lua::convert::{self, Mode};
use crate::registry::{CallContext, ScriptedAsker};
use cap_std::ambient_authority;
use cap_std::fs::Dir;
use mlua::{Function, LuaSerdeExt, Table, Value as LuaValue};
use parking_lot::Mutex;
use serde_json::json;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The assertion helpers, in Lua so that a failure points at the test's own line.
const PRELUDE: &str = include_str!("test_prelude.lua");

/// Why a test file did not load or a test failed: the message its author reads.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct TestFailure(String);

impl Host {
    /// Loads test file `path` (shown as `shown`) into a fresh sandbox VM whose `fs` root is
    /// `fs_root`; its top level runs under `limit`. The error is the author's one-line
    /// message (`file:line: …`).
    pub(crate) fn load_test_file(
        &self,
        path: &Path,
        shown: &str,
        source: &[u8],
        fs_root: &Path,
        limit: Duration,
    ) -> Result<TestSandbox, TestFailure> {
        self.test_sandbox(path, shown, source, fs_root, limit)
            .map_err(|e| TestFailure(crate::lua::lua_error_message(&e)))
    }
}

impl TestSandbox {
    /// Runs one test `body` of this file: `t` bound to the test's `root` (its `fs`) and a
    /// fresh host, built by the first `t.call` from the command's `--tools-dir` flags,
    /// `--config` and whether the library may load (`--no-library`); the body runs on this
    /// VM under `limit`.
    pub(crate) fn run_test(
        &self,
        body: &Function,
        root: &Path,
        (tools_dirs, config, library): (&[PathBuf], Option<&Path>, bool),
        runtime: &tokio::runtime::Runtime,
        limit: Duration,
    ) -> Result<(), TestFailure> {
        let vm = &self.vm;
        let lua = vm.lua();
        let setup = Arc::new(Mutex::new(Setup {
            env: HashMap::new(),
            script: Vec::new(),
            host: None,
            root: root.to_path_buf(),
            tools_dirs: tools_dirs.to_vec(),
            config: config.map(Path::to_path_buf),
            library,
        }));
        let handle = runtime.handle().clone();
        // `t.answer`'s answers, shared by the test's calls (none: `ctx.ask` answers cancel).
        let answers: Arc<Mutex<Option<Arc<ScriptedAsker>>>> = Arc::new(Mutex::new(None));
        let call_answers = answers.clone();
        let call_setup = setup.clone();
        let failed = |e: mlua::Error| TestFailure(e.to_string());
        let call = lua
            .create_function(move |lua, (name, args): (String, Option<LuaValue>)| {
                let call_host = call_setup.lock().host().map_err(mlua::Error::runtime)?;
                let args = match args {
                    Some(args @ LuaValue::Table(_)) => convert::lua_to_json(lua, &args, Mode::Data)
                        .map_err(|e| {
                            mlua::Error::runtime(format!(
                                "t.call: arguments hold {} at args.{}",
                                e.reason, e.path
                            ))
                        })?,
                    _ => json!({}),
                };
                let mut ctx = CallContext::default();
                if let Some(asker) = call_answers.lock().clone() {
                    ctx = ctx.with_asker(asker);
                }
                let result = handle.block_on(call_host.handle_function_call(&name, args, &ctx));
                // Text as a string; a table result, a multimodal envelope or an error object
                // as a table (what the model reads is their JSON), converted as handlers get
                // their arguments (arrays keep their marker, depth is bounded).
                match result {
                    ToolResult::Text(text) => Ok(LuaValue::String(lua.create_string(text)?)),
                    ToolResult::Json(value) | ToolResult::Multimodal(value) => {
                        convert::json_to_lua(lua, &value)
                    }
                    ToolResult::Error(error) => convert::json_to_lua(lua, &error.to_json()),
                }
            })
            .map_err(failed)?;
        let read_setup = setup.clone();
        let read_handle = runtime.handle().clone();
        let read = lua
            // `t.read(uri)`: the contents as a list of `{uri, mimeType?, text | blob}`, or
            // `{error_type, message}` (as `t.call` answers an error).
            .create_function(move |lua, uri: String| {
                let host = read_setup.lock().host().map_err(mlua::Error::runtime)?;
                let read = read_handle.block_on(host.read_resource(&uri, &CallContext::default()));
                content_answer(
                    lua,
                    read.map(|c| serde_json::to_value(c).unwrap_or_default()),
                )
            })
            .map_err(failed)?;
        let prompt_setup = setup.clone();
        let prompt_handle = runtime.handle().clone();
        let prompt = lua
            // `t.prompt(name, args)`: `{description?, messages}`, or `{error_type, message}`.
            .create_function(move |lua, (name, args): (String, Option<LuaValue>)| {
                let host = prompt_setup.lock().host().map_err(mlua::Error::runtime)?;
                let args = match args {
                    Some(args @ LuaValue::Table(_)) => convert::lua_to_json(lua, &args, Mode::Data)
                        .map_err(|e| {
                            mlua::Error::runtime(format!(
                                "t.prompt: arguments hold {} at args.{}",
                                e.reason, e.path
                            ))
                        })?,
                    _ => json!({}),
                };
                let rendered =
                    prompt_handle.block_on(host.get_prompt(&name, args, &CallContext::default()));
                content_answer(
                    lua,
                    rendered.map(|r| serde_json::to_value(r).unwrap_or_default()),
                )
            })
            .map_err(failed)?;
        let dir = Dir::open_ambient_dir(root, ambient_authority())
            .map_err(|e| TestFailure(format!("cannot open the test's root: {e}")))?;
        let write = lua
            // Inside the test's root only: `..`, absolute paths and symlinks out are refused.
            .create_function(move |_, (path, text): (String, mlua::LuaString)| {
                // Answers nil, or what is wrong (the prelude raises it at the test's line).
                let relative = Path::new(&path);
                let written = match relative.parent() {
                    Some(folder) if !folder.as_os_str().is_empty() => dir.create_dir_all(folder),
                    _ => Ok(()),
                }
                .and_then(|()| dir.write(relative, &*text.as_bytes()));
                Ok(written
                    .err()
                    .map(|e| format!("t.write: '{path}' (inside the test's root only): {e}")))
            })
            .map_err(failed)?;
        let env_setup = setup.clone();
        let env = lua
            // Answers nil, or what is wrong (the prelude raises it at the test's line).
            .create_function(move |_, vars: Table| {
                let mut setup = env_setup.lock();
                if let Some(problem) = setup.too_late("t.env") {
                    return Ok(Some(problem));
                }
                for pair in vars.pairs::<String, mlua::LuaString>() {
                    let Ok((name, value)) = pair else {
                        return Ok(Some("t.env: names and values must be strings".to_string()));
                    };
                    setup.env.insert(name, value.to_string_lossy());
                }
                Ok(None)
            })
            .map_err(failed)?;
        let proc_setup = setup.clone();
        let proc = lua
            .create_function(move |lua, runs: LuaValue| {
                let mut setup = proc_setup.lock();
                if let Some(problem) = setup.too_late("t.proc") {
                    return Ok(Some(problem));
                }
                match lua.from_value::<Vec<ScriptedRun>>(runs) {
                    Ok(runs) => {
                        setup.script.extend(runs);
                        Ok(None)
                    }
                    Err(e) => Ok(Some(format!("t.proc: {e}"))),
                }
            })
            .map_err(failed)?;
        let answer = lua
            // Answers nil, or what is wrong (the prelude raises it at the test's line).
            .create_function(move |lua, script: LuaValue| {
                let script = match convert::lua_to_json(lua, &script, Mode::Data) {
                    Ok(script) => script,
                    Err(e) => return Ok(Some(format!("t.answer: {} at {}", e.reason, e.path))),
                };
                let mut answers = answers.lock();
                let asker = answers.get_or_insert_with(|| Arc::new(ScriptedAsker::new()));
                Ok(asker
                    .add_json(&script)
                    .err()
                    .map(|e| format!("t.answer: {e}")))
            })
            .map_err(failed)?;
        let make_t = vm
            .eval_trusted(PRELUDE, "toolhost-test")
            .map_err(|e| TestFailure(format!("test prelude: {e}")))?;
        let t: Table = make_t
            .call((
                call,
                root.display().to_string(),
                write,
                env,
                proc,
                answer,
                read,
                prompt,
            ))
            .map_err(failed)?;
        vm.call_limited(body, t, limit)
            .map_err(|e| TestFailure(crate::lua::lua_error_message(&e)))
    }
}

/// What `t.read` and `t.prompt` answer: the result as a table, or an error as `t.call`
/// answers one (`{error_type, message}`), so `t.error_type` checks both.
fn content_answer(
    lua: &mlua::Lua,
    answer: Result<serde_json::Value, super::ContentError>,
) -> mlua::Result<LuaValue> {
    match answer {
        Ok(value) => convert::json_to_lua(lua, &value),
        Err(error) => convert::json_to_lua(
            lua,
            &json!({ "error_type": error.kind(), "message": error.to_string() }),
        ),
    }
}

/// One test's host, built by its first `t.call` from what `t.env`/`t.proc` set up.
struct Setup {
    env: HashMap<String, String>,
    script: Vec<ScriptedRun>,
    host: Option<Arc<Host>>,
    root: PathBuf,
    /// `--tools-dir` flags and `--config`, as the command got them.
    tools_dirs: Vec<PathBuf>,
    config: Option<PathBuf>,
    /// False under `--no-library`.
    library: bool,
}

impl Setup {
    /// Why set-up is refused: the host exists already.
    fn too_late(&self, what: &str) -> Option<String> {
        self.host.as_ref().map(|_| {
            format!("{what} must come before the test's first t.call (it sets up the test's host)")
        })
    }

    /// The test's host, built on first use: the same tool directories and plugins as
    /// production (a plugin's tools load as `plugin:<id>`, with its capabilities), its `fs`
    /// in the test's root, an in-memory store, and `proc.run` answering only from `t.proc`
    /// (without it, every run is refused: no test starts a real program).
    fn host(&mut self) -> Result<Arc<Host>, TestFailure> {
        if let Some(host) = &self.host {
            return Ok(host.clone());
        }
        let script = ProcScript::new(self.script.clone())
            .map_err(|e| TestFailure(format!("t.proc: {e}")))?;
        // As the command's own host: the library unless `--no-library` or
        // `[library] enabled = false`.
        let mut builder = match self.library {
            true => Host::builder().library_by_default(),
            false => Host::builder().library(false),
        };
        for dir in &self.tools_dirs {
            builder = builder.tools_dir(dir);
        }
        if let Some(config) = &self.config {
            builder = builder.config_file(config);
        }
        let builder = builder
            .vms(1)
            .cache_dir(self.root.join(".cache"))
            .memory_store()
            .fs_roots(vec![self.root.clone()])
            .env_overlay(self.env.clone())
            .proc_script(script);
        let host = Arc::new(builder.build().map_err(|e| TestFailure(e.to_string()))?);
        self.host = Some(host.clone());
        Ok(host)
    }
}

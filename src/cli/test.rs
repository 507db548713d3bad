//! `toolhost test [FILES|DIRS] [--json]`: runs Lua test files — `*_test.lua` beside the
//! tools and files under `tests-lua/` — without a model:
//!
//! ```lua
//! test("greets by name", function(t)
//!   local out = t.call("greet", { who = "Ada" })   -- the whole pipeline, like a model's call
//!   t.eq(out, "Hello, Ada!")
//!   t.error_type(t.call("greet", {}), "invalid_arguments")
//! end)
//! ```
//!
//! `t.call` returns text as a string, and a table result, a multimodal envelope or an error
//! object (`{error, error_type, …}`) as a table.
//!
//! Each test gets a fresh host (the same tool directories and config) whose `fs` is a temp
//! dir of its own (`t.write`, `t.fs`) and whose `store` is in memory; calls keep their
//! normal deadlines. `t.env{NAME = "v"}` sets environment variables for that test only
//! (over the process's, which stays untouched) and `t.proc{...}` scripts `proc.run`'s
//! answers (no program runs; an unscripted run is refused); both come before the test's
//! first `t.call`, which builds its host. Test code itself is the author's and runs in a
//! plain Lua state with a time limit per test.

use super::Cli;
use crate::lua::api::proc_script::{ProcScript, ScriptedRun};
use crate::{CallContext, Host, ToolResult};
use mlua::{Function, HookTriggers, Lua, LuaSerdeExt, Table, Value as LuaValue, VmState};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long one test's own Lua may run (its tool calls have their own deadlines).
const TEST_TIME_LIMIT: Duration = Duration::from_secs(60);

/// The assertion helpers, in Lua so that a failure points at the test's own line.
const PRELUDE: &str = include_str!("test_prelude.lua");

/// One test's outcome.
struct Outcome {
    file: String,
    name: String,
    passed: bool,
    millis: u128,
    message: Option<String>,
}

/// Runs the test files under `paths` (default: every tool directory's `*_test.lua` and
/// `./tests-lua/`); exit 1 when a test fails.
pub(super) fn run(cli: &Cli, paths: &[PathBuf], as_json: bool) -> Result<ExitCode, String> {
    // A first host tells which tool directories and config the tests run against.
    let base = super::build(cli, None, Some(1))?;
    let tool_dirs: Vec<PathBuf> = base.tool_dirs().into_iter().map(|d| d.path).collect();
    let files = match paths.is_empty() {
        true => default_test_files(&tool_dirs),
        false => given_test_files(paths),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let mut outcomes = Vec::new();
    for file in &files {
        outcomes.extend(run_file(cli, &tool_dirs, file, &runtime)?);
    }
    let failed = outcomes.iter().filter(|o| !o.passed).count();
    let passed = outcomes.len() - failed;
    if as_json {
        let tests: Vec<Value> = outcomes
            .iter()
            .map(|o| {
                json!({"file": o.file, "name": o.name, "ok": o.passed,
                       "ms": o.millis as u64, "message": o.message})
            })
            .collect();
        outln!(
            "{}",
            json!({"tests": tests, "passed": passed, "failed": failed})
        );
    } else {
        if files.is_empty() {
            outln!("no test files (*_test.lua beside the tools, or tests-lua/)");
        }
        for o in &outcomes {
            let status = if o.passed { "ok  " } else { "FAIL" };
            outln!("{status}  {} ({} ms)", o.name, o.millis);
            if let Some(message) = &o.message {
                outln!("      {message}");
            }
        }
        outln!("{passed} passed, {failed} failed");
    }
    Ok(match failed {
        0 => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    })
}

/// `*_test.lua` in each tool directory, then `./tests-lua/**/*.lua`, sorted.
fn default_test_files(tool_dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = tool_dirs
        .iter()
        .flat_map(|dir| lua_files(dir, 1, true))
        .collect();
    files.extend(lua_files(Path::new("tests-lua"), usize::MAX, false));
    files
}

/// The given files, and the test files under the given directories.
fn given_test_files(paths: &[PathBuf]) -> Vec<PathBuf> {
    paths
        .iter()
        .flat_map(|path| match path.is_dir() {
            true => {
                let whole = path.file_name().is_some_and(|n| n == "tests-lua");
                lua_files(path, usize::MAX, !whole)
            }
            false => vec![path.clone()],
        })
        .collect()
}

/// `.lua` files under `dir` (only `*_test.lua` when `tests_only`), sorted.
fn lua_files(dir: &Path, depth: usize, tests_only: bool) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .max_depth(depth)
        .sort_by_file_name()
        .into_iter()
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.file_type().is_file())
        .map(|entry| entry.into_path())
        .filter(|path| {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default();
            name.ends_with(".lua") && (!tests_only || name.ends_with("_test.lua"))
        })
        .collect();
    found.sort();
    found
}

/// Loads one test file and runs each of its tests on a fresh host.
fn run_file(
    cli: &Cli,
    tool_dirs: &[PathBuf],
    file: &Path,
    runtime: &tokio::runtime::Runtime,
) -> Result<Vec<Outcome>, String> {
    let shown = file.display().to_string();
    let source = std::fs::read(file).map_err(|e| format!("cannot read {shown}: {e}"))?;
    let lua = Lua::new();
    let tests = lua
        .create_table()
        .and_then(|tests| {
            let collect = tests.clone();
            let test = lua.create_function(move |lua, (name, body): (String, Function)| {
                let entry = lua.create_table()?;
                entry.push(name)?;
                entry.push(body)?;
                collect.push(entry)
            })?;
            lua.globals().set("test", test)?;
            Ok(tests)
        })
        .map_err(|e| format!("{shown}: {e}"))?;
    if let Err(e) = lua.load(&source).set_name(format!("@{shown}")).exec() {
        return Ok(vec![Outcome {
            file: shown.clone(),
            name: format!("{shown} (loading)"),
            passed: false,
            millis: 0,
            message: Some(crate::lua::lua_error_message(&e)),
        }]);
    }
    let make_t: Function = lua
        .load(PRELUDE)
        .set_name("=toolhost-test")
        .eval()
        .map_err(|e| format!("test prelude: {e}"))?;
    let mut outcomes = Vec::new();
    for pair in tests.sequence_values::<Table>() {
        let pair = pair.map_err(|e| format!("{shown}: {e}"))?;
        let name: String = pair.get(1).map_err(|e| format!("{shown}: {e}"))?;
        let body: Function = pair.get(2).map_err(|e| format!("{shown}: {e}"))?;
        let started = Instant::now();
        let result = run_one(cli, tool_dirs, &lua, &make_t, &body, runtime);
        outcomes.push(Outcome {
            file: shown.clone(),
            name,
            passed: result.is_ok(),
            millis: started.elapsed().as_millis(),
            message: result.err(),
        });
    }
    Ok(outcomes)
}

/// How a test's host is made.
struct Recipe {
    tool_dirs: Vec<PathBuf>,
    config: Option<PathBuf>,
    root: PathBuf,
}

/// One test's host, built by its first `t.call` from what `t.env`/`t.proc` set up.
struct Setup {
    env: HashMap<String, String>,
    script: Vec<ScriptedRun>,
    host: Option<Arc<Host>>,
    recipe: Recipe,
}

impl Setup {
    /// Why set-up is refused: the host exists already.
    fn too_late(&self, what: &str) -> Option<String> {
        self.host.as_ref().map(|_| {
            format!("{what} must come before the test's first t.call (it sets up the test's host)")
        })
    }

    /// The test's host, built on first use.
    fn host(&mut self) -> Result<Arc<Host>, String> {
        if let Some(host) = &self.host {
            return Ok(host.clone());
        }
        let recipe = &self.recipe;
        let mut builder = Host::builder()
            .cache_dir(recipe.root.join(".cache"))
            .memory_store()
            .vms(1)
            .fs_roots(vec![recipe.root.clone()])
            .env_overlay(self.env.clone());
        if !self.script.is_empty() {
            let script =
                ProcScript::new(self.script.clone()).map_err(|e| format!("t.proc: {e}"))?;
            builder = builder.proc_script(script);
        }
        for dir in &recipe.tool_dirs {
            builder = builder.tools_dir(dir);
        }
        if let Some(config) = &recipe.config {
            builder = builder.config_file(config);
        }
        let host = Arc::new(builder.build().map_err(|e| e.to_string())?);
        self.host = Some(host.clone());
        Ok(host)
    }
}

/// One test: a fresh host with its own temp fs root, `t` bound to it, the body run under
/// the time limit.
fn run_one(
    cli: &Cli,
    tool_dirs: &[PathBuf],
    lua: &Lua,
    make_t: &Function,
    body: &Function,
    runtime: &tokio::runtime::Runtime,
) -> Result<(), String> {
    let root = tempfile::Builder::new()
        .prefix("toolhost-test-")
        .tempdir()
        .map_err(|e| format!("cannot make a temp dir: {e}"))?;
    let root_path = root
        .path()
        .canonicalize()
        .unwrap_or_else(|_| root.path().to_path_buf());
    let setup = Arc::new(Mutex::new(Setup {
        env: HashMap::new(),
        script: Vec::new(),
        host: None,
        recipe: Recipe {
            tool_dirs: tool_dirs.to_vec(),
            config: cli.config.clone(),
            root: root_path.clone(),
        },
    }));
    let handle = runtime.handle().clone();
    let call_setup = setup.clone();
    let call = lua
        .create_function(move |lua, (name, args): (String, Option<LuaValue>)| {
            let call_host = call_setup.lock().host().map_err(mlua::Error::runtime)?;
            let args = match args {
                Some(LuaValue::Table(_)) => {
                    lua.from_value::<Value>(args.unwrap_or(LuaValue::Nil))?
                }
                _ => json!({}),
            };
            let result = handle.block_on(call_host.handle_function_call(
                &name,
                args,
                &CallContext::default(),
            ));
            // Text as a string; a table result, a multimodal envelope or an error object
            // as a table (what the model reads is their JSON).
            match result {
                ToolResult::Text(text) => Ok(LuaValue::String(lua.create_string(text)?)),
                ToolResult::Json(value) | ToolResult::Multimodal(value) => lua.to_value(&value),
                ToolResult::Error(error) => lua.to_value(&error.to_json()),
            }
        })
        .map_err(|e| e.to_string())?;
    let write = lua
        .create_function(|_, (path, text): (String, mlua::LuaString)| {
            let path = PathBuf::from(path);
            if let Some(folder) = path.parent() {
                std::fs::create_dir_all(folder).map_err(mlua::Error::external)?;
            }
            std::fs::write(&path, &*text.as_bytes()).map_err(mlua::Error::external)
        })
        .map_err(|e| e.to_string())?;
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
        .map_err(|e| e.to_string())?;
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
        .map_err(|e| e.to_string())?;
    let t: Table = make_t
        .call((call, root_path.display().to_string(), write, env, proc))
        .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + TEST_TIME_LIMIT;
    lua.set_hook(
        HookTriggers::new().every_nth_instruction(10_000),
        move |_, _| match Instant::now() > deadline {
            true => Err(mlua::Error::runtime(format!(
                "the test ran longer than {} s",
                TEST_TIME_LIMIT.as_secs()
            ))),
            false => Ok(VmState::Continue),
        },
    )
    .map_err(|e| e.to_string())?;
    let outcome = body.call::<()>(t);
    lua.remove_hook();
    outcome.map_err(|e| crate::lua::lua_error_message(&e))
}

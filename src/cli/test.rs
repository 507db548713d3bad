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
//! Each test gets a fresh host (the same tool directories, plugins and config) whose `fs`
//! is a temp dir of its own (`t.write`, `t.fs`) and whose `store` is in memory; calls keep
//! their normal deadlines. `t.env{NAME = "v"}` sets environment variables for that test
//! only (over the process's, which stays untouched) and `t.proc{...}` scripts `proc.run`'s
//! answers; no program ever runs under `toolhost test` (a run `t.proc` does not answer is
//! refused, pointing at `t.proc`). Both come before the test's first `t.call`, which builds
//! its host. Test code runs in the same sandbox as tools, with the grants of the folder it
//! lies in (a plugin's tests have that plugin's capabilities, never more), on a fresh VM
//! per test, with a time limit per test.

use super::Cli;
use crate::lua::LuaVm;
use crate::lua::api::proc_script::{ProcScript, ScriptedRun};
use crate::lua::convert::{self, Mode};
use crate::{CallContext, Host, ToolResult};
use cap_std::ambient_authority;
use cap_std::fs::Dir;
use mlua::{Function, LuaSerdeExt, Table, Value as LuaValue};
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
        outcomes.extend(run_file(cli, &base, file, &runtime)?);
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

/// Loads one test file and runs each of its tests, each on a fresh sandbox VM (the file's
/// top level runs again for each) and a fresh host.
fn run_file(
    cli: &Cli,
    base: &Host,
    file: &Path,
    runtime: &tokio::runtime::Runtime,
) -> Result<Vec<Outcome>, String> {
    let shown = file.display().to_string();
    let source = std::fs::read(file).map_err(|e| format!("cannot read {shown}: {e}"))?;
    let loading_failed = |message: String| Outcome {
        file: shown.clone(),
        name: format!("{shown} (loading)"),
        passed: false,
        millis: 0,
        message: Some(message),
    };
    let mut names: Option<Vec<String>> = None;
    let mut outcomes = Vec::new();
    let mut index = 0;
    loop {
        let root = TestRoot::new()?;
        let sandbox = match base.test_sandbox(file, &shown, &source, &root.path, TEST_TIME_LIMIT) {
            Ok(sandbox) => sandbox,
            Err(e) => {
                outcomes.push(loading_failed(crate::lua::lua_error_message(&e)));
                return Ok(outcomes);
            }
        };
        let declared: Vec<String> = sandbox.tests.iter().map(|(name, _)| name.clone()).collect();
        let names = names.get_or_insert(declared.clone());
        if *names != declared {
            outcomes.push(loading_failed(
                "the file declared different tests when it ran again (its top level must \
                 declare the same tests every time)"
                    .to_string(),
            ));
            return Ok(outcomes);
        }
        let Some((name, body)) = sandbox.tests.get(index) else {
            return Ok(outcomes);
        };
        let started = Instant::now();
        let result = run_one(cli, &sandbox.vm, body, &root, runtime);
        outcomes.push(Outcome {
            file: shown.clone(),
            name: name.clone(),
            passed: result.is_ok(),
            millis: started.elapsed().as_millis(),
            message: result.err(),
        });
        index += 1;
        if index == names.len() {
            return Ok(outcomes);
        }
    }
}

/// A test's own temp directory: its `fs` root (removed when the test ends).
struct TestRoot {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl TestRoot {
    fn new() -> Result<Self, String> {
        let dir = tempfile::Builder::new()
            .prefix("toolhost-test-")
            .tempdir()
            .map_err(|e| format!("cannot make a temp dir: {e}"))?;
        let path = dir
            .path()
            .canonicalize()
            .unwrap_or_else(|_| dir.path().to_path_buf());
        Ok(Self { _dir: dir, path })
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
    fn host(&mut self) -> Result<Arc<Host>, String> {
        if let Some(host) = &self.host {
            return Ok(host.clone());
        }
        let script = ProcScript::new(self.script.clone()).map_err(|e| format!("t.proc: {e}"))?;
        let mut builder = Host::builder();
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
        let host = Arc::new(builder.build().map_err(|e| e.to_string())?);
        self.host = Some(host.clone());
        Ok(host)
    }
}

/// One test: `t` bound to a fresh host and the test's root, the body run on its sandbox
/// VM under the time limit.
fn run_one(
    cli: &Cli,
    vm: &LuaVm,
    body: &Function,
    root: &TestRoot,
    runtime: &tokio::runtime::Runtime,
) -> Result<(), String> {
    let lua = vm.lua();
    let setup = Arc::new(Mutex::new(Setup {
        env: HashMap::new(),
        script: Vec::new(),
        host: None,
        root: root.path.clone(),
        tools_dirs: cli.tools_dir.clone(),
        config: cli.config.clone(),
    }));
    let handle = runtime.handle().clone();
    let call_setup = setup.clone();
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
            let result = handle.block_on(call_host.handle_function_call(
                &name,
                args,
                &CallContext::default(),
            ));
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
        .map_err(|e| e.to_string())?;
    let dir = Dir::open_ambient_dir(&root.path, ambient_authority())
        .map_err(|e| format!("cannot open the test's root: {e}"))?;
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
    let make_t = vm
        .eval_trusted(PRELUDE, "toolhost-test")
        .map_err(|e| format!("test prelude: {e}"))?;
    let t: Table = make_t
        .call((call, root.path.display().to_string(), write, env, proc))
        .map_err(|e| e.to_string())?;
    vm.call_limited(body, t, TEST_TIME_LIMIT)
        .map_err(|e| crate::lua::lua_error_message(&e))
}

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
use super::error::{CliError, io};
use crate::Host;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// How long one test's own Lua may run (its tool calls have their own deadlines).
const TEST_TIME_LIMIT: Duration = Duration::from_secs(60);

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
pub(super) fn run(cli: &Cli, paths: &[PathBuf], as_json: bool) -> Result<ExitCode, CliError> {
    // A first host tells which tool directories and config the tests run against.
    let base = super::build(cli, None, Some(1))?;
    // The library's own tests are the binary's, not the project's.
    let tool_dirs: Vec<PathBuf> = base
        .tool_dirs()
        .into_iter()
        .filter(|d| !d.is_library())
        .map(|d| d.path)
        .collect();
    let files = match paths.is_empty() {
        true => default_test_files(&tool_dirs),
        false => given_test_files(paths),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(io("cannot start the async runtime"))?;
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
) -> Result<Vec<Outcome>, CliError> {
    let shown = file.display().to_string();
    let source = std::fs::read(file).map_err(io(format!("cannot read {shown}")))?;
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
        let sandbox = match base.load_test_file(file, &shown, &source, &root.path, TEST_TIME_LIMIT)
        {
            Ok(sandbox) => sandbox,
            Err(e) => {
                outcomes.push(loading_failed(e.to_string()));
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
        let flags = (
            cli.tools_dir.as_slice(),
            cli.config.as_deref(),
            !cli.no_library,
        );
        let result = sandbox.run_test(body, &root.path, flags, runtime, TEST_TIME_LIMIT);
        outcomes.push(Outcome {
            file: shown.clone(),
            name: name.clone(),
            passed: result.is_ok(),
            millis: started.elapsed().as_millis(),
            message: result.err().map(|e| e.to_string()),
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
    fn new() -> Result<Self, CliError> {
        let dir = tempfile::Builder::new()
            .prefix("toolhost-test-")
            .tempdir()
            .map_err(io("cannot make a temp dir"))?;
        let path = dir
            .path()
            .canonicalize()
            .unwrap_or_else(|_| dir.path().to_path_buf());
        Ok(Self { _dir: dir, path })
    }
}

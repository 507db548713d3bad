//! `proc.run{argv, cwd, timeout_ms, stdin}`: runs a program listed in `[sandbox] commands`
//! directly (no shell: arguments are passed as they are, metacharacters mean nothing),
//! awaiting it so other calls run on the VM meanwhile. The child is killed when its own
//! timeout passes or the call is stopped.

use super::{ApiContext, ApiFunction, Calling, failure};
use mlua::{Lua, Table, Value as LuaValue};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncWriteExt;

/// Default `timeout_ms` of a run.
const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// Variables every child gets (from the host's environment); `[sandbox] proc_env` adds more.
pub(crate) const BASE_ENV: &[&str] = &["PATH", "HOME", "LANG"];
/// Most bytes kept of stdout and of stderr each.
const MAX_OUTPUT_BYTES: usize = 8 * 1024 * 1024;

/// The `proc` entries of the host API.
pub(crate) fn functions() -> Vec<ApiFunction> {
    vec![
        ApiFunction {
            module: "proc",
            name: "allowed",
            params: &[],
            returns: "string[]",
            doc: "The programs [sandbox] commands allows (empty: proc.run refuses everything)",
            make: |lua, ctx: &ApiContext| {
                let mut commands: Vec<String> = ctx.commands.to_vec();
                if let Some(script) = &ctx.proc_script {
                    for program in script.programs() {
                        if !commands.iter().any(|c| c == program) {
                            commands.push(program.to_string());
                        }
                    }
                }
                super::function(lua, move |lua, ()| {
                    let list = lua.create_sequence_from(commands.iter().cloned())?;
                    list.set_metatable(Some(mlua::LuaSerdeExt::array_metatable(lua)))?;
                    Ok(list)
                })
            },
            calling: Calling::Anywhere,
            constant: false,
        },
        ApiFunction {
            module: "proc",
            name: "run",
            params: &[(
                "spec",
                "{argv: string[], cwd?: string, timeout_ms?: integer, stdin?: string}",
            )],
            returns: "{code: integer?, stdout: string, stderr: string, timed_out: boolean, truncated: boolean}",
            doc: "Runs argv[1] (which [sandbox] commands must list) with the other arguments, no shell (handlers only)",
            make: make_run,
            calling: Calling::HandlerOnly,
            constant: false,
        },
    ]
}

fn refuse(reason: impl std::fmt::Display) -> mlua::Error {
    failure("proc", "run", reason)
}

/// Whether `program` may run: `[sandbox] commands` lists it by exactly this name (a bare
/// name is looked up on PATH; a path must be listed as that path).
fn allowed(commands: &[String], program: &str) -> bool {
    commands.iter().any(|c| c == program)
}

struct Spec {
    argv: Vec<String>,
    cwd: Option<String>,
    timeout: Duration,
    stdin: Option<Vec<u8>>,
}

fn read_spec(spec: &Table) -> mlua::Result<Spec> {
    let argv: Vec<String> = match spec.get::<LuaValue>("argv")? {
        LuaValue::Table(list) => list
            .sequence_values::<String>()
            .collect::<mlua::Result<_>>()
            .map_err(|_| refuse("'argv' must be a list of strings"))?,
        _ => {
            return Err(refuse(
                "'argv' is required (a list of strings, program first)",
            ));
        }
    };
    if argv.is_empty() {
        return Err(refuse("'argv' is empty"));
    }
    let timeout_ms = match spec.get::<LuaValue>("timeout_ms")? {
        LuaValue::Nil => DEFAULT_TIMEOUT_MS,
        LuaValue::Integer(n) if n > 0 => n as u64,
        LuaValue::Number(n) if n > 0.0 && n.is_finite() => n as u64,
        _ => return Err(refuse("'timeout_ms' must be a positive number")),
    };
    let stdin = match spec.get::<LuaValue>("stdin")? {
        LuaValue::Nil => None,
        LuaValue::String(s) => Some(s.as_bytes().to_vec()),
        _ => return Err(refuse("'stdin' must be a string")),
    };
    let cwd = spec.get::<Option<String>>("cwd")?;
    Ok(Spec {
        argv,
        cwd,
        timeout: Duration::from_millis(timeout_ms),
        stdin,
    })
}

fn make_run(lua: &Lua, ctx: &ApiContext) -> mlua::Result<LuaValue> {
    let commands = ctx.commands.clone();
    let default_roots = ctx.fs_roots.clone();
    let proc_env = ctx.proc_env.clone();
    let env = ctx.env.clone();
    let script = ctx.proc_script.clone();
    lua.create_async_function(move |lua, spec: Table| {
        let commands = commands.clone();
        let roots = crate::lua::call::current::fs_roots(&lua, &default_roots);
        let proc_env = proc_env.clone();
        let env = env.clone();
        let script = script.clone();
        async move {
            let spec = read_spec(&spec)?;
            if let Some(script) = script {
                return scripted(&lua, &script, &spec.argv);
            }
            let program = &spec.argv[0];
            if !allowed(&commands, program) {
                return Err(refuse(format!(
                    "'{program}' is not allowed; list it in [sandbox] commands to allow it"
                )));
            }
            let mut command = tokio::process::Command::new(program);
            command
                .args(&spec.argv[1..])
                .stdin(if spec.stdin.is_some() {
                    Stdio::piped()
                } else {
                    Stdio::null()
                })
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true);
            let cwd = spec.cwd.as_deref().unwrap_or(".");
            let at = roots.resolve(cwd).map_err(refuse)?;
            at.root
                .dir
                .open_dir(&at.relative)
                .map_err(|e| refuse(super::fs::describe(cwd, &e)))?;
            command.current_dir(roots.absolute(&at));
            // A clean environment: env.get's policy must not be bypassed by a program that
            // prints its environment.
            command.env_clear();
            for name in BASE_ENV
                .iter()
                .copied()
                .chain(proc_env.iter().map(String::as_str))
            {
                if let Some(value) = env.var_os(name) {
                    command.env(name, value);
                }
            }
            let mut child = command
                .spawn()
                .map_err(|e| refuse(format!("cannot start '{program}': {e}")))?;
            if let (Some(input), Some(mut pipe)) = (spec.stdin, child.stdin.take()) {
                // A child that does not read its stdin must not stall us.
                tokio::spawn(async move {
                    let _ = pipe.write_all(&input).await;
                });
            }
            // The call's own deadline drops this future (and so kills the child) too.
            let deadline = std::time::Instant::now() + spec.timeout;
            let output = crate::lua::call::timer::until(deadline, collect(child))
                .await
                .ok_or(());
            let result = lua.create_table()?;
            match output {
                Err(()) => {
                    // Dropping the future dropped the child: kill_on_drop killed it.
                    result.set("code", LuaValue::Nil)?;
                    result.set("stdout", "")?;
                    result.set("stderr", "")?;
                    result.set("timed_out", true)?;
                    result.set("truncated", false)?;
                }
                Ok(Err(e)) => return Err(refuse(format!("'{program}': {e}"))),
                Ok(Ok(out)) => {
                    result.set("code", out.code)?;
                    result.set("stdout", lua.create_string(&out.stdout)?)?;
                    result.set("stderr", lua.create_string(&out.stderr)?)?;
                    result.set("timed_out", false)?;
                    result.set("truncated", out.truncated)?;
                }
            }
            Ok(result)
        }
    })
    .map(LuaValue::Function)
}

/// The scripted answer to `argv` (`toolhost test`), or a refusal naming it.
fn scripted(
    lua: &Lua,
    script: &super::proc_script::ProcScript,
    argv: &[String],
) -> mlua::Result<Table> {
    let Some(run) = script.answer(argv) else {
        return Err(refuse(format!(
            "no scripted answer for {:?}: under toolhost test no program runs; list what \
             proc.run answers in this test with t.proc{{ {{ argv = {{...}}, stdout = ... }} }}",
            argv.join(" ")
        )));
    };
    let result = lua.create_table()?;
    result.set("code", if run.timed_out { None } else { Some(run.code) })?;
    result.set("stdout", lua.create_string(&run.stdout)?)?;
    result.set("stderr", lua.create_string(&run.stderr)?)?;
    result.set("timed_out", run.timed_out)?;
    result.set("truncated", false)?;
    Ok(result)
}

/// What a finished child left.
struct Collected {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    /// An output reached [`MAX_OUTPUT_BYTES`]: the child was killed there.
    truncated: bool,
}

/// Reads stdout and stderr as they come, keeping at most [`MAX_OUTPUT_BYTES`] of each; a
/// child that writes more is killed at the cap (its output is never buffered whole).
async fn collect(mut child: tokio::process::Child) -> std::io::Result<Collected> {
    use tokio::io::AsyncReadExt;
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let (mut out_buf, mut err_buf) = (vec![0u8; 16 * 1024], vec![0u8; 16 * 1024]);
    let mut truncated = false;
    let keep = |kept: &mut Vec<u8>, chunk: &[u8]| -> bool {
        let room = MAX_OUTPUT_BYTES - kept.len();
        kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
        chunk.len() <= room && kept.len() < MAX_OUTPUT_BYTES
    };
    while !truncated && (stdout.is_some() || stderr.is_some()) {
        tokio::select! {
            read = async { stdout.as_mut().map(|p| p.read(&mut out_buf)).expect("guarded").await },
                if stdout.is_some() => match read {
                Ok(0) | Err(_) => stdout = None,
                Ok(n) => truncated = !keep(&mut out, &out_buf[..n]),
            },
            read = async { stderr.as_mut().map(|p| p.read(&mut err_buf)).expect("guarded").await },
                if stderr.is_some() => match read {
                Ok(0) | Err(_) => stderr = None,
                Ok(n) => truncated = !keep(&mut err, &err_buf[..n]),
            },
        }
    }
    if truncated {
        let _ = child.start_kill();
    }
    let status = child.wait().await?;
    Ok(Collected {
        code: if truncated { None } else { status.code() },
        stdout: out,
        stderr: err,
        truncated,
    })
}

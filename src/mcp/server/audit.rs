//! The audit log (`[audit]`, docs/telemetry.md#audit-log): one JSON line per call that
//! reached the pipeline, written before its result is sent. A file grows to `max_bytes`,
//! then becomes `NAME.1` (replacing the last one) and a new file starts. A line that cannot
//! be written is reported on stderr and counted (`toolhost_audit_write_errors_total`); the
//! call still answers.

use super::origin::Origin;
use crate::CallContext;
use parking_lot::Mutex;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Default `[audit] max_bytes`: 100 MiB.
pub(crate) const DEFAULT_MAX_BYTES: u64 = 100 * 1024 * 1024;

/// Where the lines go.
enum Sink {
    Stderr,
    File {
        path: PathBuf,
        file: File,
        /// Bytes in the current file.
        size: u64,
        /// Rotate past this many bytes (0: never).
        max_bytes: u64,
    },
}

/// `[audit]`.
#[derive(Clone, Copy)]
pub(crate) struct Settings<'a> {
    /// A file, or `stderr`; `None`: no audit log.
    pub(crate) path: Option<&'a Path>,
    /// Write the raw arguments too.
    pub(crate) arguments: bool,
    /// Rotate past this many bytes (default [`DEFAULT_MAX_BYTES`]; 0: never).
    pub(crate) max_bytes: Option<u64>,
}

/// The audit log of one server.
pub(crate) struct AuditLog {
    sink: Mutex<Sink>,
    /// Write the raw arguments too (`[audit] arguments`).
    arguments: bool,
    /// This process among the replicas (`hostname:pid`).
    replica: String,
}

/// One call, as its audit line tells it.
pub(crate) struct Entry<'a> {
    /// The request id as the client wrote it (JSON text); for a `ctx.call`, the child's
    /// id (`PARENT/N`).
    pub(crate) request_id: &'a str,
    /// The id of the call that made this one with `ctx.call` (`None`: the client's call).
    pub(crate) parent: Option<&'a str>,
    /// The MCP task the call ran as (or inside), if any.
    pub(crate) task_id: Option<&'a str>,
    /// Where the call came from.
    pub(crate) origin: &'a Origin,
    /// Who called (`ctx.caller`).
    pub(crate) caller: &'a crate::Caller,
    /// The tool's name as called.
    pub(crate) tool: &'a str,
    /// The arguments as the client sent them.
    pub(crate) args: &'a Value,
    /// The hooks' and the approval's decisions.
    pub(crate) decisions: (Option<&'static str>, Option<&'static str>),
    /// `ok`, `error` or `input_required`.
    pub(crate) outcome: &'static str,
    /// The error's type, if the call failed.
    pub(crate) error_type: Option<&'a str>,
    /// How long the call took, in milliseconds.
    pub(crate) duration_ms: u64,
}

impl AuditLog {
    /// The audit log `[audit]` asks for (`None`: no `path`), a relative path taken from
    /// `base` (the config file's directory). `Err` names the path and why it cannot be
    /// written.
    pub(crate) fn open(
        settings: Settings<'_>,
        base: Option<&Path>,
    ) -> Result<Option<Self>, String> {
        let Some(path) = settings.path else {
            return Ok(None);
        };
        let sink = if path.as_os_str() == "stderr" {
            Sink::Stderr
        } else {
            let path = match (path.is_relative(), base) {
                (true, Some(base)) => base.join(path),
                _ => path.to_path_buf(),
            };
            let file = append(&path)?;
            let size = file.metadata().map(|m| m.len()).unwrap_or(0);
            Sink::File {
                path,
                file,
                size,
                max_bytes: settings.max_bytes.unwrap_or(DEFAULT_MAX_BYTES),
            }
        };
        Ok(Some(Self {
            sink: Mutex::new(sink),
            arguments: settings.arguments,
            replica: replica_id(),
        }))
    }

    /// Writes `entry`'s line; a failure is reported on stderr and counted.
    pub(crate) fn write(&self, entry: &Entry<'_>) {
        let mut line = self.line(entry).to_string();
        line.push('\n');
        let mut sink = self.sink.lock();
        if let Err(problem) = sink.write(line.as_bytes()) {
            drop(sink);
            metrics::counter!(crate::telemetry::metric::AUDIT_WRITE_ERRORS).increment(1);
            eprintln!(
                "toolhost: cannot write the audit line of {} (request {}): {problem}",
                entry.tool, entry.request_id
            );
        }
    }

    /// `ctx` made ready for auditing a call from `origin`: it notes the hooks' and the
    /// approval's decisions, and each `ctx.call` it makes (at any depth) writes its own line
    /// naming its parent.
    pub(crate) fn auditing(self: &Arc<Self>, ctx: CallContext, origin: &Origin) -> CallContext {
        let (log, origin, caller) = (self.clone(), origin.clone(), ctx.caller.clone());
        ctx.noting_decisions().auditing_nested(move |call| {
            log.write(&Entry {
                request_id: call.request_id,
                parent: Some(call.parent),
                task_id: call.task_id,
                origin: &origin,
                caller: &caller,
                tool: call.tool,
                args: call.args,
                decisions: call.decisions,
                outcome: if call.error_type.is_some() { "error" } else { "ok" },
                error_type: call.error_type,
                duration_ms: millis(call.duration),
            });
        })
    }

    /// The JSON of `entry`'s line.
    fn line(&self, entry: &Entry<'_>) -> Value {
        let digest = Sha256::digest(canonical(entry.args).as_bytes());
        let mut line = json!({
            "time": rfc3339_now(),
            "request_id": entry.request_id,
            "parent": entry.parent,
            "task_id": entry.task_id,
            "caller": caller(entry.caller),
            "client": entry.origin.client.as_ref().map(|(name, version)| {
                json!({ "name": name, "version": version })
            }),
            "transport": entry.origin.transport,
            "session_id": entry.origin.session_id,
            "tool": entry.tool,
            "arguments_sha256": hex(&digest),
            "hooks": entry.decisions.0,
            "approval": entry.decisions.1,
            "outcome": entry.outcome,
            "error_type": entry.error_type,
            "duration_ms": entry.duration_ms,
            "replica": self.replica,
        });
        if self.arguments
            && let Some(map) = line.as_object_mut()
        {
            map.insert("arguments".into(), entry.args.clone());
        }
        line
    }
}

impl Sink {
    fn write(&mut self, line: &[u8]) -> Result<(), String> {
        match self {
            Sink::Stderr => std::io::stderr()
                .lock()
                .write_all(line)
                .map_err(|e| e.to_string()),
            Sink::File {
                path,
                file,
                size,
                max_bytes,
            } => {
                let len = line.len() as u64;
                if *max_bytes > 0 && *size > 0 && *size + len > *max_bytes {
                    let rotated = rotated_name(path);
                    std::fs::rename(&*path, &rotated).map_err(|e| {
                        format!(
                            "cannot rotate {} to {}: {e}",
                            path.display(),
                            rotated.display()
                        )
                    })?;
                    *file = append(path)?;
                    *size = 0;
                }
                file.write_all(line)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                *size += len;
                Ok(())
            }
        }
    }
}

/// `duration` in whole milliseconds.
pub(crate) fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// `audit.log` → `audit.log.1`.
fn rotated_name(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".1");
    PathBuf::from(name)
}

fn append(path: &Path) -> Result<File, String> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| {
            format!(
                "[audit] path: cannot open {} for writing: {e}",
                path.display()
            )
        })
}

/// Who called: the call's own caller (`ctx.caller`: its kind, id and OAuth client id).
fn caller(caller: &crate::Caller) -> Value {
    let mut value = json!({ "id": caller.id(), "kind": caller.kind().as_str() });
    if let Some(client_id) = caller.client_id() {
        value["client_id"] = json!(client_id);
    }
    value
}

/// The arguments as canonical JSON: object keys sorted at every level (`serde_json`'s map
/// is ordered), no whitespace — the same arguments always digest the same.
fn canonical(args: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<_> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                Value::Object(
                    entries
                        .into_iter()
                        .map(|(k, v)| (k.clone(), sorted(v)))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(args).to_string()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `hostname:pid`: tells the replicas of a fleet apart in a merged log.
fn replica_id() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: `buf` is writable for its whole length, which is what we pass.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0;
    let host = match ok {
        true => {
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            String::from_utf8_lossy(&buf[..end]).into_owned()
        }
        false => "unknown".to_string(),
    };
    format!("{host}:{}", std::process::id())
}

/// Now as RFC 3339 UTC with milliseconds (`2026-12-05T03:10:00.123Z`).
fn rfc3339_now() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(now.as_secs(), now.subsec_millis())
}

/// `secs` since the epoch as RFC 3339 UTC (Howard Hinnant's civil-from-days).
fn rfc3339(secs: u64, millis: u32) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_utc() {
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_796_440_245, 7), "2026-12-05T03:10:45.007Z");
        assert_eq!(rfc3339(951_782_400, 999), "2000-02-29T00:00:00.999Z");
    }

    #[test]
    fn argument_digests_ignore_key_order() {
        let a = json!({"b": 1, "a": {"y": [1, {"q": 1, "p": 2}], "x": null}});
        let b = json!({"a": {"x": null, "y": [1, {"p": 2, "q": 1}]}, "b": 1});
        assert_eq!(canonical(&a), canonical(&b));
        assert_eq!(
            canonical(&a),
            r#"{"a":{"x":null,"y":[1,{"p":2,"q":1}]},"b":1}"#
        );
    }
}

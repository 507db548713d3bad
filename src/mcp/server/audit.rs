//! The audit log (`[audit]`, docs/telemetry.md#audit-log): one JSON line per call that
//! reached the pipeline, written before its result is sent. A file grows to `max_bytes`,
//! then becomes `NAME.1` (replacing the last one) and a new file starts. A line that cannot
//! be written is reported on stderr and counted (`toolhost_audit_write_errors_total`); the
//! call still answers.

use super::origin::Origin;
use crate::CallContext;
use parking_lot::Mutex;
use serde::Serialize;
use serde_json::Value;
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
        let written = self
            .line(entry)
            .and_then(|line| self.sink.lock().write(&line));
        if let Err(problem) = written {
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
                outcome: if call.error_type.is_some() {
                    "error"
                } else {
                    "ok"
                },
                error_type: call.error_type,
                duration_ms: millis(call.duration),
            });
        })
    }

    /// `entry`'s line, newline included. Serialised straight from borrowed fields (no
    /// JSON tree is built, nothing of the arguments is copied): it is written for every
    /// call, and its cost is the audit log's cost.
    fn line(&self, entry: &Entry<'_>) -> Result<Vec<u8>, String> {
        let digest = serde_json::to_vec(&Canonical(entry.args))
            .map(|canonical| hex(&Sha256::digest(canonical)))
            .map_err(|e| format!("cannot encode the arguments: {e}"))?;
        let line = Line {
            time: rfc3339_now(),
            request_id: entry.request_id,
            parent: entry.parent,
            task_id: entry.task_id,
            caller: CallerField {
                id: entry.caller.id(),
                kind: entry.caller.kind().as_str(),
                client_id: entry.caller.client_id(),
            },
            client: entry
                .origin
                .client
                .as_ref()
                .map(|(name, version)| ClientField { name, version }),
            transport: entry.origin.transport,
            session_id: entry.origin.session_id.as_deref(),
            tool: entry.tool,
            arguments_sha256: digest,
            hooks: entry.decisions.0,
            approval: entry.decisions.1,
            outcome: entry.outcome,
            error_type: entry.error_type,
            duration_ms: entry.duration_ms,
            replica: &self.replica,
            arguments: self.arguments.then_some(entry.args),
        };
        let mut bytes = serde_json::to_vec(&line).map_err(|e| e.to_string())?;
        bytes.push(b'\n');
        Ok(bytes)
    }
}

/// One audit line (docs/telemetry.md#audit-log), in its fields' order.
#[derive(Serialize)]
struct Line<'a> {
    time: String,
    request_id: &'a str,
    parent: Option<&'a str>,
    task_id: Option<&'a str>,
    caller: CallerField<'a>,
    client: Option<ClientField<'a>>,
    transport: &'a str,
    session_id: Option<&'a str>,
    tool: &'a str,
    arguments_sha256: String,
    hooks: Option<&'a str>,
    approval: Option<&'a str>,
    outcome: &'a str,
    error_type: Option<&'a str>,
    duration_ms: u64,
    replica: &'a str,
    /// Only with `[audit] arguments = true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<&'a Value>,
}

/// Who called: the call's own caller (`ctx.caller`: its kind, id and OAuth client id).
#[derive(Serialize)]
struct CallerField<'a> {
    id: &'a str,
    kind: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    client_id: Option<&'a str>,
}

/// The client's `clientInfo`.
#[derive(Serialize)]
struct ClientField<'a> {
    name: &'a str,
    version: &'a str,
}

/// A JSON value serialised canonically: object keys sorted at every level (the map keeps
/// insertion order), no whitespace — the same arguments always digest the same. Sorts
/// references to the entries; copies nothing.
struct Canonical<'a>(&'a Value);

impl Serialize for Canonical<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self.0 {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                let mut out = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    out.serialize_entry(key, &Canonical(value))?;
                }
                out.end()
            }
            Value::Array(items) => serializer.collect_seq(items.iter().map(Canonical)),
            other => other.serialize(serializer),
        }
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

/// The arguments as canonical JSON text (see [`Canonical`]).
#[cfg(test)]
fn canonical(args: &Value) -> String {
    serde_json::to_string(&Canonical(args)).unwrap_or_default()
}

/// `bytes` as lowercase hex.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
    out
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
    use serde_json::json;

    #[test]
    fn digests_are_lowercase_hex() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa0, 0xff]), "000fa0ff");
    }

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

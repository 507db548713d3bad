//! Hot reload (docs/discovery.md): re-read the configuration, rediscover (the verdict cache keeps
//! unchanged files cheap), load fresh VMs, and swap the new world and registry contents in
//! together. Calls in flight finish on the world they started on; a call started after the
//! swap sees the new one. A file that now fails keeps serving its last good version, its
//! error reported in the event.

use super::Host;
use super::builder::build_world;
use crate::config::LoadedConfig;
use crate::error::{Error, LoadError};
use crate::registry::RegistryState;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

/// What one reload changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReloadEvent {
    /// Tools that appeared.
    pub added: Vec<String>,
    /// Tools that disappeared.
    pub removed: Vec<String>,
    /// Tools whose definition or source file changed.
    pub changed: Vec<String>,
    /// Load and parse errors of tool files (including files that kept their last good
    /// version) and of the configuration file (the previous configuration stays).
    pub errors: Vec<LoadError>,
    /// The reload as a whole failed (the Lua runtime could not start, a tool directory
    /// vanished): the previous tools keep serving.
    pub failed: Option<String>,
    /// How long the reload took, in milliseconds.
    pub duration_ms: u64,
}

impl ReloadEvent {
    /// True when the set or the definitions of tools changed.
    pub fn tools_changed(&self) -> bool {
        !(self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty())
    }

    /// One line for operators: `reload: +a -b ~c, 1 error, 12 ms`.
    pub fn summary(&self) -> String {
        let list = |sign: char, names: &[String]| {
            names
                .iter()
                .map(|n| format!("{sign}{n}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let parts: Vec<String> = [
            list('+', &self.added),
            list('-', &self.removed),
            list('~', &self.changed),
        ]
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect();
        let tools = if parts.is_empty() {
            "no tool changes".to_string()
        } else {
            parts.join(" ")
        };
        let errors = match self.errors.len() + usize::from(self.failed.is_some()) {
            0 => String::new(),
            1 => ", 1 error".to_string(),
            n => format!(", {n} errors"),
        };
        format!("reload: {tools}{errors}, {} ms", self.duration_ms)
    }
}

/// A tool's identity for change detection: everything that shows in its definition, and
/// the source it was loaded from.
pub(super) fn fingerprint(
    state: &RegistryState,
    sources: &crate::discovery::Sources,
    which: impl Fn(&crate::registry::ToolEntry) -> bool,
) -> BTreeMap<String, String> {
    state
        .all()
        .filter(|tool| which(tool))
        .map(|tool| {
            let source_hash = tool
                .file
                .as_ref()
                .and_then(|f| sources.get(f.as_os_str()))
                .map(|s| {
                    use std::hash::{Hash, Hasher};
                    let mut hasher = std::collections::hash_map::DefaultHasher::new();
                    s.hash(&mut hasher);
                    hasher.finish()
                })
                .unwrap_or(0);
            let key = match &tool.scope {
                Some(scope) => format!("{}@{scope}", tool.name),
                None => tool.name.to_string(),
            };
            let value = format!(
                "{}|{}|{}|{}|{source_hash}|{:?}",
                tool.toolset,
                serde_json::Value::Object((*tool.schema).clone()),
                tool.description,
                tool.emoji,
                tool.offline
            );
            (key, value)
        })
        .collect()
}

impl Host {
    /// Reloads now (what the watcher does after a change) and reports what changed. Never
    /// fails: a configuration that no longer parses keeps the current one (and is reported).
    pub fn reload(&self) -> ReloadEvent {
        let _one_at_a_time = self.inner.reloading.lock();
        let started = Instant::now();
        let mut errors = Vec::new();
        let (old_world, old_state) = self.current();
        let config = match &self.inner.inputs.config_path {
            Some(path) => match LoadedConfig::load(path) {
                Ok(config) => Arc::new(config),
                Err(error) => {
                    errors.push(config_error(path, &error));
                    old_world.config.clone()
                }
            },
            None => old_world.config.clone(),
        };
        let last_good = self.inner.last_good.lock().clone();
        #[cfg(feature = "mcp-client")]
        let externals = {
            // An edited `[mcp_servers.X]` restarts just that server.
            self.inner.mcp.reconcile(
                &config.config.mcp_servers,
                super::builder::default_timeout_ms(&config.config),
            );
            self.inner.mcp.entries()
        };
        #[cfg(not(feature = "mcp-client"))]
        let externals = Vec::new();
        let built = build_world(&self.inner.inputs, config, &last_good, externals);
        let (world, state, sources) = match built {
            Ok(parts) => parts,
            Err(error) => {
                crate::telemetry::metric::reloaded(false, errors.len());
                return ReloadEvent {
                    errors,
                    failed: Some(format!(
                        "reload failed, keeping the previous tools: {error}"
                    )),
                    duration_ms: started.elapsed().as_millis() as u64,
                    ..ReloadEvent::default()
                };
            }
        };
        errors.extend(world.verdicts.iter().filter_map(|v| v.error.clone()));
        let before = fingerprint(&old_state, &last_good, |_| true);
        let after = fingerprint(&state, &sources, |_| true);
        {
            let mut current = self.inner.world.write();
            self.inner.registry.replace(state);
            *current = Arc::new(world);
        }
        *self.inner.last_good.lock() = sources;
        let event = ReloadEvent {
            added: after
                .keys()
                .filter(|k| !before.contains_key(*k))
                .cloned()
                .collect(),
            removed: before
                .keys()
                .filter(|k| !after.contains_key(*k))
                .cloned()
                .collect(),
            changed: after
                .iter()
                .filter(|(k, v)| before.get(*k).is_some_and(|old| old != *v))
                .map(|(k, _)| k.clone())
                .collect(),
            errors,
            duration_ms: started.elapsed().as_millis() as u64,
            failed: None,
        };
        crate::telemetry::metric::reloaded(true, event.errors.len());
        // Nobody listening is fine.
        let _ = self.inner.reloads.send(event.clone());
        tracing::info!(target: "toolhost::load", "{}", event.summary());
        event
    }
}

/// A configuration file that no longer loads, as a load error of that file.
fn config_error(path: &std::path::Path, error: &Error) -> LoadError {
    let shown = path.display().to_string();
    let message = match error {
        Error::ConfigInvalid { message, .. } => message.clone(),
        Error::ConfigRead { source, .. } => format!("cannot read: {source}"),
        other => other.to_string(),
    };
    LoadError::new(
        &shown,
        None,
        format!("{message} (keeping the previous configuration)"),
    )
}

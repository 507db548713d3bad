//! `Host::watch()`: file changes under the tool directories (recursively, so `lib/` and
//! package folders count; `.lua` files and packs' `pack.toml`), to the config file and to
//! the `toolhost.lock` beside it, debounced (`[runtime]
//! reload_debounce_ms`, default 200 ms), trigger a [`Host::reload`]; each reload's event
//! is delivered to the returned [`Watch`]. Editors' atomic saves (write a temp file, rename
//! it over) arrive as a rename of the `.lua` path and are handled like any write.

use super::Host;
use super::reload::ReloadEvent;
use crate::error::{Error, Result};
use crate::pack::{LOCK_FILE, MANIFEST_FILE};
use notify::{EventKind, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::mpsc;

/// Default debounce between the last change and the reload.
pub(super) const DEFAULT_DEBOUNCE_MS: u64 = 200;

/// Reload events of a watched host; watching stops when this is dropped.
pub struct Watch {
    events: mpsc::UnboundedReceiver<ReloadEvent>,
    _debouncer: Debouncer<notify::RecommendedWatcher, RecommendedCache>,
}

impl Watch {
    /// The next reload event (`None` once watching has stopped).
    pub async fn next(&mut self) -> Option<ReloadEvent> {
        self.events.recv().await
    }

    /// The next reload event, blocking the thread (outside async code).
    pub fn blocking_next(&mut self) -> Option<ReloadEvent> {
        self.events.blocking_recv()
    }

    /// The next event if one arrived within `timeout` (outside async code).
    pub fn next_timeout(&mut self, timeout: Duration) -> Option<ReloadEvent> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            match self.events.try_recv() {
                Ok(event) => return Some(event),
                Err(mpsc::error::TryRecvError::Disconnected) => return None,
                Err(mpsc::error::TryRecvError::Empty) => {}
            }
            if std::time::Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Which changed paths matter: Lua files, packs' `pack.toml` and folders under the tool
/// directories (not the cache, not editor scratch files), the config file itself and the
/// `toolhost.lock` beside it (a pack loads only while it matches both).
struct Relevance {
    tool_dirs: Vec<PathBuf>,
    cache_dir: PathBuf,
    config: Option<PathBuf>,
    lock: Option<PathBuf>,
}

impl Relevance {
    fn matters(&self, path: &Path) -> bool {
        if self.config.as_deref() == Some(path) || self.lock.as_deref() == Some(path) {
            return true;
        }
        if path.starts_with(&self.cache_dir) || !self.tool_dirs.iter().any(|d| path.starts_with(d))
        {
            return false;
        }
        if path.file_name() == Some(std::ffi::OsStr::new(MANIFEST_FILE)) {
            return true;
        }
        match path.extension() {
            Some(ext) => ext == "lua",
            // A folder (a package appearing or going away).
            None => true,
        }
    }
}

fn absolute(path: &Path) -> PathBuf {
    path.canonicalize()
        .unwrap_or_else(|_| crate::discovery::absolutize(path))
}

impl Host {
    /// Starts watching; see the module docs.
    pub fn watch(&self) -> Result<Watch> {
        let world = self.inner.world.read().clone();
        let debounce = world
            .config
            .config
            .runtime
            .reload_debounce_ms
            .unwrap_or(DEFAULT_DEBOUNCE_MS);
        let config = self.inner.inputs.config_path.as_deref().map(absolute);
        let relevance = Relevance {
            tool_dirs: world.dirs.iter().map(|d| absolute(&d.path)).collect(),
            cache_dir: absolute(&world.cache_dir),
            lock: config
                .as_deref()
                .and_then(Path::parent)
                .map(|dir| dir.join(LOCK_FILE)),
            config: config.clone(),
        };
        let (sender, events) = mpsc::unbounded_channel();
        let host = self.clone();
        let mut debouncer = new_debouncer(
            Duration::from_millis(debounce),
            None,
            move |result: DebounceEventResult| match result {
                Ok(changes) => {
                    // Reading files (as a reload does) is reported as access: only real
                    // changes count, or every reload would trigger the next.
                    let relevant = changes.iter().any(|change| {
                        !matches!(change.kind, EventKind::Access(_) | EventKind::Other)
                            && change.paths.iter().any(|p| relevance.matters(p))
                    });
                    if relevant {
                        let _ = sender.send(host.reload());
                    }
                }
                Err(errors) => {
                    for error in errors {
                        tracing::warn!("watching for changes: {error}");
                    }
                }
            },
        )
        .map_err(|source| Error::Watch {
            path: world
                .dirs
                .first()
                .map(|d| d.path.clone())
                .unwrap_or_default(),
            source,
        })?;
        // The library's folder only changes when the binary does.
        for dir in world.dirs.iter().filter(|d| !d.is_library()) {
            if dir.path.is_dir() {
                debouncer
                    .watch(&dir.path, RecursiveMode::Recursive)
                    .map_err(|source| Error::Watch {
                        path: dir.path.clone(),
                        source,
                    })?;
            }
        }
        // The config's folder, not the file: an atomic save replaces the file.
        if let Some(parent) = config.as_deref().and_then(Path::parent) {
            debouncer
                .watch(parent, RecursiveMode::NonRecursive)
                .map_err(|source| Error::Watch {
                    path: parent.to_path_buf(),
                    source,
                })?;
        }
        Ok(Watch {
            events,
            _debouncer: debouncer,
        })
    }
}

//! The MCP client side (`[mcp_servers.NAME]`, docs/configuration.md): other MCP servers' tools in the
//! same registry and pipeline as Lua tools.
//!
//! [`McpClients`] owns one small tokio runtime of its own (created only when a server is
//! configured), so links live on independently of whoever built the host and whatever
//! runtime, if any, it runs on. Each server has a [`Link`] whose supervisor task connects,
//! lists and reconnects; the host hears of every change through the listener it sets and
//! updates the registry (generation bump, `list_changed` to its own MCP clients).
//! A server's last listing is remembered in the cache directory, so a server that fails to
//! start still has its tools registered (unavailable, with the reason).

mod connect;
mod error;
mod http;
mod link;
mod listener;
mod listing;
mod memory;
mod reap;
mod relay;
mod request;
mod result;
mod screen;
mod stdio;
mod tools;
mod trace;

pub(crate) use link::Status;

use crate::config::McpServerConfig;
use crate::registry::ToolEntry;
use link::Link;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Once, OnceLock, Weak};
use std::time::{Duration, Instant};

/// How long ending the servers waits at most for their killed children to be gone.
const END_WAIT: Duration = Duration::from_secs(5);

/// Every link of every host in this process, so the CLI can end all servers before it
/// exits whoever still holds a host (see [`end_all`]).
static LIVE: parking_lot::Mutex<Vec<Weak<Link>>> = parking_lot::Mutex::new(Vec::new());

/// Whether a SIGINT/SIGTERM ends the process after ending the servers (see
/// [`end_on_signal`]).
static END_ON_SIGNAL: AtomicBool = AtomicBool::new(false);

/// The signal that is ending the process (0: none yet). Set before the servers are
/// killed: the command's own call then fails with "server gone", and its thread must
/// not win the race to exit with status 1 instead of 128 + the signal.
static ENDING_SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Asks that, once a server has been started, SIGINT and SIGTERM end the process only
/// after its servers are gone (exit status 128 + the signal's number). For the CLI's
/// one-shot commands, which listen for no signal themselves: by default the signal killed
/// the command at once and its servers died on their own a moment later. `serve` has its
/// own orderly shutdown and does not ask.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) fn end_on_signal() {
    END_ON_SIGNAL.store(true, Ordering::Relaxed);
}

/// Stops every server of every host in this process and waits (bounded) until their
/// children are gone: the CLI calls it before exiting, so no server outlives the command
/// however the command ends (a host kept alive elsewhere, `process::exit`, an error).
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) fn end_all() {
    let links: Vec<Arc<Link>> = LIVE.lock().iter().filter_map(Weak::upgrade).collect();
    end(&links);
    // Whichever thread gets here first after a signal exits as the signal says.
    let signal = ENDING_SIGNAL.load(Ordering::SeqCst);
    if signal != 0 {
        std::process::exit(128 + signal);
    }
}

/// Stops `links` (all killed at once) and waits until their children are gone.
fn end(links: &[Arc<Link>]) {
    if links.is_empty() {
        return;
    }
    reap::adopting_orphans(|| {
        let killed: Vec<i32> = links.iter().filter_map(|link| link.stop()).collect();
        let deadline = Instant::now() + END_WAIT;
        for pid in killed {
            reap::reap(pid, deadline);
        }
    });
}

/// Called after any server's tools or status changed.
type ChangeListener = Box<dyn Fn() + Send + Sync>;

/// One server's state, for `toolhost list` / `discover` and embedders' diagnostics.
#[derive(Debug, Clone)]
pub(crate) struct ServerStatus {
    /// `[mcp_servers.NAME]`.
    pub name: String,
    /// Up, starting, or down with the reason.
    pub status: Status,
}

/// Every configured server's link.
pub(crate) struct McpClients {
    runtime: OnceLock<tokio::runtime::Runtime>,
    links: Mutex<BTreeMap<String, Arc<Link>>>,
    memory: memory::Memory,
    default_timeout_ms: Mutex<u64>,
    listener: Arc<OnceLock<ChangeListener>>,
    /// Problems of the last conversion (collisions, tools left out), logged once each.
    problems: Mutex<Vec<String>>,
}

impl McpClients {
    /// Starts every enabled server in `servers` (in parallel) and waits until each has
    /// connected or failed (at most its `connect_timeout_ms`).
    pub(crate) fn start(
        servers: &BTreeMap<String, McpServerConfig>,
        cache_dir: PathBuf,
        default_timeout_ms: u64,
    ) -> Self {
        let clients = Self {
            runtime: OnceLock::new(),
            links: Mutex::new(BTreeMap::new()),
            memory: memory::Memory::new(cache_dir),
            default_timeout_ms: Mutex::new(default_timeout_ms),
            listener: Arc::new(OnceLock::new()),
            problems: Mutex::new(Vec::new()),
        };
        // Listening before any child is spawned: a signal in between would kill the host
        // at once, leaving its children to die on their own.
        if END_ON_SIGNAL.load(Ordering::Relaxed) && servers.values().any(|s| s.is_enabled()) {
            clients.watch_signals();
        }
        let started = clients.reconcile(servers, default_timeout_ms);
        clients.wait_settled(&started);
        clients
    }

    /// Sets who hears of changes (the host); set once.
    pub(crate) fn set_listener(&self, listener: ChangeListener) {
        let _ = self.listener.set(listener);
    }

    /// Brings the links in line with `servers`: a removed or disabled server is stopped, a
    /// new one started, a changed one restarted; unchanged ones go on untouched. Returns
    /// the links started.
    pub(crate) fn reconcile(
        &self,
        servers: &BTreeMap<String, McpServerConfig>,
        default_timeout_ms: u64,
    ) -> Vec<Arc<Link>> {
        *self.default_timeout_ms.lock() = default_timeout_ms;
        let mut links = self.links.lock();
        links.retain(|name, link| {
            let keep = servers
                .get(name)
                .is_some_and(|config| config.is_enabled() && *config == link.config);
            if !keep {
                tracing::info!(target: "toolhost::mcp_client", server = %name, "stopping");
                link.stop();
            }
            keep
        });
        let mut started = Vec::new();
        for (name, config) in servers {
            if !config.is_enabled() || links.contains_key(name) {
                continue;
            }
            let link = Arc::new(Link::new(
                name,
                config.clone(),
                self.memory.recall(name, config),
            ));
            let on_change = self.on_change();
            {
                let mut live = LIVE.lock();
                live.retain(|link| link.strong_count() > 0);
                live.push(Arc::downgrade(&link));
            }
            self.runtime().spawn(link.clone().supervise(on_change));
            links.insert(name.clone(), link.clone());
            started.push(link);
        }
        started
    }

    /// The registry entries of every server's tools; problems are logged (once each).
    pub(crate) fn entries(&self) -> Vec<ToolEntry> {
        let links: Vec<Arc<Link>> = self.links.lock().values().cloned().collect();
        let default_timeout_ms = *self.default_timeout_ms.lock();
        let mut all = Vec::new();
        let mut problems = Vec::new();
        for link in &links {
            let (entries, found) = tools::entries(link, default_timeout_ms);
            all.extend(entries);
            problems.extend(found);
        }
        let mut known = self.problems.lock();
        for problem in &problems {
            if !known.contains(problem) {
                tracing::warn!(target: "toolhost::mcp_client", "{problem}");
            }
        }
        *known = problems;
        all
    }

    /// Problems met turning the servers' tools into registry entries.
    pub(crate) fn problems(&self) -> Vec<String> {
        self.problems.lock().clone()
    }

    /// Each configured, enabled server's state, by name.
    pub(crate) fn statuses(&self) -> Vec<ServerStatus> {
        self.links
            .lock()
            .values()
            .map(|link| ServerStatus {
                name: link.name.clone(),
                status: link.status(),
            })
            .collect()
    }

    fn runtime(&self) -> &tokio::runtime::Runtime {
        self.runtime.get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("toolhost-mcp-client")
                .enable_all()
                .build()
                // Without a runtime no server can be reached; the OS refusing a thread
                // at start-up leaves nothing sensible to do.
                .expect("the MCP client runtime starts")
        })
    }

    /// Once per process: on SIGINT or SIGTERM, ends every server, then the process.
    fn watch_signals(&self) {
        static WATCHING: Once = Once::new();
        WATCHING.call_once(|| {
            let runtime = self.runtime();
            let signal = {
                let _context = runtime.enter();
                crate::shutdown::listen()
            };
            runtime.spawn(async move {
                let number = signal.await;
                ENDING_SIGNAL.store(number, Ordering::SeqCst);
                // Ending waits (bounded) for the children: not on the runtime's thread.
                let _ = tokio::task::spawn_blocking(move || {
                    // Exits with 128 + `number` once the servers are gone.
                    end_all();
                    std::process::exit(128 + number);
                })
                .await;
            });
        });
    }

    /// What a link calls after a change: remember the listing, tell the host (on a
    /// blocking thread: the host's registry update may take a lock a reload holds).
    fn on_change(&self) -> Arc<dyn Fn(&Link) + Send + Sync> {
        let listener = self.listener.clone();
        let memory = self.memory.clone();
        Arc::new(move |link: &Link| {
            if link.status() == Status::Up
                && let Some(tools) = link.tools()
            {
                memory.remember(&link.name, &link.config, &tools);
            }
            let listener = listener.clone();
            tokio::task::spawn_blocking(move || {
                if let Some(listener) = listener.get() {
                    listener();
                }
            });
        })
    }

    fn wait_settled(&self, links: &[Arc<Link>]) {
        if links.is_empty() {
            return;
        }
        let limit = links
            .iter()
            .map(|link| link.connect_timeout())
            .max()
            .unwrap_or_default()
            + Duration::from_millis(500);
        let (done, wait) = std::sync::mpsc::channel();
        let links = links.to_vec();
        self.runtime().spawn(async move {
            // The attempts run in parallel (one supervisor each): waiting for them in turn
            // takes as long as the slowest.
            let all = async {
                for link in &links {
                    link.settled().await;
                }
            };
            let _ = tokio::time::timeout(limit, all).await;
            let _ = done.send(());
        });
        let _ = wait.recv_timeout(limit + Duration::from_secs(1));
    }
}

impl Drop for McpClients {
    fn drop(&mut self) {
        let links: Vec<Arc<Link>> = self.links.lock().values().cloned().collect();
        end(&links);
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

//! When what a server offers really changes: one watcher per server compares what the
//! server lists (tools, resources and prompts, as registered) and each resource's version
//! (the source of the file that defines it) after every reload, and counts the reloads
//! that changed each. Both ways of telling clients read the counts: a 2025-11-25
//! session's own `notifications/*/list_changed` and `notifications/resources/updated`,
//! and every open 2026-07-28 `subscriptions/listen`. A reload that only reported an error,
//! or touched files without changing anything listed, counts nothing.

use super::Shared;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Weak};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::watch;

/// How many reloads that updated resources are remembered: a subscriber further behind
/// than that treats every URI it watches as updated.
const RECENT_UPDATES: usize = 16;

/// What changed since the server started.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Changes {
    /// Reloads that changed the tool listing.
    pub(crate) tools: u64,
    /// Reloads that changed the resource listing (resources and templates).
    pub(crate) resources: u64,
    /// Reloads that changed the prompt listing.
    pub(crate) prompts: u64,
    /// Reloads that updated some resource.
    pub(crate) updates: u64,
    /// The resources (keys: URI or template text) each of the last [`RECENT_UPDATES`] of
    /// those updated, oldest first, with its number.
    recent: Arc<VecDeque<(u64, Arc<BTreeSet<String>>)>>,
}

/// The news between two [`Changes`].
#[derive(Debug, Default, PartialEq)]
pub(crate) struct News {
    /// The tool listing changed.
    pub(crate) tools: bool,
    /// The resource listing changed.
    pub(crate) resources: bool,
    /// The prompt listing changed.
    pub(crate) prompts: bool,
    /// The resources updated in between.
    pub(crate) updated: Updated,
}

/// Which resources were updated.
#[derive(Debug, Default, PartialEq)]
pub(crate) enum Updated {
    /// None.
    #[default]
    None,
    /// These (keys: URI or template text).
    Keys(BTreeSet<String>),
    /// Too many reloads ago to tell: take every one as updated.
    All,
}

impl Updated {
    /// Whether the resource `key` (`None`: no resource serves the URI any more) is among
    /// them.
    pub(crate) fn covers(&self, key: Option<&str>) -> bool {
        match (self, key) {
            (Updated::None, _) | (Updated::Keys(_), None) => false,
            (Updated::All, _) => true,
            (Updated::Keys(keys), Some(key)) => keys.contains(key),
        }
    }
}

impl Changes {
    /// What changed since `seen`.
    pub(crate) fn since(&self, seen: &Changes) -> News {
        let updated = if self.updates == seen.updates {
            Updated::None
        } else if self
            .recent
            .front()
            .is_some_and(|(number, _)| *number <= seen.updates + 1)
        {
            let keys = self
                .recent
                .iter()
                .filter(|(number, _)| *number > seen.updates)
                .flat_map(|(_, keys)| keys.iter().cloned())
                .collect();
            Updated::Keys(keys)
        } else {
            Updated::All
        };
        News {
            tools: self.tools != seen.tools,
            resources: self.resources != seen.resources,
            prompts: self.prompts != seen.prompts,
            updated,
        }
    }

    /// These changes after a reload from `before` to `after`.
    fn record(&mut self, before: &Snapshot, after: &Snapshot) {
        self.tools += u64::from(before.tools != after.tools);
        self.resources += u64::from(before.resources != after.resources);
        self.prompts += u64::from(before.prompts != after.prompts);
        let updated: BTreeSet<String> = after
            .versions
            .iter()
            .filter(|(key, version)| before.versions.get(*key).is_some_and(|v| v != *version))
            .map(|(key, _)| key.clone())
            .collect();
        if !updated.is_empty() {
            self.updates += 1;
            let mut recent = (*self.recent).clone();
            recent.push_back((self.updates, Arc::new(updated)));
            while recent.len() > RECENT_UPDATES {
                recent.pop_front();
            }
            self.recent = Arc::new(recent);
        }
    }
}

/// The changes since the server started (its receivers wait for the next).
pub(crate) type ListingChanges = watch::Receiver<Changes>;

/// What a server offers, as compared across reloads.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Snapshot {
    /// The tools, as registered.
    pub(crate) tools: Vec<serde_json::Value>,
    /// The resources and templates of the selection, as listed.
    pub(crate) resources: Vec<serde_json::Value>,
    /// The prompts of the selection, as listed.
    pub(crate) prompts: Vec<serde_json::Value>,
    /// Each resource's version (see `Host::resource_versions`).
    pub(crate) versions: BTreeMap<String, u64>,
}

/// Starts the watcher of `shared`'s listings; it ends once the server is gone (at the next
/// reload after that) or the host stops reloading. Call it inside the runtime.
pub(crate) fn watch(shared: &Arc<Shared>) -> ListingChanges {
    let (changes, receiver) = watch::channel(Changes::default());
    // Subscribed before the first snapshot is taken, so a reload in between is compared.
    let mut reloads = shared.host.reload_events();
    // The first snapshot is taken here, once per server (registered definitions, no
    // probe): whoever starts the watcher (a subscription about to be acknowledged) must
    // not miss a reload that lands before an asynchronous first look.
    let mut listed = shared.snapshot();
    let server = Arc::downgrade(shared);
    tokio::spawn(async move {
        loop {
            match reloads.recv().await {
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => break,
            }
            let Some(now) = snapshot(&server).await else {
                break;
            };
            if now == listed {
                continue;
            }
            changes.send_if_modified(|changes| {
                let before = changes.clone();
                changes.record(&listed, &now);
                *changes != before
            });
            listed = now;
        }
    });
    receiver
}

/// What `server` offers now, as registered (no `check_fn` probe nor Lua `list` runs: a
/// reload must never queue behind one; clients list again, and run them then). `None`:
/// the server is gone.
async fn snapshot(server: &Weak<Shared>) -> Option<Snapshot> {
    let shared = server.upgrade()?;
    tokio::task::spawn_blocking(move || shared.snapshot())
        .await
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn snapshot(tools: &[&str], resources: &[&str], versions: &[(&str, u64)]) -> Snapshot {
        Snapshot {
            tools: tools.iter().map(|t| json!(t)).collect(),
            resources: resources.iter().map(|r| json!(r)).collect(),
            prompts: Vec::new(),
            versions: versions.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    #[test]
    fn each_listing_counts_only_its_own_changes() {
        let mut changes = Changes::default();
        let seen = changes.clone();
        changes.record(&snapshot(&["a"], &[], &[]), &snapshot(&["a"], &["r"], &[]));
        let news = changes.since(&seen);
        assert!(news.resources && !news.tools && !news.prompts, "{news:?}");
        assert_eq!(news.updated, Updated::None);
    }

    #[test]
    fn a_new_version_of_a_resource_is_an_update_of_it_alone() {
        let mut changes = Changes::default();
        let seen = changes.clone();
        let before = snapshot(&[], &["r", "s"], &[("r", 1), ("s", 1)]);
        changes.record(&before, &snapshot(&[], &["r", "s"], &[("r", 2), ("s", 1)]));
        let news = changes.since(&seen);
        assert!(!news.resources);
        assert!(news.updated.covers(Some("r")) && !news.updated.covers(Some("s")));
        assert!(!news.updated.covers(None));
        // A resource that appeared is a listing change, not an update.
        let mut changes = Changes::default();
        changes.record(
            &before,
            &snapshot(&[], &["r", "s", "t"], &[("r", 1), ("s", 1), ("t", 1)]),
        );
        assert_eq!(changes.since(&seen).updated, Updated::None);
    }

    #[test]
    fn a_subscriber_far_behind_takes_everything_as_updated() {
        let mut changes = Changes::default();
        let seen = changes.clone();
        for version in 0..(RECENT_UPDATES as u64 + 2) {
            let before = snapshot(&[], &[], &[("r", version)]);
            changes.record(&before, &snapshot(&[], &[], &[("r", version + 1)]));
        }
        assert_eq!(changes.since(&seen).updated, Updated::All);
        let mut recent = changes.clone();
        recent.updates -= 1;
        assert_eq!(
            changes.since(&recent).updated,
            Updated::Keys(BTreeSet::from(["r".to_string()]))
        );
    }
}

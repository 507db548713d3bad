//! When the tool listing really changes: one watcher per server compares what the server
//! lists, as registered, after every reload, and counts the reloads that changed it. Both
//! ways of telling clients read the count: a 2025-11-25 session's own
//! `notifications/tools/list_changed`, and every open 2026-07-28 `subscriptions/listen`.
//! A reload that only reported an error, or touched files without changing the listing,
//! counts nothing.

use super::Shared;
use std::sync::{Arc, Weak};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::watch;

/// The count of listing changes since the server started (its receivers wait for the next).
pub(crate) type ListingChanges = watch::Receiver<u64>;

/// Starts the watcher of `shared`'s listing; it ends once the server is gone (at the next
/// reload after that) or the host stops reloading. Call it inside the runtime.
pub(crate) fn watch(shared: &Arc<Shared>) -> ListingChanges {
    let (changes, receiver) = watch::channel(0);
    // Subscribed before the first listing is taken, so a reload in between is compared.
    let mut reloads = shared.host.reload_events();
    // The first listing is taken here, once per server (registered definitions, no probe):
    // whoever starts the watcher (a subscription about to be acknowledged) must not miss a
    // reload that lands before an asynchronous first look.
    let mut listed = shared.static_listing();
    let server = Arc::downgrade(shared);
    tokio::spawn(async move {
        loop {
            match reloads.recv().await {
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => break,
            }
            let Some(now) = listing(&server).await else {
                break;
            };
            if now[..] == listed[..] {
                continue;
            }
            listed = now;
            changes.send_modify(|count| *count += 1);
        }
    });
    receiver
}

/// What `server` lists now, as registered (no `check_fn` probe runs: a reload must never
/// queue behind one; clients list again, and probe then). `None`: the server is gone.
async fn listing(server: &Weak<Shared>) -> Option<Vec<serde_json::Value>> {
    let shared = server.upgrade()?;
    tokio::task::spawn_blocking(move || shared.static_listing())
        .await
        .ok()
}

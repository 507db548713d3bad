//! How clients hear of changes: on 2025-11-25 a session's own notifications (the
//! `*/list_changed` of what it lists, and `notifications/resources/updated` for the URIs
//! it asked with `resources/subscribe`), and on 2026-07-28 `subscriptions/listen`, the one
//! long-lived request that carries the same notifications, tagged with its id.
//!
//! rmcp acknowledges a subscription with the accepted part of the client's filter
//! (`notifications/subscriptions/acknowledged`): `toolsListChanged`, `promptsListChanged`
//! and `resourcesListChanged` as asked (the last two only while the server has resources or
//! prompts to advertise), and the `resourceSubscriptions` URIs a resource of the selection
//! serves (at most [`MAX_RESOURCE_SUBSCRIPTIONS`] of them). Each reload that really changes
//! a listing, or updates a resource (its file changed, see [`super::listing`]), reaches
//! every open subscription; it ends when the client cancels it or the server shuts down
//! (then it answers with its final result).

use super::McpServer;
use super::listing::{ListingChanges, News};
use crate::Host;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    ResourceUpdatedNotificationParam, SubscribeRequestParams, SubscriptionFilter,
    UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, RoleServer, SubscriptionContext};
use rmcp::{Peer, RoleServer as Role};
use std::collections::BTreeSet;

/// The most resource URIs one session (`resources/subscribe`) or one
/// `subscriptions/listen` watches: a peer asking for more is refused (2025-11-25) or
/// acknowledged with the first ones it may have (2026-07-28), so no peer makes the server
/// hold or check an unbounded list on every reload.
pub(crate) const MAX_RESOURCE_SUBSCRIPTIONS: usize = 1000;

/// The most `subscriptions/listen` baselines one session holds between rmcp asking for the
/// filter and the subscription starting (see `McpServer::accepted_subscription_filter`).
pub(crate) const MAX_PENDING_LISTENS: usize = 64;

impl McpServer {
    /// The resource of the selection serving `uri`, by key (URI or template text), when
    /// the caller may read it.
    fn watchable(&self, uri: &str) -> Option<String> {
        let (key, _, toolset) = self.shared.host.resource_serving(uri)?;
        let ctx = self.shared.selection_context();
        self.shared
            .host
            .content_selected(&toolset, &ctx)
            .then_some(key)
    }

    /// The part of `requested` this server can honour (rmcp then keeps only what the
    /// capabilities advertise).
    pub(super) fn accepted_filter(&self, requested: &SubscriptionFilter) -> SubscriptionFilter {
        let mut accepted = SubscriptionFilter::new();
        let asked = |flag: Option<bool>| (flag == Some(true)).then_some(true);
        accepted.tools_list_changed = asked(requested.tools_list_changed);
        accepted.prompts_list_changed = asked(requested.prompts_list_changed);
        accepted.resources_list_changed = asked(requested.resources_list_changed);
        if let Some(uris) = &requested.resource_subscriptions {
            // Only the first URIs are looked at: a million of them costs nothing more.
            let mut kept: Vec<String> = Vec::new();
            for uri in uris.iter().take(MAX_RESOURCE_SUBSCRIPTIONS) {
                if !kept.contains(uri) && self.watchable(uri).is_some() {
                    kept.push(uri.clone());
                }
            }
            accepted.resource_subscriptions = (!kept.is_empty()).then_some(kept);
        }
        accepted
    }

    /// The scope check of every resource URI a `subscriptions/listen` (2026-07-28) was
    /// acknowledged for: the first one the caller lacks a scope for is the error.
    pub(super) fn check_watch_scopes(&self, context: &SubscriptionContext) -> Result<(), McpError> {
        let uris = context.accepted().resource_subscriptions.iter().flatten();
        for uri in uris {
            if let Some((key, name, toolset)) = self.shared.host.resource_serving(uri) {
                self.check_content_scope(&toolset, &[&key, &name, uri], context.request_context())?;
            }
        }
        Ok(())
    }

    /// `resources/subscribe` (2025-11-25): the session hears of updates of `uri` from now
    /// on. Refused for a URI no resource of the selection serves, on `--stateless` HTTP
    /// (no session outlives the request) and past [`MAX_RESOURCE_SUBSCRIPTIONS`].
    pub(super) fn subscribe_uri(
        &self,
        request: SubscribeRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        if self.session.stateless {
            return Err(McpError::invalid_request(
                "resources/subscribe: this server is stateless (--stateless), so no \
                 subscription outlives the request that makes it",
                None,
            ));
        }
        let uri = request.uri;
        let Some(key) = self.watchable(&uri) else {
            let data = Some(serde_json::json!({ "uri": uri }));
            return Err(McpError::resource_not_found(
                format!("resources/subscribe: no resource serves {uri}"),
                data,
            ));
        };
        let (_, name, toolset) = self.shared.host.resource_serving(&uri).unwrap_or_default();
        self.check_content_scope(&toolset, &[&key, &name, &uri], context)?;
        let mut subscribed = self.session.subscribed.lock();
        if !subscribed.contains(&uri) && subscribed.len() >= MAX_RESOURCE_SUBSCRIPTIONS {
            return Err(McpError::invalid_params(
                format!(
                    "resources/subscribe: this session already watches \
                     {MAX_RESOURCE_SUBSCRIPTIONS} URIs (the limit); unsubscribe from one first"
                ),
                None,
            ));
        }
        subscribed.insert(uri);
        Ok(())
    }

    /// `resources/unsubscribe` (2025-11-25): no more updates of `uri` (a URI never
    /// subscribed to is fine: the client's wish holds).
    pub(super) fn unsubscribe_uri(&self, request: UnsubscribeRequestParams) {
        self.session.subscribed.lock().remove(&request.uri);
    }
}

/// Tells a 2025-11-25 session's client of `news`: each listing that changed, and each URI
/// of `watched` whose resource was updated.
pub(crate) async fn notify_session(
    peer: &Peer<Role>,
    host: &Host,
    news: &News,
    watched: &[String],
) -> Result<(), rmcp::service::ServiceError> {
    if news.tools {
        peer.notify_tool_list_changed().await?;
    }
    if news.resources {
        peer.notify_resource_list_changed().await?;
    }
    if news.prompts {
        peer.notify_prompt_list_changed().await?;
    }
    for uri in updated_uris(host, news, watched) {
        peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
            .await?;
    }
    Ok(())
}

/// The URIs of `watched` that `news` updated: each served by a resource updated in it (a
/// template: every URI it matches).
fn updated_uris<'a>(host: &Host, news: &News, watched: &'a [String]) -> Vec<&'a String> {
    if news.updated == super::listing::Updated::None {
        return Vec::new();
    }
    let unique: BTreeSet<&String> = watched.iter().collect();
    unique
        .into_iter()
        .filter(|uri| {
            let key = host.resource_serving(uri).map(|(key, _, _)| key);
            news.updated.covers(key.as_deref())
        })
        .collect()
}

/// Serves the subscription `context` until it is cancelled or the server stops: each
/// change seen on `changes` after `baseline` (the changes when the subscription was
/// accepted, before its acknowledgment went out) becomes the notification the
/// subscription accepted.
pub(crate) async fn listen(
    context: SubscriptionContext,
    mut changes: ListingChanges,
    baseline: super::listing::Changes,
    host: &Host,
    stopping: impl std::future::Future<Output = ()>,
) -> Result<(), McpError> {
    let accepted = context.accepted().clone();
    let watched = accepted.resource_subscriptions.clone().unwrap_or_default();
    let mut seen = baseline;
    tokio::pin!(stopping);
    loop {
        let now = changes.borrow_and_update().clone();
        if now != seen {
            let news = now.since(&seen);
            seen = now;
            if let Err(e) = notify_listener(&context, &accepted, host, &news, &watched).await {
                tracing::debug!("cannot notify a subscription: {e}");
                return Ok(());
            }
        }
        tokio::select! {
            () = context.cancelled() => return Ok(()),
            () = &mut stopping => return Ok(()),
            changed = changes.changed() => {
                if changed.is_err() {
                    // The watcher ended: no change can come any more; stay open until the
                    // client or the server ends the subscription.
                    tokio::select! {
                        () = context.cancelled() => {}
                        () = &mut stopping => {}
                    }
                    return Ok(());
                }
            }
        }
    }
}

/// Sends what of `news` the subscription accepted.
async fn notify_listener(
    context: &SubscriptionContext,
    accepted: &SubscriptionFilter,
    host: &Host,
    news: &News,
    watched: &[String],
) -> Result<(), rmcp::service::SubscriptionSendError> {
    let sink = context.sink();
    if news.tools && accepted.tools_list_changed == Some(true) {
        sink.notify_tool_list_changed().await?;
    }
    if news.resources && accepted.resources_list_changed == Some(true) {
        sink.notify_resource_list_changed().await?;
    }
    if news.prompts && accepted.prompts_list_changed == Some(true) {
        sink.notify_prompt_list_changed().await?;
    }
    for uri in updated_uris(host, news, watched) {
        sink.notify_resource_updated(uri.clone()).await?;
    }
    Ok(())
}

//! `subscriptions/listen` (2026-07-28): the one long-lived request through which a client
//! hears of changes, in place of the 2025-11-25 session's stream.
//!
//! The server offers one kind of notification, `notifications/tools/list_changed` (it has
//! no prompts or resources yet). rmcp acknowledges the subscription with the accepted
//! part of the client's filter (`notifications/subscriptions/acknowledged`) and tags every
//! notification with the subscription's id; a subscription that did not ask for
//! `toolsListChanged` is acknowledged with an empty filter and hears nothing. Each reload
//! that really changes the listing (see [`super::listing`]) reaches every open
//! subscription; the subscription ends when the client cancels it or the server shuts
//! down (then it answers with its final result).

use super::listing::ListingChanges;
use rmcp::ErrorData as McpError;
use rmcp::model::SubscriptionFilter;
use rmcp::service::SubscriptionContext;

/// The part of `requested` this server can honour.
pub(crate) fn accepted(requested: &SubscriptionFilter) -> SubscriptionFilter {
    let mut accepted = SubscriptionFilter::new();
    if requested.tools_list_changed == Some(true) {
        accepted.tools_list_changed = Some(true);
    }
    accepted
}

/// Serves the subscription `context` until it is cancelled or the server stops: each
/// listing change seen on `changes` after `baseline` (the count of changes when the
/// subscription was accepted, before its acknowledgment went out) becomes
/// `notifications/tools/list_changed`, when the subscription accepted it.
pub(crate) async fn listen(
    context: SubscriptionContext,
    mut changes: ListingChanges,
    baseline: u64,
    stopping: impl std::future::Future<Output = ()>,
) -> Result<(), McpError> {
    let wants_tools = context.accepted().tools_list_changed == Some(true);
    let mut seen = baseline;
    tokio::pin!(stopping);
    loop {
        let now = *changes.borrow_and_update();
        if now != seen {
            seen = now;
            if wants_tools && let Err(e) = context.sink().notify_tool_list_changed().await {
                tracing::debug!("cannot send tools/list_changed to a subscription: {e}");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_tool_list_is_accepted() {
        let requested = SubscriptionFilter::builder()
            .tools_list_changed()
            .prompts_list_changed()
            .resource_subscription("file:///a")
            .build();
        let accepted = accepted(&requested);
        assert_eq!(accepted.tools_list_changed, Some(true));
        assert_eq!(accepted.prompts_list_changed, None);
        assert_eq!(accepted.resource_subscriptions, None);
    }

    #[test]
    fn a_filter_without_tools_accepts_nothing() {
        let requested = SubscriptionFilter::builder().prompts_list_changed().build();
        assert_eq!(accepted(&requested), SubscriptionFilter::new());
    }
}

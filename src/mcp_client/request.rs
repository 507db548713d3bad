//! One `tools/call` to a server, sent so that its progress token is known: rmcp gives
//! every request a progress token of its own (overwriting any the caller set), so the
//! call is sent through `Peer::send_request_with_option`, whose handle names the token,
//! and the relay is registered under it before the answer can come. Dropping the call
//! before its answer sends the server `notifications/cancelled`, as rmcp's `call_tool`
//! does.

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, ProgressToken, RequestId, ServerResult,
};
use rmcp::service::{PeerRequestOptions, RequestHandle, ServiceError};
use rmcp::{Peer, RoleClient};

/// Why a dropped call's cancellation says it was cancelled.
const ABANDONED: &str = "request abandoned by the caller";

/// A `tools/call` sent to the server, waiting for its answer.
pub(super) struct SentCall {
    handle: RequestHandle<RoleClient>,
    abandoned: Abandoned,
}

impl SentCall {
    /// Sends `params` to `peer`.
    pub(super) async fn send(
        peer: &Peer<RoleClient>,
        params: CallToolRequestParams,
    ) -> Result<Self, ServiceError> {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await?;
        let abandoned = Abandoned {
            peer: peer.clone(),
            id: Some(handle.id.clone()),
        };
        Ok(Self { handle, abandoned })
    }

    /// The progress token the server's progress notifications for this call carry.
    pub(super) fn progress_token(&self) -> ProgressToken {
        self.handle.progress_token.clone()
    }

    /// The server's answer.
    pub(super) async fn answer(self) -> Result<CallToolResult, ServiceError> {
        let Self {
            handle,
            mut abandoned,
        } = self;
        let answer = handle.await_response().await;
        abandoned.id = None; // answered (or failed): nothing to cancel
        call_result(answer?)
    }
}

/// The call's result in the server's answer. A result without `content` (allowed since
/// 2025-06-18 with only `_meta`) decodes as another kind of result: it is a result
/// without blocks, as rmcp's own `call_tool` reads it.
fn call_result(answer: ServerResult) -> Result<CallToolResult, ServiceError> {
    match answer {
        ServerResult::CallToolResult(result) => Ok(result),
        ServerResult::EmptyResult(_) | ServerResult::TaskAckResult(_) => {
            Ok(CallToolResult::default())
        }
        ServerResult::CustomResult(custom)
            if custom
                .0
                .as_object()
                .is_some_and(|members| members.keys().all(|key| key == "_meta")) =>
        {
            Ok(CallToolResult::default())
        }
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// Cancels the request on the server when dropped while it is still unanswered.
struct Abandoned {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        // Dropping happens in synchronous code: the notification is sent by a task (none
        // when the runtime is already gone, and then neither is the server's session).
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let peer = self.peer.clone();
            runtime.spawn(async move {
                let cancelled = CancelledNotificationParam::new(Some(id), Some(ABANDONED.into()));
                let _ = peer.notify_cancelled(cancelled).await;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{CustomResult, EmptyResult};
    use serde_json::json;

    #[test]
    fn a_result_without_content_is_an_empty_result() {
        for answer in [
            ServerResult::EmptyResult(EmptyResult {}),
            ServerResult::CustomResult(CustomResult::new(json!({"_meta": {"k": 1}}))),
        ] {
            let result = call_result(answer).expect("a result");
            assert!(result.content.is_empty());
        }
        let other = ServerResult::CustomResult(CustomResult::new(json!({"tools": []})));
        assert!(matches!(
            call_result(other),
            Err(ServiceError::UnexpectedResponse)
        ));
    }
}

//! A consumed MCP server's question (`elicitation/create` during one of its tools' calls,
//! see docs/mcp-servers.md) asked of the client behind the call: on a session whose client
//! declared the `elicitation` capability, as the same server→client request, its answer
//! handed back unchanged. Without that capability nothing is relayed (the server is told
//! `cancel`).

use rmcp::model::{ClientResult, ElicitRequest, ElicitRequestParams, ServerRequest};
use rmcp::{Peer, RoleServer};
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;

/// What a relay returns: the client's answer as JSON, `None` when it gave none.
type Answer = Pin<Box<dyn Future<Output = Option<Value>> + Send>>;

/// The relay for a session with `peer`, when its client can be asked.
pub(super) fn for_client(
    peer: Option<&Peer<RoleServer>>,
) -> Option<impl Fn(Value) -> Answer + Send + Sync + 'static> {
    let peer = peer?.clone();
    let declared = peer
        .peer_info()
        .is_some_and(|info| info.capabilities.elicitation.is_some());
    let relay = move |params: Value| -> Answer {
        let peer = peer.clone();
        Box::pin(async move {
            // The consumed server's params, as rmcp reads them: what does not read as
            // a request is not sent.
            let params: ElicitRequestParams = serde_json::from_value(params).ok()?;
            let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
            match peer.send_request(request).await {
                Ok(ClientResult::ElicitResult(answer)) => serde_json::to_value(answer).ok(),
                Ok(_) => None, // not an answer to the question
                Err(why) => {
                    tracing::debug!("MCP: relaying an elicitation failed: {why}");
                    None
                }
            }
        })
    };
    declared.then_some(relay)
}

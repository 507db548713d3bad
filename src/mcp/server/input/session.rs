//! The asker of a 2025-11-25 session: a tool's input requests become the protocol's
//! server→client requests (`elicitation/create`, `roots/list`, `sampling/createMessage`),
//! sent through rmcp's peer and awaited (under the call's deadline: the handler's future
//! holds them). What the client declared in `initialize` is what [`Asker::supports`]
//! reports, so a tool whose `needs` the client lacks is refused (-32021) before it runs,
//! and an undeclared request made anyway is answered as if nobody could be asked.

// Roots and sampling are deprecated by SEP-2577 from protocol 2026-07-28 on; on the
// 2025-11-25 sessions this asker serves they are part of the protocol.
#![allow(deprecated)]

use super::wire;
use crate::{AskFuture, Asker, Capability, InputAnswer, InputKind, InputRequest};
use rmcp::{Peer, RoleServer};

/// Answers a call's input requests by asking the session's client.
pub(crate) struct PeerAsker {
    peer: Peer<RoleServer>,
}

impl PeerAsker {
    /// Asks through `peer` (whose `initialize` told its capabilities).
    pub(crate) fn new(peer: Peer<RoleServer>) -> Self {
        Self { peer }
    }

    async fn answer(&self, kind: InputKind) -> InputAnswer {
        let outcome = async {
            let request = wire::server_request(wire::request(&kind)?);
            let result = self
                .peer
                .send_request(request)
                .await
                .map_err(|e| format!("the client did not answer: {e}"))?;
            let result = serde_json::to_value(&result)
                .map_err(|e| format!("the client's answer cannot be read: {e}"))?;
            wire::answer(&kind, result).map_err(|e| format!("the client answered {e}"))
        };
        outcome
            .await
            .unwrap_or_else(|message| InputAnswer::Failed { message })
    }
}

impl Asker for PeerAsker {
    fn ask(&self, request: InputRequest) -> AskFuture<'_> {
        Box::pin(self.answer(request.kind))
    }

    fn supports(&self, capability: Capability) -> bool {
        let Some(info) = self.peer.peer_info() else {
            return false;
        };
        declares(&info.capabilities, capability)
    }
}

/// Whether `declared` (a client's capabilities) holds `capability`.
pub(crate) fn declares(declared: &rmcp::model::ClientCapabilities, capability: Capability) -> bool {
    match capability {
        Capability::Elicitation => declared.elicitation.is_some(),
        Capability::Sampling => declared.sampling.is_some(),
        Capability::Roots => declared.roots.is_some(),
    }
}

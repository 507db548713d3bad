//! The asker of a 2025-11-25 session: a tool's input requests become the protocol's
//! server→client requests (`elicitation/create`, `roots/list`, `sampling/createMessage`),
//! sent through rmcp's peer and awaited (under the call's deadline: the handler's future
//! holds them). What the client declared in `initialize` is what [`Asker::supports`]
//! reports, so a tool whose `needs` the client lacks is refused (-32021) before it runs,
//! and an undeclared request made anyway is answered as if nobody could be asked.

// Roots and sampling are deprecated by SEP-2577 from protocol 2026-07-28 on; on the
// 2025-11-25 sessions this asker serves they are part of the protocol.
#![allow(deprecated)]

use crate::{AskFuture, Asker, Capability, InputAnswer, InputKind, InputRequest, Root, Sampled};
use rmcp::model::{ClientResult, CreateMessageRequestParams, ElicitRequestParams, ServerRequest};
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};

/// Answers a call's input requests by asking the session's client.
pub(crate) struct PeerAsker {
    peer: Peer<RoleServer>,
}

impl PeerAsker {
    /// Asks through `peer` (whose `initialize` told its capabilities).
    pub(crate) fn new(peer: Peer<RoleServer>) -> Self {
        Self { peer }
    }

    async fn send(&self, request: ServerRequest) -> Result<ClientResult, String> {
        self.peer
            .send_request(request)
            .await
            .map_err(|e| format!("the client did not answer: {e}"))
    }

    async fn answer(&self, kind: InputKind) -> InputAnswer {
        let outcome = match kind {
            InputKind::Elicitation { message, schema } => self.elicit(message, schema).await,
            InputKind::Roots => self.roots().await,
            InputKind::Sampling {
                messages,
                max_tokens,
                system,
            } => self.sample(messages, max_tokens, system).await,
        };
        outcome.unwrap_or_else(|message| InputAnswer::Failed { message })
    }

    async fn elicit(&self, message: String, schema: Value) -> Result<InputAnswer, String> {
        let params: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "form",
            "message": message,
            "requestedSchema": schema,
        }))
        .map_err(|e| format!("the form's schema cannot be sent: {e}"))?;
        let request = rmcp::model::ElicitRequest::new(params);
        let ClientResult::ElicitResult(result) = self.send(request.into()).await? else {
            return Err("the client answered something else than an elicitation result".into());
        };
        let answer = serde_json::to_value(&result).unwrap_or_default();
        Ok(match answer.get("action").and_then(Value::as_str) {
            Some("accept") => InputAnswer::Accept {
                content: match answer.get("content") {
                    Some(Value::Object(content)) => content.clone(),
                    _ => Default::default(),
                },
            },
            Some("decline") => InputAnswer::Decline,
            _ => InputAnswer::Cancel,
        })
    }

    async fn roots(&self) -> Result<InputAnswer, String> {
        let request = rmcp::model::ListRootsRequest::default();
        let ClientResult::ListRootsResult(result) = self.send(request.into()).await? else {
            return Err("the client answered something else than a roots list".into());
        };
        Ok(InputAnswer::Roots {
            roots: result
                .roots
                .into_iter()
                .map(|root| Root {
                    uri: root.uri,
                    name: root.name,
                })
                .collect(),
        })
    }

    async fn sample(
        &self,
        messages: Vec<Value>,
        max_tokens: u32,
        system: Option<String>,
    ) -> Result<InputAnswer, String> {
        // A string content is text; a table is sent as the content object it is.
        let messages: Vec<Value> = messages
            .into_iter()
            .map(|mut message| {
                if let Some(text) = message.get("content").and_then(Value::as_str) {
                    message["content"] = json!({"type": "text", "text": text});
                }
                message
            })
            .collect();
        let mut params = json!({"messages": messages, "maxTokens": max_tokens});
        if let Some(system) = system {
            params["systemPrompt"] = Value::String(system);
        }
        let params: CreateMessageRequestParams = serde_json::from_value(params)
            .map_err(|e| format!("the messages cannot be sent: {e}"))?;
        let request = rmcp::model::CreateMessageRequest::new(params);
        let ClientResult::CreateMessageResult(result) = self.send(request.into()).await? else {
            return Err("the client answered something else than a sampled message".into());
        };
        let result = serde_json::to_value(&*result).unwrap_or_default();
        let content = match result.get("content") {
            Some(content) if content.get("type").and_then(Value::as_str) == Some("text") => {
                content.get("text").cloned().unwrap_or(Value::Null)
            }
            Some(content) => content.clone(),
            None => Value::Null,
        };
        Ok(InputAnswer::Sampled(Sampled {
            role: result
                .get("role")
                .and_then(Value::as_str)
                .unwrap_or("assistant")
                .to_string(),
            content,
            model: result
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        }))
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
        let declared = &info.capabilities;
        match capability {
            Capability::Elicitation => declared.elicitation.is_some(),
            Capability::Sampling => declared.sampling.is_some(),
            Capability::Roots => declared.roots.is_some(),
        }
    }
}

//! Input requests and answers as the protocol carries them: a tool's [`InputKind`] as
//! rmcp's `elicitation/create`, `roots/list` and `sampling/createMessage` requests (the
//! same on a 2025-11-25 session, where they are server→client requests, and on
//! 2026-07-28, where they ride in an `input_required` result), and the client's results
//! (`ElicitResult`, `ListRootsResult`, `CreateMessageResult`, as JSON) as [`InputAnswer`]s.

// Roots and sampling are deprecated by SEP-2577 from protocol 2026-07-28 on, but in its
// requirement set; the server supports them on both revisions.
#![allow(deprecated)]

use crate::{InputAnswer, InputKind, Root, Sampled};
use rmcp::model::{
    CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, ElicitRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest as WireRequest,
    ListRootsRequest, ListRootsResult, ServerRequest,
};
use serde_json::{Value, json};

/// `kind` as the request rmcp sends; `Err` says why it cannot be sent (a form schema or a
/// message rmcp's types refuse).
pub(crate) fn request(kind: &InputKind) -> Result<WireRequest, String> {
    Ok(match kind {
        InputKind::Elicitation { message, schema } => {
            let params: ElicitRequestParams = serde_json::from_value(json!({
                "mode": "form",
                "message": message,
                "requestedSchema": schema,
            }))
            .map_err(|e| format!("the form's schema cannot be sent: {e}"))?;
            WireRequest::Elicitation(ElicitRequest::new(params))
        }
        InputKind::Roots => WireRequest::ListRoots(ListRootsRequest::default()),
        InputKind::Sampling {
            messages,
            max_tokens,
            system,
        } => {
            // A string content is text; a table is sent as the content object it is.
            let messages: Vec<Value> = messages
                .iter()
                .cloned()
                .map(|mut message| {
                    if let Some(text) = message.get("content").and_then(Value::as_str) {
                        message["content"] = json!({"type": "text", "text": text});
                    }
                    message
                })
                .collect();
            let mut params = json!({"messages": messages, "maxTokens": max_tokens});
            if let Some(system) = system {
                params["systemPrompt"] = Value::String(system.clone());
            }
            let params: CreateMessageRequestParams = serde_json::from_value(params)
                .map_err(|e| format!("the messages cannot be sent: {e}"))?;
            WireRequest::CreateMessage(CreateMessageRequest::new(params))
        }
    })
}

/// `request` as a server→client request of a session.
pub(crate) fn server_request(request: WireRequest) -> ServerRequest {
    match request {
        WireRequest::Elicitation(r) => r.into(),
        WireRequest::ListRoots(r) => r.into(),
        WireRequest::CreateMessage(r) => r.into(),
        // rmcp's enum is non-exhaustive; it holds only these three today.
        #[allow(unreachable_patterns)]
        _ => ListRootsRequest::default().into(),
    }
}

/// The client's result (`result`, JSON) for a request of `kind`; `Err` says what is wrong
/// with it (a client's answer is untrusted input).
pub(crate) fn answer(kind: &InputKind, result: Value) -> Result<InputAnswer, String> {
    match kind {
        InputKind::Elicitation { .. } => {
            let result: ElicitResult = serde_json::from_value(result)
                .map_err(|e| format!("not an elicitation result: {e}"))?;
            Ok(match result.action {
                ElicitationAction::Accept => InputAnswer::Accept {
                    content: match result.content {
                        Some(Value::Object(content)) => content,
                        None | Some(Value::Null) => Default::default(),
                        Some(_) => {
                            return Err("an accepted form's content must be an object".into());
                        }
                    },
                },
                ElicitationAction::Decline => InputAnswer::Decline,
                _ => InputAnswer::Cancel,
            })
        }
        InputKind::Roots => {
            let result: ListRootsResult =
                serde_json::from_value(result).map_err(|e| format!("not a roots list: {e}"))?;
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
        InputKind::Sampling { .. } => {
            let result: CreateMessageResult = serde_json::from_value(result)
                .map_err(|e| format!("not a sampled message: {e}"))?;
            let result = serde_json::to_value(&result).unwrap_or_default();
            // Text comes back as the string; other content as its content object.
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
        // `InputKind` is non-exhaustive for embedders; the server knows these three.
        #[allow(unreachable_patterns)]
        _ => Err("an input request of an unknown kind".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question() -> InputKind {
        InputKind::Elicitation {
            message: "Name?".into(),
            schema: json!({"type": "object", "properties": {"name": {"type": "string"}}}),
        }
    }

    #[test]
    fn requests_have_the_protocol_shape() {
        let wire = serde_json::to_value(request(&question()).unwrap()).unwrap();
        assert_eq!(wire["method"], "elicitation/create");
        assert_eq!(
            wire["params"]["requestedSchema"]["properties"]["name"]["type"],
            "string"
        );
        let sampling = InputKind::Sampling {
            messages: vec![json!({"role": "user", "content": "hi"})],
            max_tokens: 5,
            system: Some("be brief".into()),
        };
        let wire = serde_json::to_value(request(&sampling).unwrap()).unwrap();
        assert_eq!(wire["method"], "sampling/createMessage");
        assert_eq!(wire["params"]["messages"][0]["content"]["text"], "hi");
        assert_eq!(wire["params"]["systemPrompt"], "be brief");
    }

    #[test]
    fn results_become_answers_and_bad_ones_are_refused() {
        let accepted = answer(
            &question(),
            json!({"action": "accept", "content": {"name": "Ada"}}),
        );
        assert!(matches!(accepted, Ok(InputAnswer::Accept { .. })));
        assert_eq!(
            answer(&question(), json!({"action": "decline"})),
            Ok(InputAnswer::Decline)
        );
        assert!(answer(&question(), json!({"action": "accept", "content": 3})).is_err());
        assert!(answer(&question(), json!({"roots": []})).is_err());
        let roots = answer(
            &InputKind::Roots,
            json!({"roots": [{"uri": "file:///p", "name": "p"}]}),
        );
        assert!(matches!(roots, Ok(InputAnswer::Roots { roots }) if roots[0].uri == "file:///p"));
        let sampling = InputKind::Sampling {
            messages: vec![],
            max_tokens: 1,
            system: None,
        };
        let sampled = answer(
            &sampling,
            json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}),
        );
        assert!(matches!(sampled, Ok(InputAnswer::Sampled(s)) if s.content == json!("Paris")));
    }
}

//! Input requests: what a running tool asks the human or the client behind the call
//! (`ctx.ask`, `ctx.roots`, `ctx.sample` in Lua), and the [`Asker`] a call carries to answer
//! them. The MCP server installs one that sends the protocol's server→client requests; an
//! embedder installs its own with [`CallContext::with_asker`](super::CallContext::with_asker);
//! without one `ctx.ask` answers `cancel`, `ctx.roots` an empty list and `ctx.sample` fails.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;

/// A client capability an input request needs (`needs = { ... }` at registration).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Capability {
    /// Asking the user (`ctx.ask`, MCP `elicitation/create`).
    Elicitation,
    /// Asking the client's model (`ctx.sample`, MCP `sampling/createMessage`).
    Sampling,
    /// Listing the client's roots (`ctx.roots`, MCP `roots/list`).
    Roots,
}

impl Capability {
    /// Every capability, in the order messages list them.
    pub const ALL: [Capability; 3] = [Self::Elicitation, Self::Sampling, Self::Roots];

    /// The name used in `needs` and in the MCP capability object.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Elicitation => "elicitation",
            Self::Sampling => "sampling",
            Self::Roots => "roots",
        }
    }

    /// The capability named `name`, if there is one.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == name)
    }
}

impl std::fmt::Display for Capability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a tool asks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
#[non_exhaustive]
pub enum InputKind {
    /// `ctx.ask{message, schema}`: a form for the user (a flat object schema).
    Elicitation {
        /// What the user is asked.
        message: String,
        /// The JSON Schema of the answer's `content` (`type = "object"`).
        schema: Value,
    },
    /// `ctx.roots()`: the client's roots.
    Roots,
    /// `ctx.sample{messages, max_tokens, system?}`: a completion by the client's model.
    Sampling {
        /// The conversation: `[{role, content}]`, content a string or an MCP content object.
        messages: Vec<Value>,
        /// The most tokens to sample.
        max_tokens: u32,
        /// A system prompt, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        system: Option<String>,
    },
}

impl InputKind {
    /// The client capability it needs.
    pub fn capability(&self) -> Capability {
        match self {
            Self::Elicitation { .. } => Capability::Elicitation,
            Self::Roots => Capability::Roots,
            Self::Sampling { .. } => Capability::Sampling,
        }
    }
}

/// One input request of a running call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct InputRequest {
    /// The request's key: the one `ctx.ask{key = ...}` gave, else minted from its place in
    /// the run (stable when the handler runs again with the same answers).
    pub key: String,
    /// What is asked.
    #[serde(flatten)]
    pub kind: InputKind,
}

impl InputRequest {
    /// A request of `kind` under `key`.
    pub fn new(key: impl Into<String>, kind: InputKind) -> Self {
        Self {
            key: key.into(),
            kind,
        }
    }
}

/// One of the client's roots.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Root {
    /// The root's URI (`file:///…`).
    pub uri: String,
    /// Its display name, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// What the client's model answered to `ctx.sample`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sampled {
    /// The speaker (`assistant`).
    pub role: String,
    /// The text, or the MCP content object when it is not text.
    pub content: Value,
    /// The model that answered.
    pub model: String,
}

/// The answer to an [`InputRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "lowercase")]
#[non_exhaustive]
pub enum InputAnswer {
    /// The user filled the form in (elicitation).
    Accept {
        /// The answer, shaped by the request's schema.
        content: Map<String, Value>,
    },
    /// The user said no (elicitation).
    Decline,
    /// The user dismissed the request, or nobody could be asked (elicitation).
    Cancel,
    /// The client's roots.
    Roots {
        /// The roots, in the client's order.
        #[serde(deserialize_with = "roots_list")]
        roots: Vec<Root>,
    },
    /// The client's model answered.
    Sampled(Sampled),
    /// The request could not be answered; the text says why (raised in Lua).
    Failed {
        /// Why.
        message: String,
    },
}

impl InputAnswer {
    /// What a call without an asker gets: `cancel` for a question, no roots, and a
    /// failure naming why for sampling.
    pub fn unanswered(kind: &InputKind, why: &str) -> Self {
        match kind {
            InputKind::Elicitation { .. } => Self::Cancel,
            InputKind::Roots => Self::Roots { roots: Vec::new() },
            InputKind::Sampling { .. } => Self::Failed {
                message: format!("ctx.sample: {why}"),
            },
        }
    }

    /// Whether this answer can answer `kind` (a roots list cannot answer a question).
    pub fn fits(&self, kind: &InputKind) -> bool {
        matches!(
            (self, kind),
            (
                Self::Accept { .. } | Self::Decline | Self::Cancel,
                InputKind::Elicitation { .. }
            ) | (Self::Roots { .. }, InputKind::Roots)
                | (Self::Sampled(_), InputKind::Sampling { .. })
                | (Self::Failed { .. }, _)
        )
    }
}

/// A list of roots; an empty object counts as an empty list (an empty Lua table, as
/// `t.answer` converts it, is an object).
fn roots_list<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<Root>, D::Error> {
    match Value::deserialize(deserializer)? {
        Value::Object(map) if map.is_empty() => Ok(Vec::new()),
        other => serde_json::from_value(other).map_err(serde::de::Error::custom),
    }
}

/// The future an [`Asker`] returns.
pub type AskFuture<'a, T = InputAnswer> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Answers a call's input requests. Awaiting an answer happens under the call's deadline
/// and cancellation: a call stopped meanwhile drops the future.
///
/// ```
/// use toolhost::{AskFuture, Asker, InputAnswer, InputRequest, CallContext};
/// use std::sync::Arc;
///
/// struct AlwaysNo;
/// impl Asker for AlwaysNo {
///     fn ask(&self, _request: InputRequest) -> AskFuture<'_> {
///         Box::pin(async { InputAnswer::Decline })
///     }
/// }
/// let ctx = CallContext::default().with_asker(Arc::new(AlwaysNo));
/// ```
pub trait Asker: Send + Sync {
    /// Answers one request.
    fn ask(&self, request: InputRequest) -> AskFuture<'_>;

    /// Answers the requests of one round (`ctx.all`) together, answers in request order.
    /// By default they are asked concurrently.
    fn ask_round(&self, requests: Vec<InputRequest>) -> AskFuture<'_, Vec<InputAnswer>> {
        Box::pin(futures_join(
            requests.into_iter().map(|r| self.ask(r)).collect(),
        ))
    }

    /// Whether the other side supports `capability` (a tool whose `needs` it does not
    /// meet is refused before it runs). By default everything.
    fn supports(&self, capability: Capability) -> bool {
        let _ = capability;
        true
    }
}

/// `asker.ask_round(requests)`, its panics caught: an embedder's asker never panics a
/// call. A panic answers every request `Failed` (and is logged).
pub(crate) async fn ask_round_guarded(
    asker: &dyn Asker,
    requests: Vec<InputRequest>,
) -> Vec<InputAnswer> {
    let count = requests.len();
    let failed = || {
        tracing::error!("an input-request asker panicked; its requests fail");
        vec![
            InputAnswer::Failed {
                message: "the asker answering input requests failed".into(),
            };
            count
        ]
    };
    let future = match std::panic::catch_unwind(AssertUnwindSafe(|| asker.ask_round(requests))) {
        Ok(future) => future,
        Err(_) => return failed(),
    };
    let mut future = future;
    let answers = std::future::poll_fn(|cx| {
        match std::panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(std::task::Poll::Ready(answers)) => std::task::Poll::Ready(Some(answers)),
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Err(_) => std::task::Poll::Ready(None),
        }
    })
    .await;
    match answers {
        // One answer per request, whatever the asker returned.
        Some(mut answers) => {
            answers.resize(count, InputAnswer::Cancel);
            answers
        }
        None => failed(),
    }
}

/// `asker.supports(capability)`, a panic counting as "no".
pub(crate) fn supports_guarded(asker: &dyn Asker, capability: Capability) -> bool {
    std::panic::catch_unwind(AssertUnwindSafe(|| asker.supports(capability))).unwrap_or_else(|_| {
        tracing::error!("an input-request asker panicked deciding on '{capability}'");
        false
    })
}

/// Awaits every future, answers in order (a tiny `join_all`: the crate does not need the
/// `futures` crate for it).
async fn futures_join(futures: Vec<AskFuture<'_>>) -> Vec<InputAnswer> {
    let mut pending: Vec<Option<AskFuture<'_>>> = futures.into_iter().map(Some).collect();
    let mut answers: Vec<Option<InputAnswer>> = vec![None; pending.len()];
    std::future::poll_fn(|cx| {
        let mut all = true;
        for (slot, answer) in pending.iter_mut().zip(answers.iter_mut()) {
            if let Some(future) = slot {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(value) => {
                        *answer = Some(value);
                        *slot = None;
                    }
                    std::task::Poll::Pending => all = false,
                }
            }
        }
        if all {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    answers
        .into_iter()
        .map(|a| a.unwrap_or(InputAnswer::Cancel))
        .collect()
}

/// Scripted answers (`toolhost call --answers FILE`, `t.answer{...}` in `toolhost test`,
/// an embedder's tests): a request takes the answer scripted for its key, else the next
/// answer of the ordered list; when neither has one, questions are cancelled, roots are
/// empty and sampling fails, as without an asker.
///
/// ```
/// use toolhost::{CallContext, ScriptedAsker};
/// use std::sync::Arc;
///
/// let answers = serde_json::json!([{"action": "accept", "content": {"name": "Ada"}}]);
/// let asker = ScriptedAsker::from_json(&answers).expect("valid answers");
/// let ctx = CallContext::default().with_asker(Arc::new(asker));
/// ```
#[derive(Debug, Default)]
pub struct ScriptedAsker {
    script: parking_lot::Mutex<Script>,
}

#[derive(Debug, Default)]
struct Script {
    in_order: std::collections::VecDeque<InputAnswer>,
    by_key: std::collections::HashMap<String, InputAnswer>,
}

impl ScriptedAsker {
    /// No answers yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Answers read from JSON: an array (answers in order) or an object (answers by request
    /// key), each answer `{"action": "accept", "content": {...}}`, `{"action": "decline"}`,
    /// `{"action": "cancel"}`, `{"action": "roots", "roots": [{"uri", "name"?}]}`,
    /// `{"action": "sampled", "role", "content", "model"}` or `{"action": "failed",
    /// "message"}`. The error names the answer's place or key.
    pub fn from_json(answers: &Value) -> Result<Self, String> {
        let asker = Self::new();
        asker.add_json(answers)?;
        Ok(asker)
    }

    /// Adds the answers `answers` holds (the shapes of [`from_json`](Self::from_json)):
    /// an array's go after the ordered answers already given, an object's replace the
    /// answers given for the same keys.
    pub fn add_json(&self, answers: &Value) -> Result<(), String> {
        let parse = |value: &Value, place: String| {
            serde_json::from_value::<InputAnswer>(value.clone())
                .map_err(|e| format!("{place}: {e} (an answer is {{\"action\": \"accept\" | \"decline\" | \"cancel\" | \"roots\" | \"sampled\" | \"failed\", ...}})"))
        };
        match answers {
            Value::Array(list) => {
                let parsed = list
                    .iter()
                    .enumerate()
                    .map(|(i, v)| parse(v, format!("answer #{}", i + 1)))
                    .collect::<Result<Vec<_>, _>>()?;
                self.script.lock().in_order.extend(parsed);
            }
            Value::Object(map) => {
                let parsed = map
                    .iter()
                    .map(|(key, v)| Ok((key.clone(), parse(v, format!("answer '{key}'"))?)))
                    .collect::<Result<Vec<_>, String>>()?;
                self.script.lock().by_key.extend(parsed);
            }
            other => {
                return Err(format!(
                    "answers must be a list (in order) or an object (by request key), got {}",
                    crate::json_type::json_type(other)
                ));
            }
        }
        Ok(())
    }

    /// Adds `answer` after the ordered answers already given.
    pub fn push(&self, answer: InputAnswer) {
        self.script.lock().in_order.push_back(answer);
    }

    /// Answers the request keyed `key` with `answer`.
    pub fn insert(&self, key: impl Into<String>, answer: InputAnswer) {
        self.script.lock().by_key.insert(key.into(), answer);
    }
}

impl Asker for ScriptedAsker {
    fn ask(&self, request: InputRequest) -> AskFuture<'_> {
        let next = {
            let mut script = self.script.lock();
            match script.by_key.get(&request.key) {
                Some(answer) => Some(answer.clone()),
                None => script.in_order.pop_front(),
            }
        };
        let answer = match next {
            Some(answer) if answer.fits(&request.kind) => answer,
            Some(answer) => InputAnswer::Failed {
                message: format!(
                    "the scripted answer for input request '{}' ({}) does not fit it: {}",
                    request.key,
                    request.kind.capability(),
                    serde_json::to_string(&answer).unwrap_or_default()
                ),
            },
            None => InputAnswer::unanswered(&request.kind, "no scripted answer is left"),
        };
        Box::pin(std::future::ready(answer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_read_from_json_in_the_documented_shapes() {
        let answers: Vec<InputAnswer> = serde_json::from_value(json!([
            {"action": "accept", "content": {"name": "x"}},
            {"action": "decline"},
            {"action": "cancel"},
            {"action": "roots", "roots": [{"uri": "file:///p", "name": "p"}]},
            {"action": "sampled", "role": "assistant", "content": "hi", "model": "m"},
            {"action": "failed", "message": "no model"}
        ]))
        .expect("parses");
        assert_eq!(answers.len(), 6);
        assert!(matches!(answers[1], InputAnswer::Decline));
    }

    #[tokio::test]
    async fn a_scripted_asker_answers_in_order_then_cancels() {
        let asker = ScriptedAsker::new();
        asker.push(InputAnswer::Decline);
        let q = || {
            InputRequest::new(
                "q",
                InputKind::Elicitation {
                    message: "?".into(),
                    schema: json!({"type": "object"}),
                },
            )
        };
        assert_eq!(asker.ask(q()).await, InputAnswer::Decline);
        assert_eq!(asker.ask(q()).await, InputAnswer::Cancel);
        let sample = InputRequest::new(
            "s",
            InputKind::Sampling {
                messages: vec![],
                max_tokens: 5,
                system: None,
            },
        );
        assert!(matches!(
            asker.ask(sample).await,
            InputAnswer::Failed { .. }
        ));
    }
}

#[cfg(test)]
mod scripted_tests {
    use super::*;
    use serde_json::json;

    fn question(key: &str) -> InputRequest {
        InputRequest::new(
            key,
            InputKind::Elicitation {
                message: "?".into(),
                schema: json!({"type": "object"}),
            },
        )
    }

    #[tokio::test]
    async fn a_keyed_answer_wins_over_the_ordered_ones() {
        let asker = ScriptedAsker::from_json(&json!({"who": {"action": "decline"}})).unwrap();
        asker
            .add_json(&json!([{"action": "accept", "content": {}}]))
            .unwrap();
        assert_eq!(asker.ask(question("who")).await, InputAnswer::Decline);
        assert!(matches!(
            asker.ask(question("other")).await,
            InputAnswer::Accept { .. }
        ));
    }

    #[test]
    fn a_bad_answer_is_named_by_its_place() {
        let error = ScriptedAsker::from_json(&json!([{"action": "cancel"}, {"action": "maybe"}]))
            .unwrap_err();
        assert!(error.starts_with("answer #2:"), "{error}");
        let error = ScriptedAsker::from_json(&json!({"k": 3})).unwrap_err();
        assert!(error.starts_with("answer 'k':"), "{error}");
        let error = ScriptedAsker::from_json(&json!("yes")).unwrap_err();
        assert!(error.contains("a list (in order) or an object"), "{error}");
    }
}

#[cfg(test)]
mod guarded_tests {
    use super::*;
    use serde_json::json;

    struct Panics;
    impl Asker for Panics {
        fn ask(&self, _request: InputRequest) -> AskFuture<'_> {
            Box::pin(async { panic!("asker bug") })
        }
        fn supports(&self, _capability: Capability) -> bool {
            panic!("asker bug")
        }
    }

    #[tokio::test]
    async fn a_panicking_asker_fails_its_requests_instead_of_the_call() {
        let request = InputRequest::new(
            "q1",
            InputKind::Elicitation {
                message: "?".into(),
                schema: json!({"type": "object"}),
            },
        );
        let answers = ask_round_guarded(&Panics, vec![request]).await;
        assert!(
            matches!(answers[..], [InputAnswer::Failed { .. }]),
            "{answers:?}"
        );
        assert!(!supports_guarded(&Panics, Capability::Roots));
    }
}

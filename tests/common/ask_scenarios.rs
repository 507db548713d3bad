//! Input-request scenarios that every real client must pass the same way (the Python SDK in
//! `tests/mcp_ask.rs`, the TypeScript client in `tests/mcp_typescript.rs`): each takes the
//! fixture directory and the file's own runner (spec → the script's steps), runs the
//! scenario's spec and asserts its outcome. The fixtures' `greet` asks "Your name?" and
//! `guarded` (`requires_approval`) writes the file `path` and answers "wrote".

use super::Fixture;
use super::mcp_client::step;
use serde_json::{Value, json};

/// `greet` called three times, the user accepting (name "Ada"), declining, cancelling:
/// each answer reaches the handler. Returns the steps for the caller's own checks.
pub fn answers_reach_the_handler(run: impl FnOnce(Value) -> Vec<Value>) -> Vec<Value> {
    let steps = run(json!({
        "elicitation": [
            {"action": "accept", "content": {"name": "Ada"}},
            {"action": "decline"},
            {"action": "cancel"}
        ],
        "steps": [
            {"name": "accept", "call": "greet"},
            {"name": "decline", "call": "greet"},
            {"name": "cancel", "call": "greet"}
        ]
    }));
    assert_eq!(step(&steps, "accept")["text"], "Hello, Ada", "{steps:#?}");
    assert_eq!(step(&steps, "accept")["asked"], json!(["Your name?"]));
    assert_eq!(step(&steps, "decline")["text"], "no name: decline");
    assert_eq!(step(&steps, "cancel")["text"], "no name: cancel");
    steps
}

/// `guarded` called twice, the user declining then accepting the approval question: the
/// declined call is `approval_denied` and never ran, the accepted one wrote its file.
/// Returns the steps for the caller's own checks.
pub fn approval_asks(fx: &Fixture, run: impl FnOnce(Value) -> Vec<Value>) -> Vec<Value> {
    let steps = run(json!({
        "elicitation": [{"action": "decline"}, {"action": "accept", "content": {}}],
        "steps": [
            {"name": "declined", "call": "guarded", "args": {"path": "declined.txt"}},
            {"name": "accepted", "call": "guarded", "args": {"path": "accepted.txt"}}
        ]
    }));
    let declined = step(&steps, "declined");
    assert_eq!(declined["ok"], false, "{steps:#?}");
    assert!(
        declined["text"]
            .as_str()
            .unwrap()
            .contains("\"error_type\":\"approval_denied\""),
        "{declined}"
    );
    assert_eq!(
        declined["asked"],
        json!(["Allow guarded with {\"path\":\"declined.txt\"}?"])
    );
    assert!(
        !fx.root().join("declined.txt").exists(),
        "a declined call ran"
    );
    assert_eq!(step(&steps, "accepted")["text"], "wrote", "{steps:#?}");
    assert!(fx.root().join("accepted.txt").exists());
    steps
}

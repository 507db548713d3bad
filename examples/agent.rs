//! A complete agent loop over toolhost: `cargo run --example agent`.
//!
//! The model gets the tool definitions in OpenAI format, answers with tool calls, the loop
//! runs them with `Host::handle_function_calls` (one model turn = one batch), feeds the
//! results back as `tool` messages, and stops when the model answers in text.
//!
//! Offline (the default) the model is scripted, so the example always runs. With
//! `OPENAI_BASE_URL` and `OPENAI_API_KEY` set (optionally `OPENAI_MODEL`, default
//! `gpt-4o-mini`), it talks to that OpenAI-compatible chat-completions endpoint instead;
//! the request goes out through `curl` so the example needs no HTTP stack of its own.
//! `AGENT_PROMPT` replaces the question.

use serde_json::{Value, json};
use toolhost::{CallContext, FunctionCall, Host, Selection, ToolResult};

/// What a model says in one turn.
enum Reply {
    /// The final answer.
    Text(String),
    /// Tool calls to run: (id, name, JSON arguments as the model wrote them).
    Calls(Vec<(String, String, String)>),
}

/// A chat model with tools.
trait Model {
    /// The next turn, given the conversation so far and the tool definitions.
    fn respond(&mut self, messages: &[Value], tools: &[Value]) -> Result<Reply, String>;
}

/// Answers from a script: first asks for two calculations, then reads their results.
struct Scripted {
    turn: usize,
}

impl Model for Scripted {
    fn respond(&mut self, messages: &[Value], tools: &[Value]) -> Result<Reply, String> {
        self.turn += 1;
        let offered = |name: &str| tools.iter().any(|t| t["function"]["name"] == name);
        if !offered("calc") {
            return Err("the scripted model needs the calc tool".into());
        }
        match self.turn {
            1 => Ok(Reply::Calls(vec![
                (
                    "call_1".into(),
                    "calc".into(),
                    r#"{"expression": "2 ^ 10"}"#.into(),
                ),
                (
                    "call_2".into(),
                    "calc".into(),
                    r#"{"expression": "6 * 7"}"#.into(),
                ),
            ])),
            _ => {
                let results: Vec<&str> = messages
                    .iter()
                    .filter(|m| m["role"] == "tool")
                    .filter_map(|m| m["content"].as_str())
                    .collect();
                Ok(Reply::Text(format!(
                    "2^10 is {} and 6*7 is {}.",
                    results.first().unwrap_or(&"?"),
                    results.get(1).unwrap_or(&"?")
                )))
            }
        }
    }
}

/// An OpenAI-compatible chat-completions endpoint.
struct OpenAi {
    base_url: String,
    api_key: String,
    model: String,
}

impl Model for OpenAi {
    fn respond(&mut self, messages: &[Value], tools: &[Value]) -> Result<Reply, String> {
        let body = json!({ "model": self.model, "messages": messages, "tools": tools });
        let output = std::process::Command::new("curl")
            .args([
                "-sS",
                "--fail-with-body",
                "-H",
                "Content-Type: application/json",
            ])
            .arg("-H")
            .arg(format!("Authorization: Bearer {}", self.api_key))
            .arg("--data-binary")
            .arg(body.to_string())
            .arg(format!(
                "{}/chat/completions",
                self.base_url.trim_end_matches('/')
            ))
            .output()
            .map_err(|e| format!("cannot run curl: {e}"))?;
        let text = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() {
            return Err(format!("the endpoint answered: {text}"));
        }
        let answer: Value = serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"))?;
        let message = &answer["choices"][0]["message"];
        match message["tool_calls"].as_array() {
            Some(calls) if !calls.is_empty() => Ok(Reply::Calls(
                calls
                    .iter()
                    .map(|call| {
                        let field = |path: &str| {
                            call.pointer(path)
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_string()
                        };
                        (
                            field("/id"),
                            field("/function/name"),
                            field("/function/arguments"),
                        )
                    })
                    .collect(),
            )),
            _ => Ok(Reply::Text(
                message["content"].as_str().unwrap_or_default().to_string(),
            )),
        }
    }
}

/// Runs the loop until the model answers in text (at most `max_turns` model turns).
async fn run_agent(
    host: &Host,
    model: &mut dyn Model,
    prompt: &str,
    max_turns: usize,
) -> Result<String, String> {
    let tools: Vec<Value> = host
        .tool_definitions(&Selection::default())
        .iter()
        .map(|definition| (**definition).clone())
        .collect();
    let mut messages = vec![
        json!({"role": "system", "content": "Use the tools to answer exactly."}),
        json!({"role": "user", "content": prompt}),
    ];
    let ctx = CallContext::default().with_session_id("example-agent");
    for _ in 0..max_turns {
        let calls = match model.respond(&messages, &tools)? {
            Reply::Text(text) => return Ok(text),
            Reply::Calls(calls) => calls,
        };
        messages.push(json!({
            "role": "assistant",
            "content": null,
            "tool_calls": calls.iter().map(|(id, name, arguments)| json!({
                "id": id, "type": "function",
                "function": {"name": name, "arguments": arguments},
            })).collect::<Vec<_>>(),
        }));
        // The pipeline repairs what models get wrong: a JSON string of arguments is parsed,
        // "2" becomes 2 where the schema wants an integer.
        let batch: Vec<FunctionCall> = calls
            .iter()
            .map(|(id, name, arguments)| {
                let mut call = FunctionCall::new(name, Value::String(arguments.clone()));
                call.tool_call_id = Some(id.clone());
                call
            })
            .collect();
        let results = host.handle_function_calls(batch, &ctx).await;
        for ((id, name, _), result) in calls.iter().zip(results) {
            let content = match &result {
                ToolResult::Text(text) => text.clone(),
                other => other.to_json().to_string(),
            };
            eprintln!("  {name} -> {content}");
            messages.push(json!({"role": "tool", "tool_call_id": id, "content": content}));
        }
    }
    Err(format!("no answer after {max_turns} turns"))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tools_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tools-lua");
    let host = Host::builder()
        .tools_dir(tools_dir)
        .default_config()
        .build()?;
    let mut model: Box<dyn Model> = match (
        std::env::var("OPENAI_BASE_URL"),
        std::env::var("OPENAI_API_KEY"),
    ) {
        (Ok(base_url), Ok(api_key)) => Box::new(OpenAi {
            base_url,
            api_key,
            model: std::env::var("OPENAI_MODEL").unwrap_or_else(|_| "gpt-4o-mini".into()),
        }),
        _ => Box::new(Scripted { turn: 0 }),
    };
    let prompt = std::env::var("AGENT_PROMPT")
        .unwrap_or_else(|_| "What are 2 to the power of 10, and 6 times 7?".into());
    println!("user: {prompt}");
    let answer = run_agent(&host, model.as_mut(), &prompt, 8).await?;
    println!("assistant: {answer}");
    Ok(())
}

//! Native (Rust) resources and prompts (docs/embedding.md): registered through the host
//! builder, served by the same `Host` methods as Lua ones, colliding like them.

mod common;

use common::{Fixture, error_of};
use serde_json::{Value, json};
use toolhost::{
    CallContext, CompletionTarget, ContentError, HandlerError, Host, NativePrompt, NativeResource,
    ResourceContents,
};

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(future)
}

/// `config://{section}`: the section's text, completing the section names.
fn config_resource() -> NativeResource {
    NativeResource::new("config://{section}", "config", |params, _ctx| async move {
        match params["section"].as_str() {
            Some("broken") => Err(HandlerError::new("section 'broken' is unreadable")),
            Some("shapeless") => Ok(json!(42)),
            Some(section) => Ok(json!(format!("[{section}]"))),
            None => Err(HandlerError::new("no section")),
        }
    })
    .title("Configuration")
    .mime_type("text/x-toml")
    .annotations(json!({ "audience": ["user"], "priority": 0.5 }))
    .list(|_ctx| async { Ok(json!([{ "uri": "config://server", "name": "server" }])) })
    .complete("section", |prefix, _ctx| async move {
        Ok(["server", "store", "search"]
            .into_iter()
            .filter(|s| s.starts_with(&prefix))
            .map(str::to_string)
            .collect())
    })
}

fn logo_resource() -> NativeResource {
    NativeResource::new("img://logo", "logo", |_, _| async {
        Ok(json!({ "blob": "iVBORw0K", "mime_type": "image/png" }))
    })
}

fn greet_prompt() -> NativePrompt {
    NativePrompt::new("greet", |args, _ctx| async move {
        let who = args["who"].as_str().unwrap_or("world").to_string();
        Ok(json!([
            { "role": "user", "content": format!("Greet {who}") },
            { "role": "assistant", "content": { "type": "text", "text": "Hello!" } },
        ]))
    })
    .description("Greets someone")
    .argument("who", Some("whom to greet"), true)
    .complete("who", |prefix, _| async move {
        Ok(vec![format!("{prefix}ice")])
    })
}

fn host(fx: &Fixture) -> Host {
    fx.builder()
        .native_resource(config_resource())
        .native_resource(logo_resource())
        .native_prompt(greet_prompt())
        .build()
        .expect("host builds")
}

#[test]
fn native_resources_are_listed_beside_lua_ones_without_a_file() {
    let fx = Fixture::new();
    fx.tool(
        "notes.lua",
        r#"registry.resource{ uri = "notes://all", name = "notes", read = function() return "n" end }"#,
    );
    let listed = host(&fx).resources();
    let uris: Vec<(&str, bool)> = listed
        .iter()
        .map(|r| (r.uri.as_str(), r.template))
        .collect();
    assert_eq!(
        uris,
        [
            ("config://{section}", true),
            ("img://logo", false),
            ("notes://all", false)
        ]
    );
    assert_eq!(listed[0].title.as_deref(), Some("Configuration"));
    assert_eq!(listed[0].toolset, "resources");
    assert_eq!(listed[0].file, None);
    assert!(listed[2].file.is_some());
}

#[test]
fn a_native_template_is_read_with_its_variables() {
    let fx = Fixture::new();
    let host = host(&fx);
    let contents = block_on(host.read_resource("config://store", &CallContext::default()));
    assert_eq!(
        contents,
        Ok(vec![ResourceContents::Text {
            uri: "config://store".to_string(),
            mime_type: Some("text/x-toml".to_string()),
            text: "[store]".to_string(),
        }])
    );
}

#[test]
fn a_native_blob_is_read_as_a_blob() {
    let fx = Fixture::new();
    let contents = block_on(host(&fx).read_resource("img://logo", &CallContext::default()));
    assert_eq!(
        contents,
        Ok(vec![ResourceContents::Blob {
            uri: "img://logo".to_string(),
            mime_type: Some("image/png".to_string()),
            blob: "iVBORw0K".to_string(),
        }])
    );
}

#[test]
fn a_native_read_error_is_a_handler_error_with_its_message() {
    let fx = Fixture::new();
    let error = block_on(host(&fx).read_resource("config://broken", &CallContext::default()));
    assert_eq!(
        error,
        Err(ContentError::Handler(
            "section 'broken' is unreadable".to_string()
        ))
    );
}

#[test]
fn a_native_read_answering_an_unusable_shape_is_a_handler_error() {
    let fx = Fixture::new();
    let error = block_on(host(&fx).read_resource("config://shapeless", &CallContext::default()))
        .expect_err("a number is no content");
    assert_eq!(error.kind(), "handler_error");
    assert!(error.to_string().contains("got number"), "{error}");
}

#[test]
fn a_native_template_lists_its_resources() {
    let fx = Fixture::new();
    let listed = block_on(host(&fx).list_template("config://{section}", &CallContext::default()))
        .expect("listed");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].uri, "config://server");
    assert_eq!(listed[0].mime_type.as_deref(), Some("text/x-toml"));
}

#[test]
fn native_completions_answer_by_argument() {
    let fx = Fixture::new();
    let host = host(&fx);
    let ctx = CallContext::default();
    let target = CompletionTarget::Resource("config://{section}".to_string());
    let values = block_on(host.complete(&target, "section", "s", &ctx));
    assert_eq!(
        values,
        Ok(vec![
            "server".to_string(),
            "store".to_string(),
            "search".to_string()
        ])
    );
    let prompt = CompletionTarget::Prompt("greet".to_string());
    let values = block_on(host.complete(&prompt, "who", "al", &ctx));
    assert_eq!(values, Ok(vec!["alice".to_string()]));
}

#[test]
fn a_native_prompt_renders_its_messages() {
    let fx = Fixture::new();
    let host = host(&fx);
    let listed = host.prompts();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].arguments[0].name, "who");
    assert_eq!(listed[0].line, None);
    let rendered =
        block_on(host.get_prompt("greet", json!({ "who": "Ada" }), &CallContext::default()))
            .expect("rendered");
    assert_eq!(rendered.description.as_deref(), Some("Greets someone"));
    let messages: Vec<(String, Value)> = rendered
        .messages
        .into_iter()
        .map(|m| (m.role, m.content))
        .collect();
    assert_eq!(
        messages,
        [
            (
                "user".to_string(),
                json!({ "type": "text", "text": "Greet Ada" })
            ),
            (
                "assistant".to_string(),
                json!({ "type": "text", "text": "Hello!" })
            ),
        ]
    );
}

#[test]
fn a_native_prompt_without_its_required_argument_is_refused_before_it_runs() {
    let fx = Fixture::new();
    let error = block_on(host(&fx).get_prompt("greet", json!({}), &CallContext::default()));
    assert_eq!(
        error,
        Err(ContentError::InvalidArguments(
            "missing required argument 'who'".to_string()
        ))
    );
}

#[test]
fn a_lua_file_taking_a_native_uri_from_another_toolset_is_refused() {
    let fx = Fixture::new();
    fx.tool(
        "clash.lua",
        r#"registry.resource{ uri = "img://logo", name = "mine", toolset = "lua",
             read = function() return "lua" end }"#,
    );
    fx.tool(
        "fine.lua",
        r#"registry.resource{ uri = "notes://all", name = "notes", read = function() return "n" end }"#,
    );
    let host = host(&fx);
    let error = error_of(&host, "clash.lua");
    assert!(
        error.contains("would shadow the one from toolset 'resources' (a native registration)"),
        "{error}"
    );
    let logo = block_on(host.read_resource("img://logo", &CallContext::default()));
    assert!(
        matches!(&logo, Ok(c) if matches!(&c[0], ResourceContents::Blob { .. })),
        "{logo:?}"
    );
    assert!(block_on(host.read_resource("notes://all", &CallContext::default())).is_ok());
}

#[test]
fn an_invalid_native_resource_is_a_setup_error_naming_the_field() {
    let fx = Fixture::new();
    let bad = |resource: NativeResource| {
        fx.builder()
            .native_resource(resource)
            .build()
            .err()
            .expect("refused")
            .to_string()
    };
    let read = |_: Value, _: CallContext| async { Ok(json!("x")) };
    let no_scheme = bad(NativeResource::new("just-a-path", "x", read));
    assert!(
        no_scheme.contains("'uri' \"just-a-path\" has no scheme"),
        "{no_scheme}"
    );
    let stray = bad(NativeResource::new("a://{id}", "x", read)
        .complete("other", |_, _| async { Ok(Vec::new()) }));
    assert!(
        stray.contains("'complete.other' names no variable"),
        "{stray}"
    );
    let annotated =
        bad(NativeResource::new("a://b", "x", read).annotations(json!({ "priority": 7 })));
    assert!(
        annotated.contains("'annotations.priority' must be a number from 0 to 1"),
        "{annotated}"
    );
}

#[test]
fn an_invalid_native_prompt_is_a_setup_error_naming_the_field() {
    let fx = Fixture::new();
    let error = fx
        .builder()
        .native_prompt(NativePrompt::new("bad name", |_, _| async {
            Ok(json!("x"))
        }))
        .build()
        .err()
        .expect("refused")
        .to_string();
    assert!(
        error.contains("prompt \"bad name\": 'name' must match"),
        "{error}"
    );
}

#[test]
fn two_native_resources_with_one_uri_are_a_setup_error() {
    let fx = Fixture::new();
    let error = fx
        .builder()
        .native_resource(logo_resource())
        .native_resource(logo_resource())
        .build()
        .err()
        .expect("refused")
        .to_string();
    assert!(
        error.contains("resource 'img://logo' is registered twice by the embedding program"),
        "{error}"
    );
}

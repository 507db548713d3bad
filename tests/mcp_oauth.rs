//! `[serve.oauth]`: the real `toolhost serve --http` as an OAuth 2.1 resource server, with
//! P-256 keys made in the test and their JWKS served over loopback HTTP (or a file). A
//! good token calls tools as its subject (`ctx.caller`); a token failing any check gets 401
//! `invalid_token` pointing at the metadata; a missing scope gets 403
//! `insufficient_scope`; a new key served after the start is picked up; made-up key ids
//! do not flood the key server.

mod common;

use common::Fixture;
use common::oauth::{AUDIENCE, ISSUER, JwksServer, Key, METADATA_URL, claims, jwks, now};
use common::raw_http::{RawHttp, Reply, tools_call};
use serde_json::{Value, json};
use std::process::{Child, Command};

const TOOLS: &str = r#"
registry.register{ name = "whoami", toolset = "ident",
  schema = { description = "Who is calling", parameters = { type = "object" } },
  handler = function(args, ctx)
    local c = ctx.caller
    return { id = c.id, kind = c.kind, client_id = c.client_id or "none",
             scopes = table.concat(c.scopes or {}, " ") }
  end }
registry.register{ name = "relay", toolset = "ident",
  schema = { description = "Calls another tool", parameters = { type = "object",
    properties = { tool = { type = "string" } } } },
  handler = function(args, ctx) return ctx.call(args.tool, {}) end }
registry.register{ name = "drop_tables", toolset = "admin",
  schema = { description = "Dangerous", parameters = { type = "object" } },
  handler = function() return "dropped" end }
"#;

/// A running `serve --http` with `[serve.oauth]` and the scope `mcp:admin` on `admin`.
struct Server {
    child: Child,
    authority: String,
    _fx: Fixture,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `[serve.oauth]` with the keys at `keys` (a `jwks_url = …` or `jwks_file = …` line).
fn config(keys: &str) -> String {
    format!(
        "[serve.oauth]\nissuer = \"{ISSUER}\"\naudience = \"{AUDIENCE}\"\n{keys}\n\
         [serve.oauth.scopes]\nadmin = \"mcp:admin\"\n"
    )
}

fn start_with(fx: Fixture, toml: &str) -> Server {
    fx.tool("tools.lua", TOOLS);
    fx.write("toolhost.toml", toml);
    let mut command = Command::new(assert_cmd::cargo::cargo_bin!("toolhost"));
    command
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .args([
            "--cache-dir",
            "cache",
            "serve",
            "--http",
            "127.0.0.1:0",
            "--stateless",
        ]);
    let (child, url) = common::spawn_http_server(command);
    let authority = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    Server {
        child,
        authority,
        _fx: fx,
    }
}

fn start(jwks: &JwksServer) -> Server {
    start_with(
        Fixture::new(),
        &config(&format!("jwks_url = \"{}\"", jwks.url)),
    )
}

impl Server {
    /// POSTs `message` to `/mcp` with `token` (the server is stateless: a JSON answer per
    /// request).
    fn post(&self, token: Option<&str>, message: &str) -> Reply {
        let authorization = token.map(|t| format!("Bearer {t}"));
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2025-06-18"),
        ];
        if let Some(authorization) = &authorization {
            headers.push(("Authorization", authorization));
        }
        RawHttp::connect(&self.authority).request("POST", "/mcp", &headers, message.as_bytes())
    }

    /// Calls `tool` (no arguments) with `token`: the call's answer.
    fn call(&self, token: &str, tool: &str) -> Reply {
        self.post(Some(token), &tools_call(3, tool, "{}"))
    }
}

/// The JSON result of a successful call (its text, parsed).
fn structured(reply: &Reply) -> Value {
    assert_eq!(reply.status, 200, "{}", reply.text());
    let message = reply.message();
    let result = &message["result"];
    assert_ne!(result["isError"], json!(true), "{message}");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    serde_json::from_str(text).unwrap_or_else(|_| panic!("not JSON: {message}"))
}

#[test]
fn a_good_token_calls_a_tool_as_its_subject() {
    let key = Key::new("k1", 1);
    let keys = JwksServer::start(jwks(&[&key]));
    let server = start(&keys);
    let mut claims = claims("alice");
    claims["client_id"] = json!("agent-7");
    claims["scope"] = json!("mcp:read mcp:admin");
    let token = key.sign(&claims);
    let caller = structured(&server.call(&token, "whoami"));
    assert_eq!(
        caller,
        json!({ "id": "alice", "kind": "oauth", "client_id": "agent-7",
                "scopes": "mcp:admin mcp:read" })
    );
}

#[test]
fn keys_from_a_jwks_file_verify_tokens() {
    let key = Key::new("file-key", 2);
    let fx = Fixture::new();
    fx.write("keys/jwks.json", jwks(&[&key]));
    let server = start_with(fx, &config("jwks_file = \"keys/jwks.json\""));
    let token = key.sign(&claims("bob"));
    assert_eq!(structured(&server.call(&token, "whoami"))["id"], "bob");
}

#[test]
fn a_call_through_ctx_call_keeps_the_oauth_caller() {
    let key = Key::new("k1", 3);
    let keys = JwksServer::start(jwks(&[&key]));
    let server = start(&keys);
    let token = key.sign(&claims("carol"));
    let message = tools_call(4, "relay", r#"{"tool":"whoami"}"#);
    let reply = server.post(Some(&token), &message);
    assert_eq!(structured(&reply)["id"], "carol");
}

/// Every check a token can fail gets the same kind of answer: 401, `invalid_token`, the
/// metadata's URL, and a JSON-RPC error with the request's id saying what was wrong.
#[test]
fn a_token_failing_any_check_gets_401_invalid_token_with_the_metadata_url() {
    let key = Key::new("k1", 4);
    let stranger = Key::new("k1", 5);
    let keys = JwksServer::start(jwks(&[&key]));
    let server = start(&keys);
    let with = |field: &str, value: Value| {
        let mut c = claims("mallory");
        c[field] = value;
        key.sign(&c)
    };
    let none_alg = common::oauth::unsigned(&claims("mallory"));
    let hmac_with_public_key = {
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
        header.kid = Some("k1".into());
        let secret = jsonwebtoken::EncodingKey::from_secret(&key.public_bytes).unwrap();
        jsonwebtoken::encode(&header, &claims("mallory"), &secret).unwrap()
    };
    let cases = [
        (
            "wrong audience",
            with("aud", json!("https://other.test/mcp")),
            "(aud)",
        ),
        (
            "wrong issuer",
            with("iss", json!("https://evil.test")),
            "(iss)",
        ),
        ("expired", with("exp", json!(now() - 600)), "expired"),
        ("not yet valid", with("nbf", json!(now() + 600)), "(nbf)"),
        (
            "no subject",
            {
                let mut c = claims("x");
                c.as_object_mut().unwrap().remove("sub");
                key.sign(&c)
            },
            "claim",
        ),
        ("wrong key", stranger.sign(&claims("mallory")), "signature"),
        ("alg none", none_alg, "JWT"),
        ("HS256 with the public key", hmac_with_public_key, "HS256"),
        ("not a JWT", "garbage".to_string(), "JWT"),
    ];
    for (case, token, reason) in cases {
        let reply = server.post(Some(&token), &tools_call(9, "whoami", "{}"));
        assert_eq!(reply.status, 401, "{case}: {}", reply.text());
        assert_eq!(
            reply.header("www-authenticate").unwrap_or_default(),
            format!(
                "Bearer error=\"invalid_token\", error_description=\"{}\", \
                 resource_metadata=\"{METADATA_URL}\"",
                reply.message()["error"]["message"]
                    .as_str()
                    .unwrap()
                    .trim_start_matches("invalid bearer token: ")
            ),
            "{case}"
        );
        let error = &reply.message()["error"];
        assert_eq!(reply.message()["id"], 9, "{case}");
        assert_eq!(error["code"], -32001, "{case}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(reason), "{case}: {message}");
    }
}

#[test]
fn a_request_without_a_token_is_pointed_at_the_metadata() {
    let key = Key::new("k1", 6);
    let keys = JwksServer::start(jwks(&[&key]));
    let server = start(&keys);
    let reply = server.post(None, &tools_call(1, "whoami", "{}"));
    assert_eq!(reply.status, 401);
    assert_eq!(
        reply.header("www-authenticate"),
        Some(format!("Bearer resource_metadata=\"{METADATA_URL}\"").as_str())
    );
}

#[test]
fn the_protected_resource_metadata_names_the_issuer_and_the_scopes() {
    let key = Key::new("k1", 7);
    let keys = JwksServer::start(jwks(&[&key]));
    let server = start(&keys);
    let expected = json!({
        "resource": AUDIENCE,
        "authorization_servers": [ISSUER],
        "scopes_supported": ["mcp:admin"],
        "bearer_methods_supported": ["header"],
    });
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let reply = RawHttp::connect(&server.authority).request("GET", path, &[], b"");
        assert_eq!(reply.status, 200, "{path}: {}", reply.text());
        assert_eq!(reply.message(), expected, "{path}");
    }
}

#[test]
fn a_token_without_the_tools_scope_gets_403_insufficient_scope() {
    let key = Key::new("k1", 8);
    let keys = JwksServer::start(jwks(&[&key]));
    let server = start(&keys);
    let mut reader = claims("dave");
    reader["scope"] = json!("mcp:read");
    let token = key.sign(&reader);
    let reply = server.post(Some(&token), &tools_call(5, "drop_tables", "{}"));
    assert_eq!(reply.status, 403, "{}", reply.text());
    assert_eq!(
        reply.header("www-authenticate"),
        Some(
            format!(
                "Bearer error=\"insufficient_scope\", scope=\"mcp:admin\", \
                 resource_metadata=\"{METADATA_URL}\""
            )
            .as_str()
        )
    );
    let message = reply.message();
    assert_eq!(message["id"], 5);
    assert_eq!(message["error"]["code"], -32003);
    assert!(
        message["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"mcp:admin\""),
        "{message}"
    );
    // The same token calls a tool that needs no scope.
    let fine = server.post(Some(&token), &tools_call(6, "whoami", "{}"));
    assert_eq!(structured(&fine)["id"], "dave");
}

#[test]
fn a_token_with_the_scope_calls_the_scoped_tool() {
    let key = Key::new("k1", 9);
    let keys = JwksServer::start(jwks(&[&key]));
    let server = start(&keys);
    let mut admin = claims("erin");
    admin["scp"] = json!(["mcp:admin"]);
    let reply = server.post(Some(&key.sign(&admin)), &tools_call(5, "drop_tables", "{}"));
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.message()["result"]["content"][0]["text"], "dropped");
}

#[test]
fn ctx_call_does_not_lend_a_scope_the_token_lacks() {
    let key = Key::new("k1", 10);
    let keys = JwksServer::start(jwks(&[&key]));
    let server = start(&keys);
    let token = key.sign(&claims("frank"));
    let message = tools_call(7, "relay", r#"{"tool":"drop_tables"}"#);
    let reply = server.post(Some(&token), &message);
    assert_eq!(reply.status, 200, "{}", reply.text());
    let result = &reply.message()["result"];
    let text = result["structuredContent"]["error"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| result.to_string());
    assert!(text.contains("mcp:admin"), "{result}");
    assert!(!result.to_string().contains("dropped"), "{result}");
}

#[test]
fn a_key_published_after_the_start_is_accepted() {
    let old = Key::new("2026-old", 11);
    let new = Key::new("2026-new", 12);
    let keys = JwksServer::start(jwks(&[&old]));
    let server = start(&keys);
    let first = server.post(
        Some(&old.sign(&claims("gina"))),
        &tools_call(1, "whoami", "{}"),
    );
    assert_eq!(structured(&first)["id"], "gina");
    // The issuer rotates: the new key is served; a token signed with it names its kid.
    keys.serve(jwks(&[&old, &new]));
    let rotated = server.post(
        Some(&new.sign(&claims("gina"))),
        &tools_call(2, "whoami", "{}"),
    );
    assert_eq!(structured(&rotated)["id"], "gina");
}

#[test]
fn a_key_added_to_the_jwks_file_after_the_start_is_accepted() {
    let old = Key::new("file-old", 21);
    let new = Key::new("file-new", 22);
    let fx = Fixture::new();
    let file = fx.root().join("keys/jwks.json");
    fx.write("keys/jwks.json", jwks(&[&old]));
    let server = start_with(fx, &config("jwks_file = \"keys/jwks.json\""));
    assert_eq!(
        structured(&server.call(&old.sign(&claims("hana")), "whoami"))["id"],
        "hana"
    );
    // The operator publishes the new key in the file; no restart.
    std::fs::write(&file, jwks(&[&old, &new])).unwrap();
    let rotated = server.call(&new.sign(&claims("hana")), "whoami");
    assert_eq!(structured(&rotated)["id"], "hana", "{}", rotated.text());
}

#[test]
fn made_up_key_ids_do_not_flood_the_key_server() {
    let key = Key::new("real", 13);
    let keys = JwksServer::start(jwks(&[&key]));
    let server = start(&keys);
    // The keys load as the server starts (its first fetch may follow its banner).
    assert!(common::wait_until(
        std::time::Duration::from_secs(20),
        || keys.fetches() >= 1
    ));
    let loaded = keys.fetches();
    for i in 0..20 {
        let forged = Key::new(&format!("forged-{i}"), 100 + i as u8);
        let reply = server.post(
            Some(&forged.sign(&claims("x"))),
            &tools_call(1, "whoami", "{}"),
        );
        assert_eq!(reply.status, 401);
    }
    // One reload for the first unknown kid; the rest wait out the interval.
    assert!(keys.fetches() <= loaded + 1, "{} fetches", keys.fetches());
    let good = server.post(
        Some(&key.sign(&claims("hank"))),
        &tools_call(2, "whoami", "{}"),
    );
    assert_eq!(structured(&good)["id"], "hank");
}

#[test]
fn an_unknown_tool_in_the_scope_table_stops_the_start_naming_the_key() {
    let key = Key::new("k1", 14);
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    fx.write("keys.json", jwks(&[&key]));
    fx.write(
        "toolhost.toml",
        format!(
            "{}drop_tabels = \"mcp:admin\"\n",
            config("jwks_file = \"keys.json\"")
        ),
    );
    let output = fx
        .toolhost()
        .args(["serve", "--http", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("serve.oauth.scopes.drop_tabels"),
        "{stderr}"
    );
}

#[test]
fn clock_skew_within_a_minute_is_tolerated() {
    let key = Key::new("k1", 15);
    let keys = JwksServer::start(jwks(&[&key]));
    let server = start(&keys);
    let mut skewed = claims("ivy");
    skewed["exp"] = json!(now() - 20);
    skewed["nbf"] = json!(now() + 20);
    let reply = server.post(Some(&key.sign(&skewed)), &tools_call(1, "whoami", "{}"));
    assert_eq!(structured(&reply)["id"], "ivy");
}

#[test]
fn an_audience_list_that_contains_this_server_is_accepted() {
    let key = Key::new("k1", 16);
    let keys = JwksServer::start(jwks(&[&key]));
    let server = start(&keys);
    let mut both = claims("jo");
    both["aud"] = json!(["https://other.test", AUDIENCE]);
    let reply = server.post(Some(&key.sign(&both)), &tools_call(1, "whoami", "{}"));
    assert_eq!(structured(&reply)["id"], "jo");
}

#[test]
fn static_tokens_work_beside_oauth() {
    let key = Key::new("k1", 17);
    let keys = JwksServer::start(jwks(&[&key]));
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    let toml = format!(
        "[[serve.tokens]]\nname = \"ci\"\ntoken_env = \"CI_TOKEN\"\n{}",
        config(&format!("jwks_url = \"{}\"", keys.url))
    );
    fx.write("toolhost.toml", toml);
    let mut command = Command::new(assert_cmd::cargo::cargo_bin!("toolhost"));
    command
        .current_dir(fx.root())
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1")
        .env("CI_TOKEN", "ci-secret")
        .args([
            "--cache-dir",
            "cache",
            "serve",
            "--http",
            "127.0.0.1:0",
            "--stateless",
        ]);
    let (child, url) = common::spawn_http_server(command);
    let server = Server {
        child,
        authority: url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_string(),
        _fx: fx,
    };
    let static_caller = structured(&server.call("ci-secret", "whoami"));
    assert_eq!(
        (&static_caller["id"], &static_caller["kind"]),
        (&json!("ci"), &json!("token"))
    );
    // A static token is not limited by scopes.
    let admin = server.call("ci-secret", "drop_tables");
    assert_eq!(admin.message()["result"]["content"][0]["text"], "dropped");
    let oauth_caller = structured(&server.call(&key.sign(&claims("kim")), "whoami"));
    assert_eq!(oauth_caller["kind"], "oauth");
}

#[test]
fn an_oversized_jwks_loads_no_keys_and_the_server_goes_on() {
    let key = Key::new("k1", 18);
    // Valid JSON, far over the 256 KiB bound.
    let padding = "x".repeat(400 * 1024);
    let bloated = format!(
        "{{\"keys\":{},\"padding\":\"{padding}\"}}",
        serde_json::to_value(jwks(&[&key]).parse::<Value>().unwrap()["keys"].clone()).unwrap()
    );
    let keys = JwksServer::start(bloated);
    let server = start(&keys);
    let reply = server.post(
        Some(&key.sign(&claims("x"))),
        &tools_call(1, "whoami", "{}"),
    );
    assert_eq!(reply.status, 401, "{}", reply.text());
    let health = RawHttp::connect(&server.authority).request("GET", "/healthz", &[], b"");
    assert_eq!(health.status, 200);
}

#[test]
fn a_bad_oauth_table_is_an_error_naming_its_key() {
    let cases = [
        (
            "[serve.oauth]\naudience = \"a\"\njwks_file = \"k.json\"\n",
            "serve.oauth.issuer",
        ),
        (
            "[serve.oauth]\nissuer = \"i\"\njwks_file = \"k.json\"\n",
            "serve.oauth.audience",
        ),
        (
            "[serve.oauth]\nissuer = \"i\"\naudience = \"a\"\n",
            "jwks_url or jwks_file is required",
        ),
        (
            "[serve.oauth]\nissuer = \"i\"\naudience = \"a\"\njwks_file = \"k.json\"\n\
             jwks_url = \"https://i/jwks\"\n",
            "not both",
        ),
        (
            "[serve.oauth]\nissuer = \"i\"\naudience = \"a\"\njwks_url = \"http://idp.example/jwks\"\n",
            "serve.oauth.jwks_url: must be an https:// URL",
        ),
        (
            "[serve.oauth]\nissuer = \"i\"\naudience = \"a\"\njwks_file = \"k.json\"\n\
             [serve.oauth.scopes]\nadmin = \"two words\"\n",
            "serve.oauth.scopes.admin",
        ),
        (
            "[serve.oauth]\nissuer = \"i\"\naudience = \"a\"\njwks_file = \"k.json\"\nalgorithms = []\n",
            "algorithms",
        ),
    ];
    common::assert_configs_refused(TOOLS, cases);
}

#[test]
fn an_unreadable_jwks_file_stops_the_start() {
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    fx.write("toolhost.toml", config("jwks_file = \"missing.json\""));
    let output = fx
        .toolhost()
        .args(["serve", "--http", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("serve.oauth.jwks_file"), "{stderr}");
}

/// The official Python client, sending each credential as its `Authorization` header,
/// reaches `whoami` as that caller.
#[test]
fn the_official_client_calls_as_each_token_and_the_oauth_subject() {
    let key = Key::new("k1", 19);
    let fx = Fixture::new();
    fx.tool("tools.lua", TOOLS);
    fx.write("keys.json", jwks(&[&key]));
    fx.write(
        "toolhost.toml",
        format!(
            "[serve]\nauth_token_env = \"MAIN_TOKEN\"\n[[serve.tokens]]\nname = \"ci\"\n\
             token_env = \"CI_TOKEN\"\n{}",
            config("jwks_file = \"keys.json\"")
        ),
    );
    let mut oauth = claims("lee");
    oauth["azp"] = json!("python-client");
    let binary = assert_cmd::cargo::cargo_bin!("toolhost");
    let token = key.sign(&oauth);
    let steps = common::mcp_client::run_script(
        "caller.py",
        &[
            binary.to_str().unwrap(),
            fx.root().to_str().unwrap(),
            &token,
        ],
    );
    let caller = |step: &str| common::mcp_client::step(&steps, step)["caller"].clone();
    assert_eq!(
        caller("default"),
        json!({ "id": "default", "kind": "token", "client_id": "none", "scopes": "" })
    );
    assert_eq!(caller("ci")["id"], "ci");
    assert_eq!(
        caller("oauth"),
        json!({ "id": "lee", "kind": "oauth", "client_id": "python-client", "scopes": "" })
    );
}

/// Entries for a tool and for a toolset covering it both apply: the call needs both scopes.
#[test]
fn a_tool_entry_and_its_toolsets_entry_are_both_needed() {
    let key = Key::new("k1", 20);
    let fx = Fixture::new();
    fx.write("keys.json", jwks(&[&key]));
    let server = start_with(
        fx,
        &format!(
            "{}relay = \"mcp:relay\"\nident = \"mcp:ident\"\n",
            config("jwks_file = \"keys.json\"")
        ),
    );
    let with_scopes = |scopes: &str| {
        let mut c = claims("mo");
        c["scope"] = json!(scopes);
        key.sign(&c)
    };
    let call = tools_call(1, "relay", r#"{"tool":"whoami"}"#);
    let only_relay = server.post(Some(&with_scopes("mcp:relay")), &call);
    assert_eq!(only_relay.status, 403, "{}", only_relay.text());
    assert!(
        only_relay.text().contains("mcp:ident"),
        "{}",
        only_relay.text()
    );
    let only_ident = server.post(Some(&with_scopes("mcp:ident")), &call);
    assert!(
        only_ident.text().contains("mcp:relay"),
        "{}",
        only_ident.text()
    );
    let both = server.post(Some(&with_scopes("mcp:ident mcp:relay")), &call);
    assert_eq!(structured(&both)["id"], "mo");
}

/// `[serve.oauth.scopes]` applies to resources by toolset and to prompts by name: a read or
/// render without the scope is refused (403 `insufficient_scope`, -32003 naming it), with
/// it goes through.
#[test]
fn resources_and_prompts_need_the_scopes_of_their_toolset_or_name() {
    let key = Key::new("k1", 21);
    let fx = Fixture::new();
    fx.write("keys.json", jwks(&[&key]));
    fx.tool(
        "vault.lua",
        r#"registry.resource{ uri = "vault://keys", name = "keys", toolset = "admin",
  read = function() return "secret" end }
registry.prompt{ name = "confess", render = function() return "all of it" end }"#,
    );
    let server = start_with(
        fx,
        &format!(
            "{}confess = \"mcp:confess\"\n",
            config("jwks_file = \"keys.json\"")
        ),
    );
    let with_scopes = |scopes: &str| {
        let mut c = claims("pat");
        c["scope"] = json!(scopes);
        key.sign(&c)
    };
    let read =
        r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"vault://keys"}}"#;
    let render = r#"{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"confess"}}"#;
    let refused = server.post(Some(&with_scopes("mcp:confess")), read);
    assert_eq!(refused.status, 403, "{}", refused.text());
    let refused = refused.message();
    assert_eq!(refused["error"]["code"], -32003, "{refused}");
    assert!(refused.to_string().contains("mcp:admin"), "{refused}");
    let refused = server.post(Some(&with_scopes("mcp:admin")), render);
    assert_eq!(refused.status, 403, "{}", refused.text());
    let refused = refused.message();
    assert_eq!(refused["error"]["code"], -32003, "{refused}");
    assert!(refused.to_string().contains("mcp:confess"), "{refused}");
    let both = with_scopes("mcp:admin mcp:confess");
    let read = server.post(Some(&both), read).message();
    assert_eq!(read["result"]["contents"][0]["text"], "secret", "{read}");
    let render = server.post(Some(&both), render).message();
    assert_eq!(
        render["result"]["messages"][0]["content"]["text"], "all of it",
        "{render}"
    );
}

#[test]
fn watching_a_resource_needs_the_scope_reading_it_does() {
    let key = Key::new("k1", 21);
    let fx = Fixture::new();
    fx.write("keys.json", jwks(&[&key]));
    fx.tool(
        "vault.lua",
        r#"registry.resource{ uri = "vault://keys", name = "keys", toolset = "admin",
  read = function() return "secret" end }"#,
    );
    let server = start_with(fx, &config("jwks_file = \"keys.json\""));
    let token = key.sign(&claims("pat"));
    let listen = r#"{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["vault://keys"]}}}"#;
    let refused = server.post(Some(&token), listen);
    assert_eq!(refused.status, 403, "{}", refused.text());
    let refused = refused.message();
    assert_eq!(refused["error"]["code"], -32003, "{refused}");
    assert!(refused.to_string().contains("mcp:admin"), "{refused}");
}

//! The shipped `file:///{+path}` resource and `code_review` prompt (docs/tool-library.md),
//! and prompt messages carrying images and embedded resources (docs/lua-api.md): through
//! the real binary, the Host API and the official Python MCP client.

mod common;

use common::Fixture;
use common::mcp_client::{run_script, step};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use toolhost::{CallContext, Host};

fn shipped() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tools-lua")
}

/// A host over the shipped library whose only fs root is the fixture's `root/`.
fn host_over_root(fx: &Fixture) -> Host {
    let root = fx.root().join("root");
    std::fs::create_dir_all(&root).expect("root");
    let config = fx.write(
        "toolhost.toml",
        format!("[sandbox]\nfs_roots = [{:?}]\n", root.display().to_string()),
    );
    Host::builder()
        .tools_dir(shipped())
        .cache_dir(fx.cache())
        .memory_store()
        .config_file(config)
        .build()
        .expect("host builds")
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(future)
}

#[test]
fn a_symlink_leading_out_of_the_roots_is_refused() {
    let fx = Fixture::new();
    fx.write("secret.txt", "secret");
    let host = host_over_root(&fx);
    let root = fx.root().join("root").canonicalize().expect("root");
    std::os::unix::fs::symlink(fx.root().join("secret.txt"), root.join("link.txt"))
        .expect("symlink");
    let read = block_on(host.read_resource(
        &format!("file://{}/link.txt", root.display()),
        &CallContext::default(),
    ));
    let error = read.expect_err("a link out of the root is refused");
    assert_eq!(error.kind(), "handler_error", "{error}");
    assert!(error.to_string().contains("link.txt"), "{error}");
    assert!(!error.to_string().contains("secret\""), "{error}");
}

#[test]
fn the_listing_stops_at_200_files() {
    let fx = Fixture::new();
    let host = host_over_root(&fx);
    for i in 0..250 {
        fx.write(&format!("root/f{i:03}.txt"), "x");
    }
    let listed =
        block_on(host.list_template("file:///{+path}", &CallContext::default())).expect("listed");
    assert_eq!(listed.len(), 200);
    assert!(listed[0].uri.ends_with("/root/f000.txt"), "{:?}", listed[0]);
}

#[test]
fn the_listing_stops_three_folders_deep_and_skips_hidden_entries() {
    let fx = Fixture::new();
    let host = host_over_root(&fx);
    fx.write("root/a/b/two.txt", "2");
    fx.write("root/a/b/c/three.txt", "3");
    fx.write("root/.git/config", "hidden");
    fx.write("root/top.md", "top");
    let listed =
        block_on(host.list_template("file:///{+path}", &CallContext::default())).expect("listed");
    let names: Vec<&str> = listed.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["top.md", "a/b/two.txt"]);
    assert_eq!(listed[0].mime_type.as_deref(), Some("text/markdown"));
}

const EXTRA: &str = r##"
registry.prompt{ name = "show_logo", render = function()
  return {
    { role = "user", content = { type = "image", data = json.base64(fs.read("logo.png")), mime_type = "image/png" } },
    { role = "assistant", content = { type = "resource_link", uri = "file:///logo.png", name = "logo" } },
  }
end }
registry.prompt{ name = "bad_block", render = function()
  return { { role = "user", content = "fine" }, { role = "user", content = { type = "video", data = "AAAA" } } }
end }
"##;

#[test]
fn mcp_clients_get_files_as_resources_and_prompts_with_embedded_resources_and_images() {
    let fx = Fixture::new();
    let work = fx.root().join("work");
    fx.write("work/a.py", "print('hi')\n");
    fx.write("work/logo.png", b"\x89PNG\x00\x01".as_slice());
    fx.write("extra/pictures.lua", EXTRA);
    let work = work.canonicalize().expect("work dir");
    let binary = assert_cmd::cargo::cargo_bin!("toolhost");
    let steps = run_script(
        "shipped_content.py",
        &[
            binary.to_str().expect("utf-8 path"),
            work.to_str().expect("utf-8 dir"),
            shipped().to_str().expect("utf-8 dir"),
            fx.root().join("extra").to_str().expect("utf-8 dir"),
        ],
    );
    let uri = |name: &str| format!("file://{}/{name}", work.display());
    let listed: Vec<&str> = step(&steps, "resources")["result"]["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert!(listed.contains(&uri("a.py").as_str()), "{listed:?}");
    let templates = &step(&steps, "templates")["result"]["resourceTemplates"];
    assert!(
        templates
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| t["uriTemplate"] == "file:///{+path}"),
        "{templates}"
    );
    assert_eq!(
        step(&steps, "read_text")["result"]["contents"],
        json!([{ "uri": uri("a.py"), "mimeType": "text/x-python", "text": "print('hi')\n" }])
    );
    assert_eq!(
        step(&steps, "read_blob")["result"]["contents"],
        json!([{ "uri": uri("logo.png"), "mimeType": "image/png", "blob": "iVBORwAB" }])
    );
    let outside = &step(&steps, "read_outside")["error"];
    assert!(
        outside["message"]
            .as_str()
            .is_some_and(|m| m.contains("outside the fs roots")),
        "{outside}"
    );
    let review = &step(&steps, "code_review")["result"]["messages"];
    assert_eq!(
        review[0]["content"],
        json!({ "type": "resource", "resource": {
            "uri": uri("a.py"), "mimeType": "text/x-python", "text": "print('hi')\n"
        }})
    );
    let logo = &step(&steps, "show_logo")["result"]["messages"];
    assert_eq!(
        logo[0]["content"],
        json!({ "type": "image", "data": "iVBORwAB", "mimeType": "image/png" })
    );
    assert_eq!(logo[1]["content"]["type"], "resource_link");
    let bad: &Value = &step(&steps, "bad_block")["error"];
    assert!(
        bad["message"]
            .as_str()
            .is_some_and(|m| m.contains("message 2: 'content.type' \"video\"")),
        "{bad}"
    );
}

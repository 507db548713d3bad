//! `toolhost new NAME [--toolset T] [--resource | --prompt]`: a commented tool (resource,
//! prompt) file that passes `check` and runs, and `NAME_test.lua` beside it that passes
//! `toolhost test`.

use super::Cli;
use super::error::{CliError, io};
use crate::Host;
use std::process::ExitCode;

/// The template; NAME and TOOLSET are replaced.
pub(super) const TEMPLATE: &str = r#"-- NAME: describe what the tool does, for the model.
-- Check it with `toolhost check`, try it with `toolhost call NAME '{"text": "hi"}'`,
-- test it with `toolhost test` (NAME_test.lua).
-- Editor completion: `toolhost stubs` writes LuaLS definitions of the host API.

registry.register{
  name = "NAME",
  toolset = "TOOLSET",
  -- The model sees this schema: say precisely what each parameter means.
  schema = {
    description = "Repeat a text a number of times",
    parameters = {
      type = "object",
      properties = {
        text = { type = "string", description = "What to repeat" },
        times = { type = "integer", minimum = 1, maximum = 10, description = "How often (default 1)" },
      },
      required = { "text" },
    },
  },
  -- Arguments arrive validated against the schema ("3" is already 3).
  handler = function(args, ctx)
    local times = args.times or 1
    -- Return text, or a table (sent as JSON). Raise with error() for a failure.
    return string.rep(args.text, times, " ")
  end,
}
"#;

/// The test template; NAME is replaced.
pub(super) const TEST_TEMPLATE: &str = r#"-- Tests of NAME: `toolhost test` runs them, each on a fresh host with its own temp dir.
test("NAME repeats its text", function(t)
  t.eq(t.call("NAME", { text = "hi", times = 2 }), "hi hi")
end)

test("NAME needs a text", function(t)
  t.error_type(t.call("NAME", {}), "invalid_arguments")
end)
"#;

/// The resource template; NAME, SCHEME and TOOLSET are replaced.
const RESOURCE_TEMPLATE: &str = r##"-- NAME: a resource clients read by URI (a template: one resource per id).
-- Check it with `toolhost check`, read it with `toolhost read SCHEME://items/1`,
-- test it with `toolhost test` (NAME_test.lua).

registry.resource{
  uri = "SCHEME://items/{id}",       -- a fixed URI, or a template of {variables}
  name = "NAME",
  toolset = "TOOLSET",
  description = "An item by id",
  mime_type = "text/markdown",
  -- params holds the template's variables. Return text, { blob = json.base64(bytes),
  -- mime_type = ... }, or nil when there is nothing at this URI (resource_not_found).
  read = function(params, ctx)
    return "# Item " .. params.id
  end,
  -- The concrete resources clients see in resources/list.
  list = function(ctx)
    return { { uri = "SCHEME://items/1", name = "item 1" } }
  end,
  -- Completions for a variable as the user types.
  complete = {
    id = function(prefix, ctx) return { prefix .. "1" } end,
  },
}
"##;

/// The resource's test template; NAME and SCHEME are replaced.
const RESOURCE_TEST_TEMPLATE: &str = r##"-- Tests of NAME: `toolhost test` runs them, each on a fresh host with its own temp dir.
test("NAME reads an item by id", function(t)
  t.eq(t.read("SCHEME://items/7")[1].text, "# Item 7")
end)

test("NAME serves only its own URIs", function(t)
  t.error_type(t.read("SCHEME://other/7"), "resource_not_found")
end)
"##;

/// The prompt template; NAME and TOOLSET are replaced.
const PROMPT_TEMPLATE: &str = r#"-- NAME: a prompt a user picks in the client.
-- Check it with `toolhost check`, render it with `toolhost prompt NAME '{"topic": "x"}'`,
-- test it with `toolhost test` (NAME_test.lua).

registry.prompt{
  name = "NAME",
  toolset = "TOOLSET",
  description = "Explain a topic",
  arguments = {
    { name = "topic", description = "What to explain", required = true },
  },
  -- args holds the arguments (strings). Return text (one user message) or a list of
  -- { role = "user" | "assistant", content = text or a content block }.
  render = function(args, ctx)
    return {
      { role = "user", content = "Explain " .. args.topic .. " in three sentences." },
    }
  end,
}
"#;

/// The prompt's test template; NAME is replaced.
const PROMPT_TEST_TEMPLATE: &str = r#"-- Tests of NAME: `toolhost test` runs them, each on a fresh host with its own temp dir.
test("NAME asks about its topic", function(t)
  t.match(t.prompt("NAME", { topic = "tides" }).messages[1].content.text, "Explain tides")
end)

test("NAME needs a topic", function(t)
  t.error_type(t.prompt("NAME", {}), "invalid_arguments")
end)
"#;

/// What `toolhost new` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A tool (`registry.register`).
    Tool,
    /// A resource (`--resource`).
    Resource,
    /// A prompt (`--prompt`).
    Prompt,
}

/// A URI scheme made from NAME (RFC 3986: a letter, then letters, digits, `+`, `-`, `.`).
fn scheme(name: &str) -> String {
    let scheme = name.to_ascii_lowercase().replace('_', "-");
    match scheme.starts_with(|c: char| c.is_ascii_alphabetic()) {
        true => scheme,
        false => format!("x-{scheme}"),
    }
}

/// Writes `<first tool dir>/NAME.lua` and `NAME_test.lua`; refuses to overwrite.
pub(super) fn run(cli: &Cli, name: &str, toolset: &str, kind: Kind) -> Result<ExitCode, CliError> {
    Host::check_tool_name(name).map_err(|e| CliError::Usage(format!("NAME {e}")))?;
    Host::check_tool_name(toolset).map_err(|e| CliError::Usage(format!("--toolset {e}")))?;
    let dir = cli
        .tools_dir
        .first()
        .cloned()
        .unwrap_or_else(|| std::path::PathBuf::from("tools-lua"));
    std::fs::create_dir_all(&dir).map_err(io(format!("cannot create {}", dir.display())))?;
    let path = dir.join(format!("{name}.lua"));
    let test_path = dir.join(format!("{name}_test.lua"));
    for existing in [&path, &test_path] {
        if existing.exists() {
            return Err(CliError::Exists(existing.to_path_buf()));
        }
    }
    let (template, test_template) = match kind {
        Kind::Tool => (TEMPLATE, TEST_TEMPLATE),
        Kind::Resource => (RESOURCE_TEMPLATE, RESOURCE_TEST_TEMPLATE),
        Kind::Prompt => (PROMPT_TEMPLATE, PROMPT_TEST_TEMPLATE),
    };
    let fill = |text: &str| {
        text.replace("SCHEME", &scheme(name))
            .replace("NAME", name)
            .replace("TOOLSET", toolset)
    };
    std::fs::write(&path, fill(template))
        .map_err(io(format!("cannot write {}", path.display())))?;
    std::fs::write(&test_path, fill(test_template))
        .map_err(io(format!("cannot write {}", test_path.display())))?;
    outln!("{}", path.display());
    outln!("{}", test_path.display());
    Ok(ExitCode::SUCCESS)
}

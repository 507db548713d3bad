//! `toolhost new NAME [--toolset T]`: a commented tool file that passes `check` and runs,
//! and `NAME_test.lua` beside it that passes `toolhost test`.

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

/// Writes `<first tool dir>/NAME.lua` and `NAME_test.lua`; refuses to overwrite.
pub(super) fn run(cli: &Cli, name: &str, toolset: &str) -> Result<ExitCode, CliError> {
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
    let text = TEMPLATE.replace("NAME", name).replace("TOOLSET", toolset);
    std::fs::write(&path, text).map_err(io(format!("cannot write {}", path.display())))?;
    std::fs::write(&test_path, TEST_TEMPLATE.replace("NAME", name))
        .map_err(io(format!("cannot write {}", test_path.display())))?;
    outln!("{}", path.display());
    outln!("{}", test_path.display());
    Ok(ExitCode::SUCCESS)
}

//! `toolhost stubs`: writes `<first tool dir>/types/toolhost.lua`, the LuaLS definitions of
//! the host API (point LuaLS at it with `.luarc.json`: `"workspace.library": ["tools-lua/types"]`).

use super::Cli;
use super::error::{CliError, io};
use std::process::ExitCode;

/// Writes the stubs file and prints its path.
pub(super) fn run(cli: &Cli) -> Result<ExitCode, CliError> {
    let dir = cli
        .tools_dir
        .first()
        .cloned()
        .unwrap_or_else(|| std::path::PathBuf::from("tools-lua"))
        .join("types");
    std::fs::create_dir_all(&dir).map_err(io(format!("cannot create {}", dir.display())))?;
    let path = dir.join("toolhost.lua");
    std::fs::write(&path, crate::Host::lua_stubs())
        .map_err(io(format!("cannot write {}", path.display())))?;
    outln!("{}", path.display());
    Ok(ExitCode::SUCCESS)
}

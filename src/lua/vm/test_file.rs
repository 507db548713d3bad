//! `toolhost test` files run in the tool sandbox, with the grants of the folder they test:
//! a test file gets an environment like a tool file of its trust domain (the same safe
//! standard library, the domain's capabilities and module instances, no `io`/`os.execute`),
//! except that it cannot register tools and has `test(name, body)` to declare its tests.
//! Its code is otherwise the tested plugin's: it must not have powers the plugin has not.

use super::{Binding, FileSpec, LuaVm};
use mlua::chunk::ChunkMode;
use mlua::{Function, Table};
use std::time::Duration;

impl LuaVm {
    /// Runs test file `source` (top level only, under `limit`) in a fresh environment of
    /// `file`'s trust domain, and returns its tests as `(name, body)` in declaration order.
    pub(crate) fn load_test_file(
        &self,
        file: &FileSpec<'_>,
        source: &[u8],
        limit: Duration,
    ) -> mlua::Result<Vec<(String, Function)>> {
        // The same pre-scan as tool files: Lua's compiler runs outside any deadline.
        if let Some(refusal) =
            crate::lua::sandbox::depth::prescan(source, crate::lua::sandbox::depth::MAX_NESTING)
        {
            return Err(mlua::Error::runtime(
                crate::lua::sandbox::depth::refusal_message(file.chunk_name, refusal),
            ));
        }
        let env = self.file_env(file, Binding::Module(file.display.to_string()))?;
        let declared = self.lua.create_table()?;
        let collect = declared.clone();
        let test = self
            .lua
            .create_function(move |lua, (name, body): (String, Function)| {
                let entry = lua.create_table()?;
                entry.raw_set(1, name)?;
                entry.raw_set(2, body)?;
                collect.raw_push(entry)
            })?;
        env.raw_set("test", test)?;
        self.with_limit(limit, || {
            self.lua
                .load(crate::lua::bom::strip_bom(source))
                .set_name(format!("@{}", file.chunk_name))
                .set_mode(ChunkMode::Text)
                .set_environment(env)
                .exec()
        })?;
        let mut tests = Vec::new();
        for entry in declared.sequence_values::<Table>() {
            let entry = entry?;
            tests.push((entry.raw_get(1)?, entry.raw_get(2)?));
        }
        Ok(tests)
    }

    /// Evaluates host-written Lua (the test prelude) with the VM's own globals; its value.
    pub(crate) fn eval_trusted(&self, chunk: &str, name: &str) -> mlua::Result<Function> {
        self.lua
            .load(chunk)
            .set_name(format!("={name}"))
            .set_mode(ChunkMode::Text)
            .eval()
    }

    /// Calls `body(arg)` synchronously, stopped at `limit` from now.
    pub(crate) fn call_limited(
        &self,
        body: &Function,
        arg: Table,
        limit: Duration,
    ) -> mlua::Result<()> {
        self.with_limit(limit, || body.call::<()>(arg))
    }

    /// The Lua state, for the host functions `toolhost test` hands its tests.
    pub(crate) fn lua(&self) -> &mlua::Lua {
        &self.lua
    }
}

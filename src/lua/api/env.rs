//! `env.get(name)`: the value of an environment variable the *file that defined the
//! calling function* may read: the union of the `requires_env` of the tools that file
//! registers, plus `[sandbox] env` for everyone; else nil. The bootstrap binds the raw
//! function below to each environment's identity (a tool file's index; modules have
//! none and read only `[sandbox] env`), so the answer never depends on which call runs.

use super::{ApiFunction, Calling, function};
use std::collections::{HashMap, HashSet};

/// `env.get` policy: names every file may read, plus each tool file's own grants.
#[derive(Debug, Default)]
pub(crate) struct EnvPolicy {
    /// `[sandbox] env`.
    pub everyone: HashSet<String>,
    /// Tool file index → the `requires_env` of the tools it registered.
    pub by_file: HashMap<u32, HashSet<String>>,
}

impl EnvPolicy {
    /// Lets the tool file `file_index` read `names`.
    pub(crate) fn grant(&mut self, file_index: u32, names: &[String]) {
        if !names.is_empty() {
            self.by_file
                .entry(file_index)
                .or_default()
                .extend(names.iter().cloned());
        }
    }
}

/// The `env` entries of the host API.
pub(crate) fn functions() -> Vec<ApiFunction> {
    vec![ApiFunction {
        module: "env",
        name: "get",
        params: &[("name", "string")],
        returns: "string?",
        doc: "The variable's value if a tool of this file declared it in requires_env (or [sandbox] env allows it), else nil",
        make: |lua, ctx| {
            let env = ctx.env.clone();
            function(lua, move |lua, (file, name): (Option<u32>, String)| {
                let allowed = lua.app_data_ref::<EnvPolicy>().is_some_and(|policy| {
                    policy.everyone.contains(&name)
                        || file
                            .and_then(|index| policy.by_file.get(&index))
                            .is_some_and(|names| names.contains(&name))
                });
                Ok(if allowed { env.var(&name) } else { None })
            })
        },
        calling: Calling::Anywhere,
        constant: false,
    }]
}

//! `env.get(name)`: the value of an environment variable the *calling tool* declared in
//! `requires_env` (or that `[sandbox] env` allows for everyone), else nil. The bootstrap
//! wraps the raw function below with the calling thread's handler.

use super::{ApiFunction, Calling, function};
use crate::registry::LuaFnId;
use std::collections::{HashMap, HashSet};

/// `env.get` policy: names every tool may read, plus each handler's `requires_env`.
#[derive(Debug, Default)]
pub struct EnvPolicy {
    /// `[sandbox] env`.
    pub everyone: HashSet<String>,
    /// Handler id → its `requires_env`.
    pub by_handler: HashMap<u64, Vec<String>>,
}

impl EnvPolicy {
    /// Lets the handler `id` read `names`.
    pub fn grant(&mut self, id: LuaFnId, names: &[String]) {
        if !names.is_empty() {
            self.by_handler.insert(id.0, names.to_vec());
        }
    }
}

/// The `env` entries of the host API.
pub fn functions() -> Vec<ApiFunction> {
    vec![ApiFunction {
        module: "env",
        name: "get",
        params: &[("name", "string")],
        returns: "string?",
        doc: "The variable's value if the calling tool declared it in requires_env (or [sandbox] env allows it), else nil",
        make: |lua, _| {
            function(lua, |lua, (handler, name): (Option<u64>, String)| {
                let allowed = lua.app_data_ref::<EnvPolicy>().is_some_and(|policy| {
                    policy.everyone.contains(&name)
                        || handler
                            .and_then(|id| policy.by_handler.get(&id))
                            .is_some_and(|names| names.contains(&name))
                });
                Ok(if allowed {
                    std::env::var(&name).ok()
                } else {
                    None
                })
            })
        },
        calling: Calling::Anywhere,
        constant: false,
    }]
}

//! The environment tools see: the process's variables, under a per-host overlay that
//! `toolhost test`'s `t.env{}` fills (a test's variables never touch the process's
//! environment, which other threads read). `env.get`, `requires_env` availability and the
//! variables `proc.run` passes to children all read through it.

use std::collections::HashMap;
use std::ffi::OsString;
use std::sync::Arc;

/// Variables set for one host, over the process environment.
#[derive(Debug, Clone, Default)]
pub(crate) struct EnvVars {
    overlay: Arc<HashMap<String, String>>,
}

impl EnvVars {
    /// The process environment with `overlay` on top.
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn with_overlay(overlay: HashMap<String, String>) -> Self {
        Self {
            overlay: Arc::new(overlay),
        }
    }

    /// The variable's value (the overlay's, else the process's), if it is valid UTF-8.
    pub(crate) fn var(&self, name: &str) -> Option<String> {
        match self.overlay.get(name) {
            Some(value) => Some(value.clone()),
            None => std::env::var(name).ok(),
        }
    }

    /// The variable's raw value (the overlay's, else the process's).
    pub(crate) fn var_os(&self, name: &str) -> Option<OsString> {
        match self.overlay.get(name) {
            Some(value) => Some(OsString::from(value)),
            None => std::env::var_os(name),
        }
    }
}

//! The store as `toolhost store migrate|export|import` use it: built from `[store]` alone
//! (no tool file is loaded), with operations that report errors as text for the CLI.

use super::Host;
use crate::config::LoadedConfig;
use crate::store::StoreInner;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

/// The configured store, for the operator's commands.
pub(crate) struct StoreAdmin {
    store: StoreInner,
}

impl Host {
    /// The store `[store]` configures (the config file as the CLI finds it; `tools_dirs` for
    /// the default SQLite file's place), without building a host.
    pub(crate) fn configured_store(
        config_file: Option<&Path>,
        tools_dirs: &[PathBuf],
    ) -> crate::error::Result<StoreAdmin> {
        let loaded = LoadedConfig::discover(config_file)?;
        let store = super::builder::make_store(
            None,
            &loaded,
            tools_dirs,
            &crate::env_vars::EnvVars::default(),
        )?;
        Ok(StoreAdmin { store })
    }
}

impl StoreAdmin {
    /// Where the data is (a file, or `host:port/database`).
    pub(crate) fn location(&self) -> String {
        format!("{} ({})", self.store.location(), self.store.backend_name())
    }

    /// Creates or upgrades the tables now.
    pub(crate) fn migrate(&self) -> Result<(), String> {
        self.store.migrate().map_err(|e| e.to_string())
    }

    /// Writes every row as JSON lines; how many.
    pub(crate) fn export(&self, out: &mut dyn Write) -> Result<usize, String> {
        crate::store::export(&self.store, out).map_err(|e| e.to_string())
    }

    /// Reads JSON lines and writes them all or none; how many.
    pub(crate) fn import(&self, input: &mut dyn BufRead) -> Result<usize, String> {
        crate::store::import(&self.store, input).map_err(|e| e.to_string())
    }
}

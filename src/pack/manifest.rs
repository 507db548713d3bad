//! `pack.toml`: what a pack is and what it asks for.

use super::error::{PackError, describe_toml_error};
use crate::config::{CAPABILITIES, DEFAULT_PLUGIN_CAPABILITIES};
use serde::Deserialize;
use std::path::Path;

/// Largest manifest read: a few lines of TOML.
const MAX_MANIFEST_BYTES: u64 = 64 * 1024;

/// A pack's manifest, `pack.toml` at the root of the pack. Unknown keys are an error.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackManifest {
    /// The pack's name: its folder under `packs/` and its plugin id (`[A-Za-z0-9_-]{1,64}`).
    pub name: String,
    /// The pack's version (semantic versioning, `1.2.0`).
    pub version: String,
    /// One line on what the tools are for.
    pub description: Option<String>,
    /// Host-API capabilities its tools use beyond `json`, `log` and `time` (which every
    /// plugin has): `env`, `fs`, `proc`, `store`, `hooks`, `call`.
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// Environment variables its tools need: while one is unset they are unavailable.
    #[serde(default)]
    pub requires_env: Vec<String>,
    /// The oldest toolhost the pack works with (`0.2.0`); an older host refuses it.
    pub min_toolhost: Option<String>,
}

impl PackManifest {
    /// Reads and checks `DIR/pack.toml`.
    pub fn read(dir: &Path) -> Result<Self, PackError> {
        let path = dir.join(super::MANIFEST_FILE);
        let bytes = crate::bounded_read::read_regular(&path, MAX_MANIFEST_BYTES)
            .map_err(|e| PackError::new(&path, format!("cannot read: {e}")))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| PackError::new(&path, "not valid UTF-8".to_string()))?;
        Self::parse(&text).map_err(|message| PackError::new(&path, message))
    }

    /// Parses and checks a manifest's text; the error names the line or the key.
    pub fn parse(text: &str) -> Result<Self, String> {
        let manifest: Self = toml::from_str(text).map_err(|e| describe_toml_error(text, &e))?;
        manifest.check()?;
        Ok(manifest)
    }

    /// The capabilities `[plugins.NAME]` grants it: the defaults, then what it asks for.
    pub fn granted_capabilities(&self) -> Vec<String> {
        let mut granted: Vec<String> = DEFAULT_PLUGIN_CAPABILITIES
            .iter()
            .map(|c| c.to_string())
            .collect();
        for capability in &self.capabilities {
            if !granted.contains(capability) {
                granted.push(capability.clone());
            }
        }
        granted
    }

    /// `Err` with the reason when this toolhost (`current`, a version) is older than
    /// `min_toolhost`.
    pub fn check_toolhost(&self, current: &str) -> Result<(), String> {
        let Some(minimum) = &self.min_toolhost else {
            return Ok(());
        };
        // Both parse: `check` accepted the minimum, and the host's own version is semver.
        let (Ok(minimum), Ok(running)) = (
            semver::Version::parse(minimum),
            semver::Version::parse(current),
        ) else {
            return Ok(());
        };
        if running < minimum {
            return Err(format!(
                "pack '{}' needs toolhost {minimum} or newer (min_toolhost); this is toolhost \
                 {running}",
                self.name
            ));
        }
        Ok(())
    }

    fn check(&self) -> Result<(), String> {
        crate::registry::ToolName::new(&self.name).map_err(|e| format!("name: {e}"))?;
        semver::Version::parse(&self.version).map_err(|e| {
            format!(
                "version: {:?} is not a semantic version like 1.2.0 ({e})",
                self.version
            )
        })?;
        if let Some(minimum) = &self.min_toolhost {
            semver::Version::parse(minimum).map_err(|e| {
                format!("min_toolhost: {minimum:?} is not a version like 0.2.0 ({e})")
            })?;
        }
        for (index, capability) in self.capabilities.iter().enumerate() {
            if !CAPABILITIES.contains(&capability.as_str()) {
                return Err(format!(
                    "capabilities[{index}]: unknown capability {capability:?} (known: {})",
                    CAPABILITIES.join(", ")
                ));
            }
        }
        for (index, name) in self.requires_env.iter().enumerate() {
            let valid = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err(format!(
                    "requires_env[{index}]: {name:?} is not an environment variable name \
                     ([A-Za-z_][A-Za-z0-9_]*)"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::PackManifest;

    #[test]
    fn a_full_manifest_parses() {
        let manifest = PackManifest::parse(
            "name = \"weather\"\nversion = \"1.2.0\"\ndescription = \"d\"\n\
             capabilities = [\"proc\"]\nrequires_env = [\"API_KEY\"]\nmin_toolhost = \"0.1.0\"\n",
        )
        .unwrap();
        assert_eq!(manifest.name, "weather");
        assert_eq!(
            manifest.granted_capabilities(),
            ["json", "log", "time", "proc"]
        );
    }

    #[test]
    fn unknown_keys_are_named_with_their_line() {
        let error = PackManifest::parse("name = \"a\"\nversion = \"1.0.0\"\ncapabilites = []\n")
            .unwrap_err();
        assert!(
            error.contains("line 3") && error.contains("capabilites"),
            "{error}"
        );
    }

    #[test]
    fn bad_types_are_named() {
        let error = PackManifest::parse("name = 3\nversion = \"1.0.0\"\n").unwrap_err();
        assert!(
            error.contains("line 1") && error.contains("name"),
            "{error}"
        );
        let error =
            PackManifest::parse("name = \"a\"\nversion = \"1.0.0\"\ncapabilities = \"fs\"\n")
                .unwrap_err();
        assert!(error.contains("capabilities"), "{error}");
    }

    #[test]
    fn names_that_are_paths_are_refused() {
        for name in ["..", "a/b", "../x", ""] {
            let text = format!("name = {name:?}\nversion = \"1.0.0\"\n");
            let error = PackManifest::parse(&text).unwrap_err();
            assert!(error.starts_with("name:"), "{name}: {error}");
        }
    }

    #[test]
    fn unknown_capabilities_and_env_names_are_refused() {
        let error =
            PackManifest::parse("name = \"a\"\nversion = \"1.0.0\"\ncapabilities = [\"net\"]\n")
                .unwrap_err();
        assert!(
            error.contains("capabilities[0]") && error.contains("net"),
            "{error}"
        );
        let error =
            PackManifest::parse("name = \"a\"\nversion = \"1.0.0\"\nrequires_env = [\"A=B\"]\n")
                .unwrap_err();
        assert!(error.contains("requires_env[0]"), "{error}");
    }

    #[test]
    fn a_newer_minimum_is_refused() {
        let manifest =
            PackManifest::parse("name = \"a\"\nversion = \"1.0.0\"\nmin_toolhost = \"99.0.0\"\n")
                .unwrap();
        let error = manifest.check_toolhost("0.1.0").unwrap_err();
        assert!(error.contains("needs toolhost 99.0.0 or newer"), "{error}");
        assert!(manifest.check_toolhost("99.0.1").is_ok());
    }
}

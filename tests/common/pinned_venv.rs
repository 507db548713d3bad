//! A Python venv under `target/` holding one pinned PyPI package, made on first use and
//! reused while the pinned version is importable from it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Held while a venv is checked and made (one test thread at a time).
static MAKING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A pinned package: what pip installs and what must import afterwards.
pub struct Pinned {
    /// The venv's directory under `target/`.
    pub dir: &'static str,
    /// The distribution name on PyPI.
    pub name: &'static str,
    /// The exact version.
    pub version: &'static str,
    /// The modules the tests import, comma-separated (`a.b, c`).
    pub imports: &'static str,
}

impl Pinned {
    /// The venv's python, creating the venv and installing the package the first time.
    pub fn python(&self) -> PathBuf {
        let venv = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target")
            .join(self.dir);
        let python = venv.join("bin/python");
        let spec = format!("{}=={}", self.name, self.version);
        let check = format!(
            "import importlib.metadata as m, {}; assert m.version({:?}) == {:?}",
            self.imports, self.name, self.version
        );
        let ready = || {
            Command::new(&python)
                .args(["-c", &check])
                .status()
                .is_ok_and(|s| s.success())
        };
        // The tests of one binary run on threads: two making the same venv at once had one
        // run the other's half-made pip (CI failed so). One makes it; the rest wait, then
        // find it ready.
        let _making = MAKING
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if !ready() {
            let made = Command::new("python3")
                .args(["-m", "venv"])
                .arg(&venv)
                .status()
                .expect("python3 is needed for the Python MCP tests");
            assert!(made.success(), "python3 -m venv failed");
            let installed = Command::new(venv.join("bin/pip"))
                .args(["install", "--quiet", &spec])
                .status()
                .expect("pip runs");
            assert!(installed.success(), "pip install {spec} failed");
        }
        assert!(ready(), "{spec} is not importable from {}", venv.display());
        python
    }
}

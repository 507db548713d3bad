//! The sandbox a `toolhost test` file runs in: a VM set up like the host's (same
//! `[sandbox]` and `[runtime]` settings), whose `fs` is the test's own temp root, whose
//! `store` is a fresh in-memory one and whose `proc.run` starts no program; the file runs
//! with the grants of the tool directory it lies in (a plugin folder's tests get that
//! plugin's capabilities and module instances), or the built-in grants (`tests-lua/`).

use super::Host;
use crate::discovery::ToolDir;
use crate::fs_roots::FsRoots;
use crate::lua::api::proc_script::ProcScript;
use crate::lua::{FileSpec, LuaVm, SearchDir};
use crate::registry::Source;
use crate::store::{DEFAULT_MAX_VALUE_BYTES, StoreInner};
use mlua::Function;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// A test file's own index for `env.get` grants: no tool file has it, so the file reads
/// only what `[sandbox] env` allows everyone.
const TEST_FILE_INDEX: u32 = u32::MAX;

/// One test file loaded into its own sandbox VM.
pub(crate) struct TestSandbox {
    /// The VM the file and its tests run on.
    pub(crate) vm: LuaVm,
    /// The declared tests, `(name, body)`, in order.
    pub(crate) tests: Vec<(String, Function)>,
}

impl Host {
    /// Loads test file `path` (shown as `shown`) into a fresh sandbox VM whose `fs` root
    /// is `fs_root`; its top level runs under `limit`.
    pub(crate) fn test_sandbox(
        &self,
        path: &Path,
        shown: &str,
        source: &[u8],
        fs_root: &Path,
        limit: Duration,
    ) -> Result<TestSandbox, mlua::Error> {
        let world = self.inner.world.read().clone();
        let mut settings = super::builder::vm_settings(&world.config.config, &self.inner.inputs);
        settings.api.fs_roots = Arc::new(FsRoots::new(Some(&[fs_root.to_path_buf()])));
        settings.api.store = Arc::new(StoreInner::memory(
            world
                .config
                .config
                .store
                .max_value_bytes
                .unwrap_or(DEFAULT_MAX_VALUE_BYTES),
        ));
        // Test code itself never starts a program (tools under test answer from `t.proc`).
        settings.api.proc_script = Some(Arc::new(ProcScript::default()));
        let vm = LuaVm::new(&settings)?;
        let builtin = ToolDir::plain(std::path::PathBuf::new(), Source::Builtin, None);
        let dir = owning_dir(&world.dirs, path)
            .map_err(mlua::Error::runtime)?
            .unwrap_or(&builtin);
        // A refused pack's tests would only meet "unknown tool": say why instead.
        if let Some(refused) = &dir.refused {
            return Err(mlua::Error::runtime(refused.reason.clone()));
        }
        let spec = FileSpec {
            display: shown,
            chunk_name: shown,
            index: TEST_FILE_INDEX,
            domain: dir.source.to_string().into(),
            search_dirs: search_dirs(&world.dirs, dir).into(),
            capabilities: dir.capabilities.as_deref(),
            capability_hint: dir.capability_hint.as_deref(),
        };
        let tests = vm.load_test_file(&spec, source, limit)?;
        Ok(TestSandbox { vm, tests })
    }
}

/// The tool directory whose grants `path` runs with (`None`: no tool directory, the
/// built-in grants). The folder it was found in and the one it really is in (symlinks
/// resolved) must agree, or one of them be no tool directory at all (the other's grants
/// apply); a file found in one trust domain's folder that resolves into another's is
/// refused, so a symlink cannot lend a plugin's test file other grants.
fn owning_dir<'a>(dirs: &'a [ToolDir], path: &Path) -> Result<Option<&'a ToolDir>, Unowned> {
    let unreadable = |source| Unowned::Unreadable {
        path: path.to_path_buf(),
        source,
    };
    let found = std::path::absolute(path).map_err(unreadable)?;
    let real = path.canonicalize().map_err(unreadable)?;
    let lexical = deepest(dirs, &found, |dir| std::path::absolute(&dir.path).ok());
    let resolved = deepest(dirs, &real, |dir| dir.path.canonicalize().ok());
    match (lexical, resolved) {
        (Some(a), Some(b)) if a.source != b.source => Err(Unowned::TwoDomains {
            path: path.to_path_buf(),
            found_in: a.path.clone(),
            found_source: a.source.to_string(),
            resolves_into: b.path.clone(),
            real_source: b.source.to_string(),
        }),
        (Some(dir), _) | (None, Some(dir)) => Ok(Some(dir)),
        (None, None) => Ok(None),
    }
}

/// Why a test file's grants cannot be told.
#[derive(Debug, thiserror::Error)]
enum Unowned {
    /// The file's path cannot be resolved.
    #[error("{}: {source}", path.display())]
    Unreadable {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    /// Found in one trust domain's folder, it resolves into another's.
    #[error(
        "{} lies in the tool directory {} ({found_source}) but resolves into {} \
         ({real_source}); a test file runs with one folder's grants",
        path.display(),
        found_in.display(),
        resolves_into.display()
    )]
    TwoDomains {
        path: std::path::PathBuf,
        found_in: std::path::PathBuf,
        found_source: String,
        resolves_into: std::path::PathBuf,
        real_source: String,
    },
}

/// The deepest tool directory (as `locate` names it) holding `path`.
fn deepest<'a>(
    dirs: &'a [ToolDir],
    path: &Path,
    locate: impl Fn(&ToolDir) -> Option<std::path::PathBuf>,
) -> Option<&'a ToolDir> {
    dirs.iter()
        .filter_map(|dir| Some((dir, locate(dir)?)))
        .filter(|(_, at)| path.starts_with(at))
        .max_by_key(|(_, at)| at.components().count())
        .map(|(dir, _)| dir)
}

/// Where `require` looks, as for the directory's tool files: its own `lib/`, then the
/// other directories' `lib/` in order (modules are instantiated per trust domain).
fn search_dirs(dirs: &[ToolDir], own: &ToolDir) -> Vec<SearchDir> {
    let own_lib = (!own.path.as_os_str().is_empty()).then(|| own.path.join("lib"));
    own_lib
        .iter()
        .cloned()
        .chain(
            dirs.iter()
                .map(|dir| dir.path.join("lib"))
                .filter(|lib| Some(lib) != own_lib.as_ref()),
        )
        .filter_map(|lib| SearchDir::new(&lib))
        .collect()
}

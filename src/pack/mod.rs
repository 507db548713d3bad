//! Tool packs (docs/packs.md): a folder of tools with a `pack.toml` manifest, installed
//! under `packs/NAME/` beside the configuration and pinned in `toolhost.lock` (source,
//! commit, the SHA-256 of every file). This module reads and checks both files and hashes
//! a pack's tree; fetching with `git` and editing `toolhost.toml` are the command line's.

mod error;
mod files;
mod lock;
mod manifest;

pub use error::PackError;
pub use files::hash_tree;
pub use lock::{FileChange, LockedPack, PackLock};
pub use manifest::PackManifest;

/// The manifest's file name, at the root of a pack.
pub const MANIFEST_FILE: &str = "pack.toml";
/// The lock file's name, beside the configuration file.
pub const LOCK_FILE: &str = "toolhost.lock";
/// The folder packs are installed in, beside the configuration file.
pub const PACKS_DIR: &str = "packs";

//! Files the host keeps for itself, which may lie inside a directory tools can reach: the
//! store's SQLite file and its companions (`-wal`, `-shm`, `-journal`) sit in
//! `.toolhost/` beside the config by default, usually inside the working-directory root.
//! `fs` refuses to open them (by file identity, whatever path or link leads there): reading
//! them would show every namespace's keys, writing them would corrupt the store.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

/// SQLite's companion files of a database `F`: `F-wal`, `F-shm`, `F-journal`.
const COMPANIONS: &[&str] = &["", "-wal", "-shm", "-journal"];

/// Every private file of every host in this process (a union: refusing another host's
/// store file too is the safe side).
static PRIVATE: RwLock<Vec<PathBuf>> = RwLock::new(Vec::new());

/// Keeps `path` (a SQLite database) and its companions out of reach of `fs`.
pub(crate) fn keep_private(path: &Path) {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    if let Ok(mut private) = PRIVATE.write()
        && !private.contains(&absolute)
    {
        private.push(absolute);
    }
}

/// Whether the file with metadata `meta` (opened by `fs`) is one of the private files.
pub(crate) fn is_private(meta: &impl IdentityOf) -> bool {
    let (dev, ino) = meta.identity();
    let Ok(private) = PRIVATE.read() else {
        // A poisoned lock: refuse rather than guess.
        return true;
    };
    private.iter().any(|database| {
        COMPANIONS.iter().any(|suffix| {
            let mut name = database.as_os_str().to_os_string();
            name.push(suffix);
            std::fs::metadata(&name).is_ok_and(|m| (m.dev(), m.ino()) == (dev, ino))
        })
    })
}

/// A file's identity (device, inode).
pub(crate) trait IdentityOf {
    /// `(dev, ino)`.
    fn identity(&self) -> (u64, u64);
}

impl IdentityOf for cap_std::fs::Metadata {
    fn identity(&self) -> (u64, u64) {
        use cap_std::fs::MetadataExt as _;
        (self.dev(), self.ino())
    }
}

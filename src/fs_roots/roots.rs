//! The roots `fs` may touch, held as capability handles (`cap_std::fs::Dir`): every path is
//! opened *relative to a root's handle*, and cap-std refuses any resolution that would leave
//! it (`..` past the root, absolute symlinks, symlinks pointing out, dangling or not), with
//! no check-then-use window. Opening never blocks: non-regular files (FIFOs, devices,
//! sockets) are opened non-blocking and refused before any read or write.

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
use cap_std::ambient_authority;
use cap_std::fs::{Dir, File, OpenOptions, OpenOptionsExt};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// One root: its handle and the absolute paths that name it.
#[derive(Debug)]
pub(crate) struct Root {
    /// The open directory every access goes through.
    pub(crate) dir: Dir,
    /// Its canonical path.
    pub(super) canonical: PathBuf,
    /// As configured (absolute), when that differs from the canonical path.
    pub(super) given: PathBuf,
}

/// Why `fs` has no roots at all.
#[derive(Debug, Clone)]
pub(crate) enum NoRoots {
    /// `[sandbox] fs_roots = []`.
    EmptyConfig,
    /// No `fs_roots` configured and the working directory may not be the implicit root.
    UnsafeWorkingDir(PathBuf),
    /// Every configured root was unusable.
    Unusable,
    /// An MCP client declared roots, and none of them lies inside (or contains) an allowed
    /// root (see [`FsRoots::narrowed_to`]).
    OutsideClientRoots,
}

impl std::fmt::Display for NoRoots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::EmptyConfig => f.write_str(
                "[sandbox] fs_roots is empty; list the directories tools may use in \
                 [sandbox] fs_roots",
            ),
            Self::UnsafeWorkingDir(cwd) => write!(
                f,
                "the working directory {} cannot be the implicit root (it is / or the home \
                 directory); set [sandbox] fs_roots",
                cwd.display()
            ),
            Self::Unusable => f.write_str("none of [sandbox] fs_roots could be opened"),
            Self::OutsideClientRoots => f.write_str(
                "none of the MCP client's roots lies inside the directories this server \
                 allows ([sandbox] fs_roots, or the working directory); client roots only \
                 narrow them",
            ),
        }
    }
}

/// Why a path may not be used; its `Display` is the message a tool author reads (after
/// the `fs.FUNCTION: ` of the host function that refused).
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refused {
    /// `fs` has no roots at all.
    #[error("fs access is not granted: {0}")]
    NoRoots(NoRoots),
    /// The path (as given) lies outside every root.
    #[error("'{0}' is outside the allowed roots")]
    Outside(String),
    /// The path (as given) could not be opened.
    #[error("{}", describe(path, source))]
    Open {
        /// The path as given.
        path: String,
        /// Why the operating system (or cap-std) refused.
        source: std::io::Error,
    },
    /// The path (as given) is a FIFO, a device, a directory…: not a regular file.
    #[error("'{0}' is not a regular file")]
    NotRegular(String),
    /// The path (as given) is the host's store file (see `keep_private`).
    #[error("'{0}' is toolhost's own store file (tools use the store API instead)")]
    StoreFile(String),
}

impl Refused {
    /// [`Refused::Open`] of `path`.
    fn open(path: &str) -> impl FnOnce(std::io::Error) -> Self {
        move |source| Self::Open {
            path: path.to_string(),
            source,
        }
    }
}

/// The directories tool code may touch.
#[derive(Debug)]
pub(crate) struct FsRoots {
    pub(super) roots: Vec<Root>,
    pub(super) none: Option<NoRoots>,
}

/// A path resolved to a root and a path relative to it.
pub(crate) struct Resolved<'a> {
    pub(crate) root: &'a Root,
    pub(crate) relative: PathBuf,
}

impl FsRoots {
    /// Opens the configured roots (`None`: not configured, so the working directory, unless
    /// that is `/` or the home directory itself). `Some(&[])` grants no fs access at all.
    /// Missing roots are dropped with a warning.
    pub(crate) fn new(configured: Option<&[PathBuf]>) -> Self {
        let wanted: Vec<PathBuf> = match configured {
            Some([]) => return Self::without(NoRoots::EmptyConfig),
            Some(roots) => roots.to_vec(),
            None => {
                let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
                if !implicit_root_allowed(&cwd) {
                    return Self::without(NoRoots::UnsafeWorkingDir(cwd));
                }
                vec![cwd]
            }
        };
        let roots: Vec<Root> = wanted
            .iter()
            .filter_map(|root| match open_root(root) {
                Ok(root) => Some(root),
                Err(e) => {
                    tracing::warn!("[sandbox] fs_roots: {} is unusable: {e}", root.display());
                    None
                }
            })
            .collect();
        let none = roots.is_empty().then_some(NoRoots::Unusable);
        Self { roots, none }
    }

    pub(super) fn without(reason: NoRoots) -> Self {
        Self {
            roots: Vec::new(),
            none: Some(reason),
        }
    }

    /// Which root `path` lies in, and the path relative to it. Relative paths resolve
    /// against the first root; an absolute path must start with a root's path.
    pub(crate) fn resolve(&self, path: &str) -> Result<Resolved<'_>, Refused> {
        let Some(first) = self.roots.first() else {
            return Err(Refused::NoRoots(
                self.none.clone().unwrap_or(NoRoots::EmptyConfig),
            ));
        };
        let given = Path::new(path);
        if !given.is_absolute() {
            return Ok(Resolved {
                root: first,
                relative: relative_or_dot(given),
            });
        }
        for root in &self.roots {
            for prefix in [&root.canonical, &root.given] {
                if let Ok(rest) = given.strip_prefix(prefix) {
                    return Ok(Resolved {
                        root,
                        relative: relative_or_dot(rest),
                    });
                }
            }
        }
        Err(Refused::Outside(path.to_string()))
    }

    /// The roots' absolute (canonical) paths, in order (`fs.roots()`).
    pub(crate) fn paths(&self) -> Vec<PathBuf> {
        self.roots.iter().map(|r| r.canonical.clone()).collect()
    }

    /// The absolute path of the first root (where a relative `cwd` resolves).
    pub(crate) fn absolute(&self, resolved: &Resolved<'_>) -> PathBuf {
        resolved.root.canonical.join(&resolved.relative)
    }
}

/// `/` and the home directory itself are never implicit roots: a tool would reach every
/// file of the user.
fn implicit_root_allowed(cwd: &Path) -> bool {
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    if cwd.parent().is_none() {
        return false;
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    home.is_none_or(|home| home.canonicalize().unwrap_or(home) != cwd)
}

fn open_root(root: &Path) -> std::io::Result<Root> {
    let canonical = root.canonicalize()?;
    let given = std::path::absolute(root).unwrap_or_else(|_| canonical.clone());
    let dir = Dir::open_ambient_dir(&canonical, ambient_authority())?;
    Ok(Root {
        dir,
        canonical,
        given,
    })
}

pub(super) fn relative_or_dot(path: &Path) -> PathBuf {
    if path.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        path.to_path_buf()
    }
}

/// How a path failed to open, as a tool author should read it.
pub(crate) fn describe(path: &str, error: &std::io::Error) -> String {
    if error.raw_os_error() == Some(libc::ELOOP) {
        return format!("'{path}' is a symlink (fs.write never follows a symlink)");
    }
    match error.kind() {
        ErrorKind::PermissionDenied if error.raw_os_error().is_none() => {
            format!("'{path}' is outside the allowed roots")
        }
        ErrorKind::NotFound => format!("'{path}': no such file or directory"),
        _ if error.raw_os_error() == Some(libc::ENXIO) => {
            format!("'{path}' is not a regular file")
        }
        _ => {
            let text = error.to_string();
            if text.contains("outside of the filesystem") || text.contains("sandbox") {
                format!("'{path}' is outside the allowed roots")
            } else {
                format!("'{path}': {text}")
            }
        }
    }
}

/// Opens a regular file for reading without blocking (a FIFO would block `open`).
pub(crate) fn open_regular_read(at: &Resolved<'_>, shown: &str) -> Result<File, Refused> {
    open_regular_read_in(&at.root.dir, &at.relative, shown)
}

/// [`open_regular_read`] of `relative` inside `dir` (a directory met while walking).
pub(crate) fn open_regular_read_in(
    dir: &Dir,
    relative: &Path,
    shown: &str,
) -> Result<File, Refused> {
    let mut options = OpenOptions::new();
    options.read(true).custom_flags(libc::O_NONBLOCK);
    let file = dir
        .open_with(relative, &options)
        .map_err(Refused::open(shown))?;
    regular(file, shown)
}

/// Opens (creating) a regular file for writing: never through a final-component symlink,
/// never blocking, and without truncating anything before it is known to be a regular file.
pub(crate) fn open_regular_write(at: &Resolved<'_>, shown: &str) -> Result<File, Refused> {
    let mut options = OpenOptions::new();
    options
        .write(true)
        .create(true)
        .follow(FollowSymlinks::No)
        .custom_flags(libc::O_NONBLOCK);
    let file = at
        .root
        .dir
        .open_with(&at.relative, &options)
        .map_err(Refused::open(shown))?;
    regular(file, shown)
}

fn regular(file: File, shown: &str) -> Result<File, Refused> {
    let meta = file.metadata().map_err(Refused::open(shown))?;
    if !meta.is_file() {
        return Err(Refused::NotRegular(shown.to_string()));
    }
    if super::private::is_private(&meta) {
        return Err(Refused::StoreFile(shown.to_string()));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What tools (and the tests that read their errors) see, byte for byte.
    #[test]
    fn refusals_read_as_tool_authors_expect() {
        let no_roots = |reason| {
            FsRoots::without(reason)
                .resolve("x")
                .err()
                .map(|e| e.to_string())
        };
        assert_eq!(
            no_roots(NoRoots::EmptyConfig).as_deref(),
            Some(
                "fs access is not granted: [sandbox] fs_roots is empty; list the directories \
                 tools may use in [sandbox] fs_roots"
            )
        );
        assert_eq!(
            no_roots(NoRoots::UnsafeWorkingDir(PathBuf::from("/home/u"))).as_deref(),
            Some(
                "fs access is not granted: the working directory /home/u cannot be the \
                 implicit root (it is / or the home directory); set [sandbox] fs_roots"
            )
        );
        assert_eq!(
            no_roots(NoRoots::Unusable).as_deref(),
            Some("fs access is not granted: none of [sandbox] fs_roots could be opened")
        );
        assert_eq!(
            no_roots(NoRoots::OutsideClientRoots).as_deref(),
            Some(
                "fs access is not granted: none of the MCP client's roots lies inside the \
                 directories this server allows ([sandbox] fs_roots, or the working \
                 directory); client roots only narrow them"
            )
        );

        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("sub")).expect("sub dir");
        let roots = FsRoots::new(Some(&[dir.path().to_path_buf()]));
        assert_eq!(
            roots.resolve("/elsewhere/f").err().map(|e| e.to_string()),
            Some("'/elsewhere/f' is outside the allowed roots".to_string())
        );
        let opened = |path: &str| {
            let Ok(at) = roots.resolve(path) else {
                panic!("{path} is inside the root");
            };
            open_regular_read(&at, path).err().map(|e| e.to_string())
        };
        assert_eq!(
            opened("missing.txt").as_deref(),
            Some("'missing.txt': no such file or directory")
        );
        assert_eq!(
            opened("sub").as_deref(),
            Some("'sub' is not a regular file")
        );
    }
}

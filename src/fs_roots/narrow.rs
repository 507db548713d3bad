//! An MCP client's roots *narrow* the roots the server allows; they never widen them. The
//! effective roots are the intersection: a client root inside an allowed root becomes a
//! root of its own (opened through the allowed root's handle, so it cannot lead out of it);
//! a client root that contains an allowed root (`file:///`) yields just that allowed root;
//! an unrelated one (a sibling, `/etc`, a path that does not exist on this machine)
//! contributes nothing. A narrowed root keeps the handle it was opened through, so it has
//! exactly the access of the root it lies in.

use super::roots::{FsRoots, NoRoots, Root, relative_or_dot};
use parking_lot::Mutex;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

impl FsRoots {
    /// The part of these roots that lies inside `wanted` (a client's root paths, in the
    /// client's order: relative paths then resolve against its first usable root).
    pub(crate) fn narrowed_to(&self, wanted: &[PathBuf]) -> FsRoots {
        if self.roots.is_empty() {
            // Nothing is allowed: the client cannot change that, and the reason stays.
            return match &self.none {
                Some(reason) => FsRoots::without(reason.clone()),
                None => FsRoots::without(NoRoots::OutsideClientRoots),
            };
        }
        let mut roots: Vec<Root> = Vec::new();
        for path in wanted {
            // Canonical: symlinks and `..` resolved, so a link pointing out of the project
            // names where it really leads.
            let canonical = match path.canonicalize() {
                Ok(canonical) => canonical,
                Err(e) => {
                    tracing::warn!("ignoring MCP client root {}: {e}", path.display());
                    continue;
                }
            };
            for allowed in &self.roots {
                let narrowed = if let Ok(inside) = canonical.strip_prefix(&allowed.canonical) {
                    open_inside(allowed, inside, path, &canonical)
                } else if allowed.canonical.starts_with(&canonical) {
                    allowed.try_clone()
                } else {
                    continue;
                };
                match narrowed {
                    Ok(root) if !roots.iter().any(|r| r.canonical == root.canonical) => {
                        roots.push(root)
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!("ignoring MCP client root {}: {e}", path.display())
                    }
                }
            }
        }
        if roots.is_empty() {
            return FsRoots::without(NoRoots::OutsideClientRoots);
        }
        FsRoots { roots, none: None }
    }
}

/// A root at `inside` (relative) of `allowed`, opened through `allowed`'s handle: should the
/// path have changed since it was canonicalised (a directory swapped for a symlink), cap-std
/// still refuses to leave `allowed`.
fn open_inside(
    allowed: &Root,
    inside: &Path,
    given: &Path,
    canonical: &Path,
) -> std::io::Result<Root> {
    let dir = allowed.dir.open_dir(relative_or_dot(inside))?;
    // The client's spelling names the root too, unless it has `.`/`..` in it (then only the
    // canonical path does: a lexical prefix with `..` would match paths it does not hold).
    let plain = given
        .components()
        .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    Ok(Root {
        dir,
        canonical: canonical.to_path_buf(),
        given: if plain {
            given.to_path_buf()
        } else {
            canonical.to_path_buf()
        },
    })
}

impl Root {
    fn try_clone(&self) -> std::io::Result<Root> {
        Ok(Root {
            dir: self.dir.try_clone()?,
            canonical: self.canonical.clone(),
            given: self.given.clone(),
        })
    }
}

/// The roots an MCP client declared for its session. They are applied to whatever the
/// host allows when a call runs (the allowed roots change with a config reload), and the
/// intersection is kept until they do.
#[derive(Debug)]
pub(crate) struct ClientRoots {
    paths: Vec<PathBuf>,
    /// The allowed roots last narrowed, and the result.
    narrowed: Mutex<Option<(Arc<FsRoots>, Arc<FsRoots>)>>,
}

impl ClientRoots {
    /// A client's root paths (already decoded from their `file://` URIs).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn new(paths: Vec<PathBuf>) -> Self {
        Self {
            paths,
            narrowed: Mutex::new(None),
        }
    }

    /// `allowed` narrowed to the client's roots.
    pub(crate) fn within(&self, allowed: &Arc<FsRoots>) -> Arc<FsRoots> {
        let mut narrowed = self.narrowed.lock();
        if let Some((base, result)) = &*narrowed
            && Arc::ptr_eq(base, allowed)
        {
            return result.clone();
        }
        let result = Arc::new(allowed.narrowed_to(&self.paths));
        *narrowed = Some((allowed.clone(), result.clone()));
        result
    }
}

//! Walking a directory tree through capability handles, in sorted pre-order (a directory's
//! entries by name, descending into each subdirectory where it sorts). Symlinks are never
//! followed (neither listed nor descended), every step stays inside the root's handle, and
//! the walk stops when the call's deadline passes or the visit limit is reached.

use cap_fs_ext::DirExt;
use cap_std::fs::Dir;
use std::time::Instant;

/// Most entries one walk looks at.
pub(crate) const MAX_WALKED: usize = 200_000;

/// Whether to go on walking.
pub(crate) enum Flow {
    Continue,
    Stop,
}

/// Why a walk ended early.
pub(crate) struct DeadlinePassed;

/// The message when a host function stops at the call's deadline.
pub(crate) fn deadline_message() -> &'static str {
    "stopped: the call's deadline passed"
}

/// True when `deadline` has passed.
pub(crate) fn passed(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

/// Calls `visit(dir, name, relative)` for every regular file under `base`, where `dir`
/// holds the file, `name` is its name there and `relative` its `/`-separated path from
/// `base`.
pub(crate) fn walk_files(
    base: Dir,
    deadline: Option<Instant>,
    mut visit: impl FnMut(&Dir, &str, &str) -> Flow,
) -> Result<(), DeadlinePassed> {
    struct Frame {
        dir: Dir,
        prefix: String,
        /// Entries still to visit, last first.
        pending: Vec<(String, bool)>,
    }
    let frame = |dir: Dir, prefix: String| -> Frame {
        let mut entries: Vec<(String, bool)> = dir
            .entries()
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter_map(|entry| {
                        let kind = entry.file_type().ok()?;
                        let name = entry.file_name().into_string().ok()?;
                        (kind.is_file() || kind.is_dir()).then_some((name, kind.is_dir()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        entries.sort_by(|a, b| b.0.cmp(&a.0));
        Frame {
            dir,
            prefix,
            pending: entries,
        }
    };
    let mut stack = vec![frame(base, String::new())];
    let mut walked = 0usize;
    while let Some(top) = stack.last_mut() {
        let Some((name, is_dir)) = top.pending.pop() else {
            stack.pop();
            continue;
        };
        walked += 1;
        if walked > MAX_WALKED {
            return Ok(());
        }
        if walked.is_multiple_of(64) && passed(deadline) {
            return Err(DeadlinePassed);
        }
        let relative = format!("{}{name}", top.prefix);
        if is_dir {
            // Opened through the parent's handle without following a symlink: a directory
            // swapped for a symlink meanwhile is skipped, never followed.
            if let Ok(child) = top.dir.open_dir_nofollow(&name) {
                let prefix = format!("{relative}/");
                stack.push(frame(child, prefix));
            }
            continue;
        }
        if let Flow::Stop = visit(&top.dir, &name, &relative) {
            return Ok(());
        }
    }
    Ok(())
}

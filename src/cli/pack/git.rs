//! Fetching a pack with the `git` command: clone into a temporary folder beside the
//! installed packs, resolve the revision (a tag, a branch, a commit), check it out and drop
//! `.git`. The source and revision come from the user (or a lock file someone sent): they
//! are passed after `--` / `--end-of-options` so neither can be read as an option, the
//! `ext::` transport (which runs a command) is off, git never prompts (no terminal to hang
//! on) and a stalled HTTP transfer ends.

use super::super::error::CliError;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A fetched pack: its files in a temporary folder and the commit they are from.
pub(super) struct Fetched {
    /// The checked-out files (no `.git`).
    pub tree: PathBuf,
    /// The full commit id (none: copied from a folder that is not a git repository).
    pub commit: Option<String>,
    /// Removed when dropped, with whatever is left in it.
    _temp: tempfile::TempDir,
}

/// `URL[#REV]` split at its last `#`.
pub(super) fn split_rev(spec: &str) -> (&str, Option<&str>) {
    match spec.rsplit_once('#') {
        Some((source, rev)) if !rev.is_empty() => (source, Some(rev)),
        Some((source, _)) => (source, None),
        None => (spec, None),
    }
}

/// Clones `source` into a temporary folder inside `within` and checks out `rev` (default:
/// the remote's HEAD).
pub(super) fn fetch(source: &str, rev: Option<&str>, within: &Path) -> Result<Fetched, CliError> {
    if source.is_empty() || source.starts_with('-') {
        return Err(CliError::Usage(format!(
            "URL: {source:?} is not a git URL or path"
        )));
    }
    if let Some(rev) = rev
        && (rev.starts_with('-') || rev.chars().any(|c| c.is_whitespace() || c.is_control()))
    {
        return Err(CliError::Usage(format!(
            "#REV: {rev:?} is not a tag, branch or commit"
        )));
    }
    let temp = tempfile::Builder::new()
        .prefix(".fetch-")
        .tempdir_in(within)
        .map_err(super::super::error::io(format!(
            "cannot make a temporary folder in {}",
            within.display()
        )))?;
    let tree = temp.path().join("tree");
    if is_plain_folder(source) {
        if let Some(rev) = rev {
            return Err(CliError::Usage(format!(
                "{source}: a folder that is not a git repository has no revision {rev:?}"
            )));
        }
        copy_folder(Path::new(source), &tree)?;
        return Ok(Fetched {
            tree,
            commit: None,
            _temp: temp,
        });
    }
    git(
        None,
        &["clone", "--quiet", "--no-checkout", "--", source],
        Some(&tree),
    )
    .map_err(|e| CliError::Usage(format!("cannot fetch {}: {e}", without_userinfo(source))))?;
    let commit = resolve(&tree, rev)
        .map_err(|e| CliError::Usage(format!("{}: {e}", without_userinfo(source))))?;
    git(
        Some(&tree),
        &[
            "-c",
            "advice.detachedHead=false",
            "checkout",
            "--quiet",
            "--detach",
            &commit,
        ],
        None,
    )
    .map_err(|e| {
        CliError::Usage(format!(
            "{}: cannot check out {commit}: {e}",
            without_userinfo(source)
        ))
    })?;
    std::fs::remove_dir_all(tree.join(".git")).map_err(super::super::error::io(format!(
        "cannot remove {}",
        tree.join(".git").display()
    )))?;
    Ok(Fetched {
        tree,
        commit: Some(commit),
        _temp: temp,
    })
}

/// `source` without the user name and password of a URL (`https://user:token@host/x` →
/// `https://host/x`): what is recorded in `toolhost.lock`, which is committed, and printed.
/// Anything else (a path, `user@host:path`, whose user is a login name) is returned as is.
pub(super) fn without_userinfo(source: &str) -> String {
    let Some((scheme, rest)) = source.split_once("://") else {
        return source.to_string();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => source.to_string(),
    }
}

/// A local folder that is neither a work tree (`.git`) nor a bare repository (`HEAD` and
/// `objects/`): copied rather than cloned.
fn is_plain_folder(source: &str) -> bool {
    let path = Path::new(source);
    !source.contains("://")
        && path.is_dir()
        && path.join(".git").symlink_metadata().is_err()
        && !(path.join("HEAD").is_file() && path.join("objects").is_dir())
}

/// Copies the files of the folder `from` into `to`, after the same checks a pack's files
/// get (no links or special files, within the size limits).
fn copy_folder(from: &Path, to: &Path) -> Result<(), CliError> {
    let files = crate::hash_tree(from)?;
    for relative in files.keys() {
        let target = to.join(relative);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(super::super::error::io(format!(
                "cannot create {}",
                parent.display()
            )))?;
        }
        std::fs::copy(from.join(relative), &target).map_err(super::super::error::io(format!(
            "cannot copy {}",
            from.join(relative).display()
        )))?;
    }
    Ok(())
}

/// The commit `rev` names in the clone at `repo`: a tag, else a branch of the remote, else
/// a commit id (or what git resolves it to); without `rev`, the remote's default branch.
fn resolve(repo: &Path, rev: Option<&str>) -> Result<String, String> {
    let candidates: Vec<String> = match rev {
        None => vec!["HEAD".to_string()],
        Some(rev) => vec![
            format!("refs/tags/{rev}"),
            format!("refs/remotes/origin/{rev}"),
            rev.to_string(),
        ],
    };
    for candidate in &candidates {
        let spec = format!("{candidate}^{{commit}}");
        if let Ok(out) = git(
            Some(repo),
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                "--end-of-options",
                &spec,
            ],
            None,
        ) {
            let commit = out.trim();
            if !commit.is_empty() {
                return Ok(commit.to_string());
            }
        }
    }
    Err(match rev {
        Some(rev) => format!("no tag, branch or commit named {rev:?}"),
        None => "the repository has no commits".to_string(),
    })
}

/// Runs `git ARGS [target]` (in `dir` when given) and returns its stdout; the error is its
/// stderr.
fn git(dir: Option<&Path>, args: &[&str], target: Option<&Path>) -> Result<String, String> {
    let mut command = Command::new("git");
    if let Some(dir) = dir {
        command.arg("-C").arg(dir);
    }
    command
        .args([
            "-c",
            "protocol.ext.allow=never",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        // A server that stops sending (under 1 KB/s for a minute) ends the fetch instead of
        // hanging the command.
        .args([
            "-c",
            "http.lowSpeedLimit=1000",
            "-c",
            "http.lowSpeedTime=60",
        ])
        .args(args);
    if let Some(target) = target {
        command.arg(target);
    }
    let output = command
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "true")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(stderr.trim().to_string());
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::{split_rev, without_userinfo};

    #[test]
    fn the_revision_follows_the_last_hash() {
        assert_eq!(split_rev("file:///a#v1"), ("file:///a", Some("v1")));
        assert_eq!(split_rev("/a/b"), ("/a/b", None));
        assert_eq!(split_rev("/a#"), ("/a", None));
    }

    #[test]
    fn the_user_and_password_of_a_url_are_stripped() {
        assert_eq!(
            without_userinfo("https://user:token@example.com/a/b.git"),
            "https://example.com/a/b.git"
        );
        assert_eq!(
            without_userinfo("https://tok@en:x@example.com:8443/p?q=a@b"),
            "https://example.com:8443/p?q=a@b"
        );
        assert_eq!(
            without_userinfo("ssh://git@example.com/x"),
            "ssh://example.com/x"
        );
        for kept in [
            "https://example.com/users/@me/x",
            "git@example.com:x.git",
            "/home/me/packs/x",
            "file:///tmp/x",
        ] {
            assert_eq!(without_userinfo(kept), kept);
        }
    }
}

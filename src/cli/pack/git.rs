//! Fetching a pack with the `git` command: clone into a temporary folder beside the
//! installed packs, resolve the revision (a tag, a branch, a commit), check it out and drop
//! `.git`. The source and revision come from the user (or a lock file someone sent): they
//! are passed after `--` / `--end-of-options` so neither can be read as an option, the
//! `ext::` transport (which runs a command) is off, git never prompts (no terminal to hang
//! on) and a stalled HTTP transfer ends. What a fetch writes is bounded too
//! ([`MAX_FETCH_BYTES`]): a repository that is larger is stopped while git is still
//! writing it, instead of filling the disk before the pack's own limits are checked.

use super::super::error::CliError;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

/// Most bytes a fetch may write into its temporary folder (the clone's history and the
/// checked-out files together): four times what a pack's files may hold.
const MAX_FETCH_BYTES: u64 = 256 * 1024 * 1024;

/// Most files and folders a fetch may write: four times what a pack's files may number.
const MAX_FETCH_ENTRIES: usize = 40_000;

/// How often the folder a running git writes into is measured.
const MEASURE_EVERY: Duration = Duration::from_millis(50);

/// The folder a git command writes into and what it may hold.
#[derive(Clone, Copy)]
struct Bound<'a> {
    folder: &'a Path,
    max_bytes: u64,
    max_entries: usize,
}

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
    fetch_bounded(source, rev, within, (MAX_FETCH_BYTES, MAX_FETCH_ENTRIES))
}

/// [`fetch`], writing at most `max_bytes` in at most `max_entries` files and folders into
/// the temporary folder.
fn fetch_bounded(
    source: &str,
    rev: Option<&str>,
    within: &Path,
    (max_bytes, max_entries): (u64, usize),
) -> Result<Fetched, CliError> {
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
    let bound = Bound {
        folder: temp.path(),
        max_bytes,
        max_entries,
    };
    git(
        None,
        &["clone", "--quiet", "--no-checkout", "--", source],
        Some(&tree),
        Some(bound),
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
        Some(bound),
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
/// stderr. With a `bound`, git is stopped once its folder holds more than the bound
/// allows.
fn git(
    dir: Option<&Path>,
    args: &[&str],
    target: Option<&Path>,
    bound: Option<Bound<'_>>,
) -> Result<String, String> {
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
    let mut child = command
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "true")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run git: {e}"))?;
    // Both pipes are read while git runs, so that neither fills and stalls it.
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let status = match bound {
        Some(bound) => wait_within(&mut child, bound),
        None => child
            .wait()
            .map_err(|e| format!("cannot wait for git: {e}")),
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    if !status?.success() {
        return Err(String::from_utf8_lossy(&stderr).trim().to_string());
    }
    Ok(String::from_utf8_lossy(&stdout).into_owned())
}

/// Reads `pipe` to its end on a thread of its own.
fn drain(pipe: Option<impl std::io::Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut out = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut out);
        }
        out
    })
}

/// Waits for `child`, measuring its folder meanwhile and once it has ended; past the bound
/// it is killed (if still running) and the error says why.
fn wait_within(child: &mut Child, bound: Bound<'_>) -> Result<ExitStatus, String> {
    loop {
        let exited = match child.try_wait() {
            Ok(exited) => exited,
            Err(e) => {
                stop(child);
                return Err(format!("cannot wait for git: {e}"));
            }
        };
        // Measured after it ended too: a command quicker than one measurement is bounded
        // all the same.
        if let Some(over) = over_bound(bound) {
            if exited.is_none() {
                stop(child);
            }
            return Err(over);
        }
        if let Some(status) = exited {
            return Ok(status);
        }
        std::thread::sleep(MEASURE_EVERY);
    }
}

/// What is wrong with the folder `bound` watches, if it holds more than the bound allows:
/// more bytes (what its entries take on disk, or their length when that is more) or more
/// entries than it allows (a tree of many small or empty files takes disk
/// space and time of its own). The walk stops at the first entry past either.
fn over_bound(bound: Bound<'_>) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let mut bytes: u64 = 0;
    for (count, entry) in walkdir::WalkDir::new(bound.folder)
        .into_iter()
        .filter_map(Result::ok)
        .enumerate()
    {
        if count >= bound.max_entries {
            return Some(format!(
                "the repository has more than {} files and folders, the most a pack's fetch \
                 may write",
                bound.max_entries
            ));
        }
        if let Ok(metadata) = entry.metadata() {
            bytes = bytes.saturating_add(metadata.len().max(metadata.blocks().saturating_mul(512)));
        }
        if bytes > bound.max_bytes {
            return Some(format!(
                "the repository is larger than {}, the most a pack's fetch may write",
                shown_bytes(bound.max_bytes)
            ));
        }
    }
    None
}

/// `bytes` for a message: in MiB when it is a whole number of them.
fn shown_bytes(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// Kills git and every process it started, and waits for git. Its helpers (the remote
/// helper that downloads, index-pack) would otherwise go on writing into the folder after
/// git is gone: they are found while git is stopped (so it starts no more) and killed
/// first. git stays in the command's process group, so a Ctrl-C at the terminal still
/// stops all of them with the command.
fn stop(child: &mut Child) {
    let Ok(pid) = libc::pid_t::try_from(child.id()) else {
        let _ = child.kill();
        let _ = child.wait();
        return;
    };
    // SAFETY: kill only sends signals, to git (our child, not yet waited for, so its pid is
    // still its own) and to the processes whose parent chain leads to it.
    unsafe {
        libc::kill(pid, libc::SIGSTOP);
        for helper in descendants(pid) {
            libc::kill(helper, libc::SIGKILL);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The processes descended from `pid`, read from `/proc` (each process's parent).
fn descendants(pid: libc::pid_t) -> Vec<libc::pid_t> {
    let parents: Vec<(libc::pid_t, libc::pid_t)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let process: libc::pid_t = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // `PID (COMMAND) STATE PPID …`: the command may hold anything but the last `)`.
            let after_command = &stat[stat.rfind(')')? + 1..];
            let parent = after_command.split_whitespace().nth(1)?.parse().ok()?;
            Some((process, parent))
        })
        .collect();
    let mut found = vec![pid];
    let mut next = 0;
    while let Some(&parent) = found.get(next) {
        for (process, of) in &parents {
            // Read at different moments, a reused pid could close a loop: each once.
            if *of == parent && !found.contains(process) {
                found.push(*process);
            }
        }
        next += 1;
    }
    found.remove(0);
    found
}

#[cfg(test)]
mod tests {
    use super::{descendants, fetch_bounded, split_rev, stop, without_userinfo};
    use std::io::BufRead;
    use std::path::Path;
    use std::process::Command;

    /// Runs `git ARGS` in `dir` with no user or system configuration.
    fn git_in(dir: &Path, args: &[&str]) {
        let status = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .expect("git runs");
        assert!(status.success(), "git {args:?}");
    }

    /// A repository holding one commit of `bytes` bytes that do not compress.
    fn repository_of(dir: &Path, bytes: usize) {
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let noise: Vec<u8> = (0..bytes)
            .map(|_| {
                // xorshift: bytes zlib cannot shrink.
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state.to_le_bytes()[0]
            })
            .collect();
        git_in(dir, &["init", "--quiet"]);
        std::fs::write(dir.join("big.bin"), noise).expect("write");
        git_in(dir, &["add", "big.bin"]);
        git_in(dir, &["commit", "--quiet", "-m", "big"]);
    }

    #[test]
    fn a_fetch_that_writes_more_than_its_bound_is_stopped_and_leaves_nothing() {
        let repo = tempfile::tempdir().expect("temp dir");
        repository_of(repo.path(), 2 * 1024 * 1024);
        let within = tempfile::tempdir().expect("temp dir");
        let source = format!("file://{}", repo.path().display());
        let Err(error) = fetch_bounded(&source, None, within.path(), (512 * 1024, 1000)) else {
            panic!("the fetch is stopped");
        };
        assert!(
            error
                .to_string()
                .contains("the repository is larger than 524288 bytes"),
            "{error}"
        );
        let left: Vec<_> = std::fs::read_dir(within.path()).expect("read").collect();
        assert!(left.is_empty(), "the temporary folder is removed: {left:?}");
    }

    #[test]
    fn a_fetch_within_its_bound_checks_the_files_out() {
        let repo = tempfile::tempdir().expect("temp dir");
        repository_of(repo.path(), 64 * 1024);
        let within = tempfile::tempdir().expect("temp dir");
        let source = format!("file://{}", repo.path().display());
        let fetched = match fetch_bounded(&source, None, within.path(), (4 << 20, 1000)) {
            Ok(fetched) => fetched,
            Err(error) => panic!("the fetch is within its bound: {error}"),
        };
        let checked_out = std::fs::metadata(fetched.tree.join("big.bin")).expect("checked out");
        assert_eq!(checked_out.len(), 64 * 1024);
    }

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

    #[test]
    fn a_fetch_of_more_files_than_its_bound_is_stopped() {
        let repo = tempfile::tempdir().expect("temp dir");
        git_in(repo.path(), &["init", "--quiet"]);
        for n in 0..300 {
            std::fs::write(repo.path().join(format!("f{n}")), "").expect("write");
        }
        git_in(repo.path(), &["add", "."]);
        git_in(repo.path(), &["commit", "--quiet", "-m", "many"]);
        let within = tempfile::tempdir().expect("temp dir");
        let source = format!("file://{}", repo.path().display());
        let Err(error) = fetch_bounded(&source, None, within.path(), (4 << 20, 200)) else {
            panic!("the fetch is stopped");
        };
        assert!(
            error
                .to_string()
                .contains("the repository has more than 200 files and folders"),
            "{error}"
        );
    }

    #[test]
    fn stopping_git_kills_the_processes_it_started() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 60 & echo $!; wait"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("sh runs");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the helper's pid");
        let helper: libc::pid_t = line.trim().parse().expect("a pid");
        let parent = libc::pid_t::try_from(child.id()).expect("a pid");
        assert!(descendants(parent).contains(&helper));
        stop(&mut child);
        // Killed, then reaped by init: gone, or a zombie until then (at most 5 s).
        let gone = (0..500).any(|_| {
            let state = std::fs::read_to_string(format!("/proc/{helper}/stat"))
                .ok()
                .and_then(|stat| {
                    stat.rsplit_once(')')
                        .map(|(_, rest)| rest.trim().to_string())
                });
            let ended = state.is_none_or(|rest| rest.starts_with('Z'));
            if !ended {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            ended
        });
        assert!(gone, "the helper {helper} still runs");
    }
}

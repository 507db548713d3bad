//! Local git repositories made in temp dirs for the pack tests: files, commits, tags and
//! branches, with the `git` command (an identity of their own, no global config read).

use std::path::{Path, PathBuf};
use std::process::Command;

/// A git repository in a folder of its own.
pub struct GitRepo {
    pub path: PathBuf,
}

impl GitRepo {
    /// `git init` in `path` (created), on branch `main`.
    pub fn init(path: &Path) -> Self {
        std::fs::create_dir_all(path).expect("repo dir");
        let repo = Self {
            path: path.to_path_buf(),
        };
        repo.git(&["init", "--quiet", "--initial-branch=main"]);
        repo
    }

    /// Runs `git ARGS` in the repository; panics with git's stderr on failure.
    pub fn git(&self, args: &[&str]) -> String {
        let output = Command::new("git")
            .arg("-C")
            .arg(&self.path)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(["-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"])
            .args(args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("git runs");
        assert!(
            output.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }

    /// Writes `content` to `rel`, creating parents.
    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> &Self {
        let path = self.path.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("parents");
        std::fs::write(path, content).expect("write");
        self
    }

    /// Commits everything; returns the commit id.
    pub fn commit(&self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "--quiet", "-m", message]);
        self.git(&["rev-parse", "HEAD"])
    }

    /// Tags the current commit.
    pub fn tag(&self, name: &str) -> &Self {
        self.git(&["tag", name]);
        self
    }

    /// `file://` URL of the repository.
    pub fn url(&self) -> String {
        format!("file://{}", self.path.display())
    }
}

//! Scripted `proc.run` (`toolhost test`'s `t.proc{...}`): each entry answers the runs whose
//! argv starts with its own `argv` (the longest such entry wins), and no program ever
//! starts. A run no entry answers is refused, so a test never runs a real program by
//! accident. Scripted programs count as allowed (`proc.allowed()` lists them), since
//! nothing is executed.

use serde::Deserialize;

/// One scripted answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScriptedRun {
    /// The program and the leading arguments it answers.
    pub argv: Vec<String>,
    /// Exit code (default 0).
    #[serde(default)]
    pub code: i32,
    /// What the program "printed".
    #[serde(default)]
    pub stdout: String,
    /// What it "printed" on stderr.
    #[serde(default)]
    pub stderr: String,
    /// Answer as a run that timed out.
    #[serde(default)]
    pub timed_out: bool,
}

/// A script entry with an empty `argv` (it would answer every run); the entry's number,
/// counting from 1.
#[derive(Debug, thiserror::Error)]
#[error("entry {0} has an empty argv")]
pub(crate) struct EmptyArgv(usize);

/// Every scripted answer of one host.
#[derive(Debug, Clone, Default)]
pub(crate) struct ProcScript {
    runs: Vec<ScriptedRun>,
}

impl ProcScript {
    /// A script of `runs`; an entry with an empty `argv` is an error.
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn new(runs: Vec<ScriptedRun>) -> Result<Self, EmptyArgv> {
        if let Some(index) = runs.iter().position(|run| run.argv.is_empty()) {
            return Err(EmptyArgv(index + 1));
        }
        Ok(Self { runs })
    }

    /// The entry answering `argv`, if any.
    pub(crate) fn answer(&self, argv: &[String]) -> Option<&ScriptedRun> {
        self.runs
            .iter()
            .filter(|run| argv.starts_with(&run.argv))
            .max_by_key(|run| run.argv.len())
    }

    /// The programs it answers for.
    pub(crate) fn programs(&self) -> impl Iterator<Item = &str> {
        self.runs.iter().map(|run| run.argv[0].as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(argv: &[&str], stdout: &str) -> ScriptedRun {
        ScriptedRun {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            code: 0,
            stdout: stdout.to_string(),
            stderr: String::new(),
            timed_out: false,
        }
    }

    #[test]
    fn the_longest_matching_prefix_answers() {
        let script =
            ProcScript::new(vec![run(&["git"], "any"), run(&["git", "status"], "clean")]).unwrap();
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            script
                .answer(&argv(&["git", "status", "-s"]))
                .unwrap()
                .stdout,
            "clean"
        );
        assert_eq!(script.answer(&argv(&["git", "log"])).unwrap().stdout, "any");
        assert!(script.answer(&argv(&["ls"])).is_none());
    }
}

//! The examples run: `cargo test` builds them; these run the binaries it built.

use std::path::PathBuf;
use std::process::Command;

/// `target/<profile>/examples/NAME`, next to this test's own `deps/` directory.
fn example(name: &str) -> Command {
    let exe = std::env::current_exe().expect("test binary path");
    let dir: PathBuf = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>")
        .join("examples");
    let mut command = Command::new(dir.join(name));
    // Offline: the scripted model, whatever the machine's environment says.
    command
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("AGENT_PROMPT")
        .env_remove("TOOLHOST_CONFIG")
        // The shipped library would add its tools to every listing the tests read.
        .env("TOOLHOST_NO_LIBRARY", "1");
    command
}

#[test]
fn the_agent_example_answers_with_results_from_the_pipeline() {
    let output = example("agent").output().expect("the agent example runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("assistant: 2^10 is 1024 and 6*7 is 42."),
        "{stdout}"
    );
}

#[test]
fn the_embed_example_runs_its_batch() {
    let output = example("embed")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the embed example runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("42"), "{stdout}");
    assert!(stdout.contains("writes go to scratch/"), "{stdout}");
}

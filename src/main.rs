//! The `toolhost` binary: see `toolhost --help` and the README.

mod cli;

fn main() -> std::process::ExitCode {
    cli::run()
}

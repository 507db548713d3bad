//! The `toolhost` binary: see `toolhost --help` and the README.

fn main() -> std::process::ExitCode {
    toolhost::cli::run()
}

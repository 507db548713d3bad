//! `toolhost resources [--json]`, `read URI`, `prompts [--json]`, `prompt NAME [ARGS]`.

use super::Cli;
use super::error::{CliError, io};
use super::list::print_table;
use crate::{CallContext, ContentError, Host, PromptInfo, ResourceInfo, Verdict};
use serde_json::Value;
use std::future::Future;
use std::process::ExitCode;

/// Prints the resources and templates, by URI.
pub(super) fn resources(host: &Host, as_json: bool) -> ExitCode {
    let resources = host.resources();
    if as_json {
        outln!("{}", serde_json::to_string(&resources).unwrap_or_default());
        return ExitCode::SUCCESS;
    }
    let rows: Vec<[String; 4]> = resources
        .iter()
        .map(|r| {
            [
                r.uri.clone(),
                r.name.clone(),
                r.mime_type.clone().unwrap_or_default(),
                r.toolset.clone(),
            ]
        })
        .collect();
    print_table(&["URI", "NAME", "MIME TYPE", "TOOLSET"], &rows);
    ExitCode::SUCCESS
}

/// Prints the prompts, by name.
pub(super) fn prompts(host: &Host, as_json: bool) -> ExitCode {
    let prompts = host.prompts();
    if as_json {
        outln!("{}", serde_json::to_string(&prompts).unwrap_or_default());
        return ExitCode::SUCCESS;
    }
    let rows: Vec<[String; 3]> = prompts
        .iter()
        .map(|p| {
            let arguments: Vec<String> = p
                .arguments
                .iter()
                .map(|a| match a.required {
                    true => a.name.clone(),
                    false => format!("{}?", a.name),
                })
                .collect();
            [p.name.clone(), arguments.join(", "), p.toolset.clone()]
        })
        .collect();
    print_table(&["NAME", "ARGUMENTS", "TOOLSET"], &rows);
    ExitCode::SUCCESS
}

/// Reads `uri` and prints its contents as a JSON array (`{uri, mimeType?, text|blob}`);
/// exit 1 with the error on stderr when it fails.
pub(super) fn read(cli: &Cli, uri: &str) -> Result<ExitCode, CliError> {
    run_one(cli, |host, ctx| async move {
        let contents = host.read_resource(uri, &ctx).await?;
        Ok(serde_json::to_value(contents).unwrap_or_default())
    })
}

/// Renders the prompt `name` with `args` (a JSON object) and prints it as JSON
/// (`{description?, messages}`); exit 1 with the error on stderr when it fails.
pub(super) fn prompt(cli: &Cli, name: &str, args: Option<&str>) -> Result<ExitCode, CliError> {
    let args: Value = match args {
        None => Value::Object(Default::default()),
        Some(text) => serde_json::from_str(text).map_err(CliError::Args)?,
    };
    run_one(cli, |host, ctx| async move {
        let rendered = host.get_prompt(name, args, &ctx).await?;
        Ok(serde_json::to_value(rendered).unwrap_or_default())
    })
}

fn run_one<'a, F, Fut>(cli: &Cli, work: F) -> Result<ExitCode, CliError>
where
    F: FnOnce(Host, CallContext) -> Fut + 'a,
    Fut: Future<Output = Result<Value, ContentError>> + 'a,
{
    let host = super::build(cli, None, super::ONE_SHOT_VMS)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(io("cannot start the async runtime"))?;
    let ctx = CallContext {
        scope: cli.scope.clone(),
        ..CallContext::default()
    };
    let outcome = runtime.block_on(work(host.clone(), ctx));
    drop(runtime);
    super::leave_for_exit(host);
    Ok(match outcome {
        Ok(value) => {
            outln!("{value}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("toolhost: {}: {error}", error.kind());
            ExitCode::from(1)
        }
    })
}

/// The host's resources and prompts, to report them by the file that registered them.
pub(super) struct Content {
    resources: Vec<ResourceInfo>,
    prompts: Vec<PromptInfo>,
}

impl Content {
    /// What `host` serves now.
    pub(super) fn of_host(host: &Host) -> Self {
        Self {
            resources: host.resources(),
            prompts: host.prompts(),
        }
    }

    /// The URIs and prompt names `verdict`'s file registered.
    pub(super) fn of(&self, verdict: &Verdict) -> (Vec<&str>, Vec<&str>) {
        let here = |file: &Option<std::path::PathBuf>| file.as_deref() == Some(&verdict.path);
        (
            self.resources
                .iter()
                .filter(|r| here(&r.file))
                .map(|r| r.uri.as_str())
                .collect(),
            self.prompts
                .iter()
                .filter(|p| here(&p.file))
                .map(|p| p.name.as_str())
                .collect(),
        )
    }

    /// How many resources and prompts there are.
    pub(super) fn counts(&self) -> (usize, usize) {
        (self.resources.len(), self.prompts.len())
    }
}

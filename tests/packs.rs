//! Tool packs (docs/packs.md): `toolhost pack add|update|remove|list|verify` against local
//! git repositories made in temp dirs (tags, branches, commits, `file://` URLs and plain
//! paths), the lock file, refusing a pack that does not match it at load while every other
//! tool keeps working, and hostile packs (names that are paths, links out of the pack,
//! huge files, bad manifests).

mod common;

use common::git_repo::GitRepo;
use common::{Fixture, simple_tool};
use serde_json::Value;
use std::path::PathBuf;

/// A project (tools-lua/ with a `hello` tool and a commented toolhost.toml) and a pack
/// repository `weather` beside it.
struct Setup {
    project: Fixture,
    repo: GitRepo,
}

const CONFIG: &str = "# the project's config\n[runtime]\nvms = 1 # one VM\n";

fn manifest(capabilities: &str) -> String {
    format!(
        "name = \"weather\"\nversion = \"1.0.0\"\ndescription = \"Weather tools\"\n\
         capabilities = [{capabilities}]\n"
    )
}

impl Setup {
    fn new() -> Self {
        let project = Fixture::new();
        project.tool("hello.lua", &simple_tool("hello", "demo", "hi"));
        project.write("toolhost.toml", CONFIG);
        let repo = GitRepo::init(&project.root().join("repos/weather"));
        repo.write("pack.toml", manifest(""))
            .write("forecast.lua", simple_tool("forecast", "weather", "sunny"));
        repo.commit("v1");
        repo.tag("v1.0.0");
        Self { project, repo }
    }

    /// `toolhost ARGS` in the project, git reading no user configuration, stdin not a
    /// terminal.
    fn toolhost(&self, args: &[&str]) -> assert_cmd::assert::Assert {
        self.project
            .toolhost()
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .args(args)
            .write_stdin("")
            .assert()
    }

    fn add(&self, spec: &str) -> assert_cmd::assert::Assert {
        self.toolhost(&["pack", "add", spec, "--yes"])
    }

    /// Appends `[plugins.ID] dir = "DIR"` to the project's configuration.
    fn add_plugin(&self, id: &str, dir: &str) {
        let config = self.read("toolhost.toml");
        self.project.write(
            "toolhost.toml",
            format!("{config}\n[plugins.{id}]\ndir = \"{dir}\"\n"),
        );
    }

    /// Plants `tool.lua` (tool `planted`) in the installed pack, where discovery of the
    /// folder holding the packs finds it.
    fn plant_tool_lua(&self) {
        self.project.write(
            "packs/weather/tool.lua",
            simple_tool("planted", "weather", "evil"),
        );
    }

    /// Changes the installed pack's `forecast.lua` (the lock no longer matches it).
    fn tamper_forecast(&self) {
        std::fs::write(
            self.pack_file("forecast.lua"),
            simple_tool("forecast", "weather", "evil"),
        )
        .expect("write");
    }

    fn pack_file(&self, rel: &str) -> PathBuf {
        self.project.root().join("packs/weather").join(rel)
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.project.root().join(rel)).unwrap_or_default()
    }

    /// `toolhost list --json`, by tool name.
    fn tools(&self) -> Vec<Value> {
        let out = self.toolhost(&["list", "--json"]).success();
        serde_json::from_slice::<Vec<Value>>(&out.get_output().stdout).expect("json")
    }

    fn tool_names(&self) -> Vec<String> {
        self.tools()
            .iter()
            .map(|t| t["name"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    fn stdout(assert: &assert_cmd::assert::Assert) -> String {
        String::from_utf8_lossy(&assert.get_output().stdout).into_owned()
    }

    fn stderr(assert: &assert_cmd::assert::Assert) -> String {
        String::from_utf8_lossy(&assert.get_output().stderr).into_owned()
    }
}

#[test]
fn add_at_a_tag_installs_the_pack_and_its_tools_load() {
    let setup = Setup::new();
    let commit = setup.repo.git(&["rev-parse", "v1.0.0"]);
    setup
        .repo
        .write("forecast.lua", simple_tool("forecast", "weather", "rain"));
    setup.repo.commit("later");
    setup.add(&format!("{}#v1.0.0", setup.repo.url())).success();
    let out = setup.toolhost(&["call", "forecast"]).success();
    assert_eq!(Setup::stdout(&out).trim(), "sunny");
    assert!(setup.read("toolhost.lock").contains(&commit));
    assert_eq!(setup.tool_names(), ["forecast", "hello"]);
}

#[test]
fn add_at_a_branch_takes_the_branch_head() {
    let setup = Setup::new();
    setup.repo.git(&["checkout", "--quiet", "-b", "beta"]);
    setup
        .repo
        .write("forecast.lua", simple_tool("forecast", "weather", "beta"));
    let head = setup.repo.commit("beta");
    setup.repo.git(&["checkout", "--quiet", "main"]);
    setup.add(&format!("{}#beta", setup.repo.url())).success();
    let out = setup.toolhost(&["call", "forecast"]).success();
    assert_eq!(Setup::stdout(&out).trim(), "beta");
    assert!(setup.read("toolhost.lock").contains(&head));
}

#[test]
fn add_at_a_commit_from_a_plain_path_takes_that_commit() {
    let setup = Setup::new();
    let first = setup.repo.git(&["rev-parse", "HEAD"]);
    setup
        .repo
        .write("forecast.lua", simple_tool("forecast", "weather", "rain"));
    setup.repo.commit("later");
    setup.add(&format!("repos/weather#{first}")).success();
    let out = setup.toolhost(&["call", "forecast"]).success();
    assert_eq!(Setup::stdout(&out).trim(), "sunny");
    // A plain path is recorded absolute, so `update` works from anywhere.
    let lock = setup.read("toolhost.lock");
    let source = setup.repo.path.canonicalize().unwrap();
    assert!(
        lock.contains(&format!("source = \"{}\"", source.display())),
        "{lock}"
    );
}

#[test]
fn add_writes_the_plugin_entry_keeping_the_configs_comments() {
    let setup = Setup::new();
    setup.add(&setup.repo.url()).success();
    let config = setup.read("toolhost.toml");
    assert!(config.starts_with(CONFIG), "{config}");
    assert!(
        config.contains(
            "[plugins.weather]\ndir = \"packs/weather\"\ncapabilities = [\"json\", \"log\", \"time\"]"
        ),
        "{config}"
    );
    assert!(!setup.pack_file(".git").exists());
}

#[test]
fn the_lock_file_is_the_same_for_the_same_pack() {
    let setup = Setup::new();
    setup.add(&setup.repo.url()).success();
    let first = setup.read("toolhost.lock");
    assert!(first.contains("\"forecast.lua\" = \""), "{first}");
    assert!(
        first.find("\"forecast.lua\"") < first.find("\"pack.toml\""),
        "{first}"
    );
    setup.toolhost(&["pack", "remove", "weather"]).success();
    setup.add(&setup.repo.url()).success();
    assert_eq!(setup.read("toolhost.lock"), first);
}

#[test]
fn verify_names_a_tampered_file() {
    let setup = Setup::new();
    setup.add(&setup.repo.url()).success();
    setup.toolhost(&["pack", "verify"]).success();
    setup.tamper_forecast();
    let out = setup.toolhost(&["pack", "verify"]).code(1);
    assert!(
        Setup::stdout(&out).contains("weather: packs/weather/forecast.lua changed"),
        "{}",
        Setup::stdout(&out)
    );
}

#[test]
fn verify_names_an_added_file() {
    let setup = Setup::new();
    setup.add(&setup.repo.url()).success();
    std::fs::write(
        setup.pack_file("extra.lua"),
        simple_tool("extra", "weather", "x"),
    )
    .unwrap();
    let out = setup.toolhost(&["pack", "verify"]).code(1);
    assert!(Setup::stdout(&out).contains("packs/weather/extra.lua added"));
}

#[test]
fn verify_names_a_removed_file() {
    let setup = Setup::new();
    setup.add(&setup.repo.url()).success();
    std::fs::remove_file(setup.pack_file("forecast.lua")).unwrap();
    let out = setup.toolhost(&["pack", "verify"]).code(1);
    assert!(Setup::stdout(&out).contains("packs/weather/forecast.lua removed"));
}

#[test]
fn a_tampered_pack_is_refused_at_load_and_other_tools_keep_working() {
    let setup = Setup::new();
    setup.add(&setup.repo.url()).success();
    setup.tamper_forecast();
    let list = setup.toolhost(&["list", "--json"]).success();
    assert!(
        Setup::stderr(&list).contains(
            "pack 'weather' is refused: its files do not match toolhost.lock (forecast.lua changed"
        ),
        "{}",
        Setup::stderr(&list)
    );
    assert_eq!(setup.tool_names(), ["hello"]);
    let call = setup.toolhost(&["call", "forecast"]).code(1);
    assert!(Setup::stdout(&call).contains("unknown_tool"));
    setup.toolhost(&["check"]).code(1);
}

#[test]
fn update_to_a_new_tag_installs_it() {
    let setup = Setup::new();
    setup.add(&format!("{}#v1.0.0", setup.repo.url())).success();
    setup
        .repo
        .write("pack.toml", manifest("").replace("1.0.0", "2.0.0"))
        .write("forecast.lua", simple_tool("forecast", "weather", "v2"));
    let v2 = setup.repo.commit("v2");
    setup.repo.tag("v2.0.0");
    // The recorded tag has not moved.
    let same = setup.toolhost(&["pack", "update"]).success();
    assert!(Setup::stdout(&same).contains("weather: up to date"));
    setup
        .toolhost(&["pack", "update", "weather#v2.0.0"])
        .success();
    let out = setup.toolhost(&["call", "forecast"]).success();
    assert_eq!(Setup::stdout(&out).trim(), "v2");
    let lock = setup.read("toolhost.lock");
    assert!(
        lock.contains(&v2) && lock.contains("ref = \"v2.0.0\""),
        "{lock}"
    );
    setup.toolhost(&["pack", "verify"]).success();
}

#[test]
fn update_follows_the_recorded_branch() {
    let setup = Setup::new();
    setup.add(&format!("{}#main", setup.repo.url())).success();
    setup
        .repo
        .write("forecast.lua", simple_tool("forecast", "weather", "newer"));
    setup.repo.commit("newer");
    setup.toolhost(&["pack", "update", "weather"]).success();
    let out = setup.toolhost(&["call", "forecast"]).success();
    assert_eq!(Setup::stdout(&out).trim(), "newer");
}

#[test]
fn update_reinstalls_a_tampered_pack() {
    let setup = Setup::new();
    setup.add(&setup.repo.url()).success();
    std::fs::write(setup.pack_file("forecast.lua"), "-- changed").unwrap();
    setup.toolhost(&["pack", "update", "weather"]).success();
    setup.toolhost(&["pack", "verify"]).success();
}

#[test]
fn remove_deletes_the_folder_the_plugin_entry_and_the_lock_entry() {
    let setup = Setup::new();
    setup.add(&setup.repo.url()).success();
    setup.toolhost(&["pack", "remove", "weather"]).success();
    assert!(!setup.pack_file("").exists());
    assert_eq!(setup.read("toolhost.toml").trim_end(), CONFIG.trim_end());
    assert!(!setup.read("toolhost.lock").contains("weather"));
    assert_eq!(setup.tool_names(), ["hello"]);
}

#[test]
fn list_shows_each_pack_with_its_version_and_commit() {
    let setup = Setup::new();
    setup.add(&format!("{}#v1.0.0", setup.repo.url())).success();
    let commit = setup.repo.git(&["rev-parse", "v1.0.0"]);
    let out = setup.toolhost(&["pack", "list"]).success();
    let line = Setup::stdout(&out)
        .lines()
        .find(|l| l.starts_with("weather"))
        .map(str::to_string)
        .unwrap_or_default();
    assert!(line.contains("1.0.0") && line.contains("v1.0.0"), "{line}");
    assert!(line.contains(&commit[..12]), "{line}");
}

#[test]
fn a_pack_asking_for_proc_is_shown_and_refused_without_yes_off_a_terminal() {
    let setup = Setup::new();
    setup.repo.write("pack.toml", manifest("\"proc\""));
    setup.repo.commit("proc");
    let out = setup.toolhost(&["pack", "add", &setup.repo.url()]).code(2);
    assert!(Setup::stdout(&out).contains("proc   run the programs listed in [sandbox] commands"));
    assert!(
        Setup::stderr(&out).contains("pack weather asks for proc; not granted"),
        "{}",
        Setup::stderr(&out)
    );
    assert!(!setup.project.root().join("packs").exists());
    assert_eq!(setup.read("toolhost.toml"), CONFIG);
    assert!(!setup.project.root().join("toolhost.lock").exists());
    setup.add(&setup.repo.url()).success();
    assert!(setup.read("toolhost.toml").contains("\"proc\"]"));
}

#[test]
fn a_pack_tool_named_like_a_builtin_is_rejected_by_the_shadowing_rule() {
    let setup = Setup::new();
    setup
        .repo
        .write("hello.lua", simple_tool("hello", "weather", "pack's hello"));
    setup.repo.commit("collide");
    setup.add(&setup.repo.url()).success();
    let out = setup.toolhost(&["discover", "--json"]).success();
    let verdicts: Vec<Value> = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let pack_hello = verdicts
        .iter()
        .find(|v| {
            v["path"]
                .as_str()
                .unwrap_or("")
                .ends_with("packs/weather/hello.lua")
        })
        .expect("the pack's hello.lua");
    let error = pack_hello["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("hello") && error.contains("override"),
        "{error}"
    );
    let call = setup.toolhost(&["call", "hello"]).success();
    assert_eq!(Setup::stdout(&call).trim(), "hi");
    assert!(setup.tool_names().contains(&"forecast".to_string()));
}

#[test]
fn pack_names_that_are_paths_are_refused() {
    let setup = Setup::new();
    for name in ["..", "../x", "a/b"] {
        let out = setup
            .toolhost(&["pack", "add", &setup.repo.url(), "--name", name, "--yes"])
            .code(2);
        assert!(
            Setup::stderr(&out).contains("--name: the pack name"),
            "{name}"
        );
    }
    setup
        .repo
        .write("pack.toml", "name = \"../evil\"\nversion = \"1.0.0\"\n");
    setup.repo.commit("evil");
    let out = setup.add(&setup.repo.url()).code(2);
    assert!(
        Setup::stderr(&out).contains("pack.toml: name:"),
        "{}",
        Setup::stderr(&out)
    );
    assert!(!setup.project.root().join("evil").exists());
    setup.toolhost(&["pack", "remove", "../x"]).code(2);
}

#[test]
fn a_symlink_pointing_out_of_the_pack_is_refused() {
    let setup = Setup::new();
    std::os::unix::fs::symlink("/etc/passwd", setup.repo.path.join("leak.lua")).unwrap();
    setup.repo.commit("link");
    let out = setup.add(&setup.repo.url()).code(2);
    assert!(
        Setup::stderr(&out).contains("leak.lua: a symbolic link (to /etc/passwd)"),
        "{}",
        Setup::stderr(&out)
    );
    assert!(!setup.pack_file("").exists());
}

#[test]
fn a_symlink_added_after_install_refuses_the_pack_at_load() {
    let setup = Setup::new();
    setup.add(&setup.repo.url()).success();
    let outside = setup
        .project
        .write("outside.lua", simple_tool("outside", "x", "x"));
    std::os::unix::fs::symlink(outside, setup.pack_file("outside.lua")).unwrap();
    assert_eq!(setup.tool_names(), ["hello"]);
    let out = setup.toolhost(&["pack", "verify"]).code(1);
    assert!(Setup::stdout(&out).contains("a symbolic link"));
}

#[test]
fn a_huge_file_is_refused() {
    let setup = Setup::new();
    setup
        .repo
        .write("data.bin", vec![b'x'; 16 * 1024 * 1024 + 1]);
    setup.repo.commit("huge");
    let out = setup.add(&setup.repo.url()).code(2);
    assert!(
        Setup::stderr(&out).contains("data.bin: cannot read: larger than 16 MiB"),
        "{}",
        Setup::stderr(&out)
    );
}

#[test]
fn a_manifest_with_bad_types_is_refused_naming_the_key() {
    let setup = Setup::new();
    setup.repo.write(
        "pack.toml",
        "name = \"weather\"\nversion = \"1.0.0\"\nrequires_env = \"KEY\"\n",
    );
    setup.repo.commit("bad");
    let out = setup.add(&setup.repo.url()).code(2);
    let stderr = Setup::stderr(&out);
    assert!(
        stderr.contains("pack.toml: line 3") && stderr.contains("requires_env"),
        "{stderr}"
    );
}

#[test]
fn a_manifest_with_an_unknown_key_is_refused_naming_it() {
    let setup = Setup::new();
    setup.repo.write(
        "pack.toml",
        "name = \"weather\"\nversion = \"1.0.0\"\npermissions = []\n",
    );
    setup.repo.commit("unknown key");
    let out = setup.add(&setup.repo.url()).code(2);
    let stderr = Setup::stderr(&out);
    assert!(
        stderr.contains("pack.toml: line 3") && stderr.contains("permissions"),
        "{stderr}"
    );
}

#[test]
fn a_pack_needing_a_newer_toolhost_is_refused_at_load() {
    let setup = Setup::new();
    setup.repo.write(
        "pack.toml",
        format!("{}min_toolhost = \"999.0.0\"\n", manifest("")),
    );
    setup.repo.commit("newer");
    setup.add(&setup.repo.url()).success();
    let list = setup.toolhost(&["list"]).success();
    assert!(
        Setup::stderr(&list).contains("pack 'weather' needs toolhost 999.0.0 or newer"),
        "{}",
        Setup::stderr(&list)
    );
    assert_eq!(setup.tool_names(), ["hello"]);
}

#[test]
fn a_packs_required_variable_unset_makes_its_tools_unavailable() {
    let setup = Setup::new();
    setup.repo.write(
        "pack.toml",
        format!("{}requires_env = [\"WEATHER_TEST_KEY\"]\n", manifest("")),
    );
    setup.repo.commit("env");
    let out = setup.add(&setup.repo.url()).success();
    assert!(Setup::stdout(&out).contains("requires environment variables: WEATHER_TEST_KEY"));
    let tools = setup.tools();
    let forecast = tools
        .iter()
        .find(|t| t["name"] == "forecast")
        .expect("forecast");
    assert_eq!(forecast["available"], false);
    assert_eq!(
        forecast["unavailable_reason"],
        "environment variable WEATHER_TEST_KEY is not set"
    );
    let call = setup
        .project
        .toolhost()
        .env("WEATHER_TEST_KEY", "k")
        .args(["call", "forecast"])
        .assert()
        .success();
    assert_eq!(Setup::stdout(&call).trim(), "sunny");
}

#[test]
fn toolhost_test_runs_a_packs_tests_with_the_packs_grants() {
    let setup = Setup::new();
    setup.repo.write(
        "forecast_test.lua",
        "test(\"sunny\", function(t) t.eq(t.call(\"forecast\", {}), \"sunny\") end)\n\
         test(\"no fs\", function(t) fs.read(\"x\") end)\n",
    );
    setup.repo.commit("tests");
    setup.add(&setup.repo.url()).success();
    let out = setup.toolhost(&["test", "packs/weather"]).code(1);
    let stdout = Setup::stdout(&out);
    assert!(stdout.contains("ok    sunny"), "{stdout}");
    assert!(stdout.contains("'fs' is not granted"), "{stdout}");
    assert!(stdout.contains("1 passed, 1 failed"), "{stdout}");
}

#[test]
fn a_source_that_looks_like_an_option_is_refused() {
    let setup = Setup::new();
    let out = setup
        .toolhost(&["pack", "add", "--yes", "--", "--upload-pack=touch pwned"])
        .code(2);
    assert!(Setup::stderr(&out).contains("is not a git URL or path"));
    assert!(!setup.project.root().join("pwned").exists());
}

#[test]
fn a_lock_entry_whose_name_is_a_path_is_refused() {
    let setup = Setup::new();
    setup.project.write(
        "toolhost.lock",
        "version = 1\n[packs.\"../x\"]\nsource = \"s\"\ncommit = \"c\"\nfiles = {}\n",
    );
    let out = setup.toolhost(&["pack", "verify"]).code(2);
    assert!(
        Setup::stderr(&out).contains("packs.../x: the pack name"),
        "{}",
        Setup::stderr(&out)
    );
}

#[test]
fn update_asks_before_granting_a_capability_the_new_version_wants() {
    let setup = Setup::new();
    setup.add(&setup.repo.url()).success();
    let lock_before = setup.read("toolhost.lock");
    setup.repo.write("pack.toml", manifest("\"fs\""));
    setup.repo.commit("wants fs");
    let out = setup.toolhost(&["pack", "update", "weather"]).code(2);
    assert!(Setup::stderr(&out).contains("pack weather asks for fs; not granted"));
    assert_eq!(setup.read("toolhost.lock"), lock_before);
    assert!(!setup.read("toolhost.toml").contains("\"fs\""));
    setup.toolhost(&["pack", "verify"]).success();
    setup
        .toolhost(&["pack", "update", "weather", "--yes"])
        .success();
    assert!(setup.read("toolhost.toml").contains("\"fs\"]"));
}

#[test]
fn a_hand_configured_pack_folder_without_a_lock_entry_still_obeys_its_manifest() {
    let setup = Setup::new();
    setup.project.write(
        "mine/pack.toml",
        format!("{}min_toolhost = \"999.0.0\"\n", manifest("")),
    );
    setup
        .project
        .write("mine/forecast.lua", simple_tool("forecast", "weather", "x"));
    setup.project.write(
        "toolhost.toml",
        format!("{CONFIG}[plugins.mine]\ndir = \"mine\"\n"),
    );
    let list = setup.toolhost(&["list"]).success();
    assert!(
        Setup::stderr(&list)
            .contains("pack 'mine' is refused: pack 'weather' needs toolhost 999.0.0")
    );
    assert_eq!(setup.tool_names(), ["hello"]);
}

#[test]
fn add_without_a_configuration_file_creates_one() {
    let setup = Setup::new();
    std::fs::remove_file(setup.project.root().join("toolhost.toml")).unwrap();
    setup.add(&setup.repo.url()).success();
    let config = setup.read("toolhost.toml");
    assert!(config.starts_with("[plugins.weather]\n"), "{config}");
    assert_eq!(setup.tool_names(), ["forecast", "hello"]);
}

#[test]
fn the_ext_transport_which_runs_commands_is_off() {
    let setup = Setup::new();
    let marker = setup.project.root().join("pwned");
    let source = format!("ext::touch {}", marker.display());
    setup.add(&source).code(2);
    assert!(!marker.exists());
}

#[test]
fn a_revision_that_looks_like_an_option_is_refused() {
    let setup = Setup::new();
    let out = setup
        .add(&format!("{}#--output=x", setup.repo.url()))
        .code(2);
    assert!(Setup::stderr(&out).contains("is not a tag, branch or commit"));
    let out = setup
        .add(&format!("{}#no-such-tag", setup.repo.url()))
        .code(2);
    assert!(
        Setup::stderr(&out).contains("no tag, branch or commit named \"no-such-tag\""),
        "{}",
        Setup::stderr(&out)
    );
    assert!(!setup.project.root().join("toolhost.lock").exists());
}

#[test]
fn the_tests_of_a_refused_pack_fail_with_the_refusal() {
    let setup = Setup::new();
    setup.repo.write(
        "forecast_test.lua",
        "test(\"sunny\", function(t) t.eq(t.call(\"forecast\", {}), \"sunny\") end)\n",
    );
    setup.repo.commit("tests");
    setup.add(&setup.repo.url()).success();
    let tampered = format!(
        "-- one more line\n{}",
        simple_tool("forecast", "weather", "sunny")
    );
    std::fs::write(setup.pack_file("forecast.lua"), tampered).unwrap();
    let out = setup.toolhost(&["test", "packs/weather"]).code(1);
    let stdout = Setup::stdout(&out);
    assert!(stdout.contains("pack 'weather' is refused"), "{stdout}");
}

#[test]
fn a_folder_that_is_not_a_repository_is_copied_and_updated_from() {
    let setup = Setup::new();
    setup.project.write("plain/pack.toml", manifest(""));
    setup.project.write(
        "plain/forecast.lua",
        simple_tool("forecast", "weather", "plain"),
    );
    setup.add("plain").success();
    let out = setup.toolhost(&["call", "forecast"]).success();
    assert_eq!(Setup::stdout(&out).trim(), "plain");
    assert!(!setup.read("toolhost.lock").contains("commit ="));
    setup.toolhost(&["pack", "verify"]).success();
    setup.project.write(
        "plain/forecast.lua",
        simple_tool("forecast", "weather", "edited"),
    );
    setup.toolhost(&["pack", "update", "weather"]).success();
    let out = setup.toolhost(&["call", "forecast"]).success();
    assert_eq!(Setup::stdout(&out).trim(), "edited");
    let out = setup
        .toolhost(&["pack", "add", "plain#v1", "--name", "other", "--yes"])
        .code(2);
    assert!(Setup::stderr(&out).contains("has no revision"));
}

#[test]
fn a_reload_after_tampering_drops_the_packs_tools_and_keeps_the_others() {
    let setup = Setup::new();
    setup.add(&setup.repo.url()).success();
    let host = toolhost::Host::builder()
        .tools_dir(setup.project.tools())
        .cache_dir(setup.project.cache())
        .store_file(setup.project.store_file())
        .config_file(setup.project.root().join("toolhost.toml"))
        .build()
        .expect("host builds");
    assert_eq!(common::names(&host, None), ["forecast", "hello"]);
    setup.tamper_forecast();
    let event = host.reload();
    assert_eq!(event.removed, ["forecast"]);
    assert!(
        event
            .errors
            .iter()
            .any(|e| e.message.contains("pack 'weather' is refused")),
        "{:?}",
        event.errors
    );
    assert_eq!(common::names(&host, None), ["hello"]);
}

/// `toolhost pack add URL` with stdin a terminal on which `answer` was typed.
fn add_answering_on_a_terminal(setup: &Setup, answer: &str) -> std::process::Output {
    let (_master, slave) = common::tty::terminal_with_input(answer);
    std::process::Command::new(assert_cmd::cargo::cargo_bin!("toolhost"))
        .current_dir(setup.project.root())
        .env_remove("TOOLHOST_CONFIG")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args(["pack", "add", &setup.repo.url()])
        .stdin(std::process::Stdio::from(slave))
        .output()
        .expect("toolhost runs")
}

#[test]
fn on_a_terminal_yes_grants_the_capabilities() {
    let setup = Setup::new();
    setup.repo.write("pack.toml", manifest("\"proc\""));
    setup.repo.commit("proc");
    let out = add_answering_on_a_terminal(&setup, "y\n");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("Grant proc to pack weather? [y/N]"),
        "{stdout}"
    );
    assert!(setup.read("toolhost.toml").contains("\"proc\"]"));
}

#[test]
fn on_a_terminal_anything_but_yes_grants_nothing() {
    let setup = Setup::new();
    setup.repo.write("pack.toml", manifest("\"proc\""));
    setup.repo.commit("proc");
    let out = add_answering_on_a_terminal(&setup, "n\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("proc not granted; nothing was changed"));
    assert_eq!(setup.read("toolhost.toml"), CONFIG);
    assert!(!setup.project.root().join("packs").exists());
}

#[test]
fn add_keeps_the_configs_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let setup = Setup::new();
    let config = setup.project.root().join("toolhost.toml");
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).unwrap();
    setup.add(&setup.repo.url()).success();
    let mode = std::fs::metadata(&config).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn pack_commands_do_not_write_through_links_at_the_temporary_file_names() {
    let setup = Setup::new();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("target.txt");
    std::fs::write(&target, "precious\n").unwrap();
    for name in ["toolhost.lock.tmp", "toolhost.toml.tmp"] {
        std::os::unix::fs::symlink(&target, setup.project.root().join(name)).unwrap();
    }
    setup.add(&setup.repo.url()).success();
    setup.toolhost(&["pack", "remove", "weather"]).success();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious\n");
    for name in ["toolhost.lock", "toolhost.toml"] {
        let meta = std::fs::symlink_metadata(setup.project.root().join(name)).unwrap();
        assert!(meta.file_type().is_file(), "{name} is not a regular file");
    }
}

#[test]
fn add_ends_the_config_with_a_newline() {
    let setup = Setup::new();
    setup.add(&setup.repo.url()).success();
    assert!(setup.read("toolhost.toml").ends_with("]\n"));
}

#[test]
fn control_characters_in_a_packs_description_reach_the_terminal_escaped() {
    let setup = Setup::new();
    setup.repo.write(
        "pack.toml",
        manifest("\"proc\"").replace("Weather tools", "Weather\\u001b[2K\\rtools"),
    );
    setup.repo.commit("escapes");
    let out = setup.add(&setup.repo.url()).success();
    let stdout = Setup::stdout(&out);
    assert!(!stdout.contains(['\u{1b}', '\r']), "{stdout:?}");
    assert!(stdout.contains("Weather\\u{1b}[2K\\rtools"), "{stdout}");
}

#[test]
fn control_characters_in_the_lock_reach_pack_list_escaped() {
    let setup = Setup::new();
    setup.add(&setup.repo.url()).success();
    let lock = setup.read("toolhost.lock");
    let source = format!("source = \"{}\"", setup.repo.url());
    assert!(lock.contains(&source), "{lock}");
    setup.project.write(
        "toolhost.lock",
        lock.replace(
            &source,
            "source = \"evil\\u001b[8mhidden\"\nref = \"r\\u0007\"",
        ),
    );
    let out = setup.toolhost(&["pack", "list"]).success();
    let stdout = Setup::stdout(&out);
    assert!(!stdout.contains(['\u{1b}', '\u{7}']), "{stdout:?}");
    assert!(stdout.contains("evil\\u{1b}[8mhidden"), "{stdout}");
}

#[test]
fn renaming_the_plugin_of_a_tampered_pack_does_not_skip_the_lock() {
    let setup = Setup::new();
    setup.add(&setup.repo.url()).success();
    let config = setup.read("toolhost.toml");
    assert!(config.contains("[plugins.weather]"), "{config}");
    setup.project.write(
        "toolhost.toml",
        config.replace("[plugins.weather]", "[plugins.weather2]"),
    );
    setup.project.write(
        "packs/weather/planted.lua",
        simple_tool("planted", "weather", "evil"),
    );
    let list = setup.toolhost(&["list"]).success();
    assert!(
        Setup::stderr(&list).contains("pack 'weather2' is refused: its files do not match"),
        "{}",
        Setup::stderr(&list)
    );
    assert_eq!(setup.tool_names(), ["hello"]);
}

/// A host over the project, as `toolhost serve --watch` makes it.
fn project_host(setup: &Setup) -> toolhost::Host {
    toolhost::Host::builder()
        .tools_dir(setup.project.tools())
        .cache_dir(setup.project.cache())
        .store_file(setup.project.store_file())
        .config_file(setup.project.root().join("toolhost.toml"))
        .build()
        .expect("host builds")
}

/// Reload events until one removed `tool` (at most five, ten seconds each).
fn wait_for_removal(watch: &mut toolhost::Watch, tool: &str) -> bool {
    (0..5).any(|_| {
        watch
            .next_timeout(std::time::Duration::from_secs(10))
            .is_some_and(|event| event.removed.iter().any(|t| t == tool))
    })
}

#[test]
fn the_watcher_reloads_when_the_lock_changes() {
    let setup = Setup::new();
    setup.add(&setup.repo.url()).success();
    let host = project_host(&setup);
    let mut watch = host.watch().expect("watching starts");
    let lock = setup.read("toolhost.lock");
    let digest = lock
        .lines()
        .find(|l| l.starts_with("\"forecast.lua\""))
        .and_then(|l| l.split('"').nth(3))
        .expect("forecast.lua's digest")
        .to_string();
    setup
        .project
        .write("toolhost.lock", lock.replace(&digest, &"0".repeat(64)));
    assert!(wait_for_removal(&mut watch, "forecast"));
    assert_eq!(common::names(&host, None), ["hello"]);
}

#[test]
fn the_watcher_reloads_when_a_pack_manifest_changes() {
    let setup = Setup::new();
    setup.project.write("mine/pack.toml", manifest(""));
    setup
        .project
        .write("mine/forecast.lua", simple_tool("forecast", "weather", "x"));
    setup.project.write(
        "toolhost.toml",
        format!("{CONFIG}[plugins.mine]\ndir = \"mine\"\n"),
    );
    let host = project_host(&setup);
    assert_eq!(common::names(&host, None), ["forecast", "hello"]);
    let mut watch = host.watch().expect("watching starts");
    setup.project.write(
        "mine/pack.toml",
        format!("{}min_toolhost = \"999.0.0\"\n", manifest("")),
    );
    assert!(wait_for_removal(&mut watch, "forecast"));
    assert_eq!(common::names(&host, None), ["hello"]);
}

#[test]
fn a_plugin_folder_holding_a_locked_pack_is_refused() {
    let setup = Setup::new();
    setup.add(&setup.repo.url()).success();
    setup.add_plugin("all", "packs");
    setup.plant_tool_lua();
    let list = setup.toolhost(&["list"]).success();
    let stderr = Setup::stderr(&list);
    assert!(
        stderr
            .contains("plugin 'all' is refused: its folder packs holds the locked pack 'weather'"),
        "{stderr}"
    );
    assert_eq!(setup.tool_names(), ["hello"]);
}

#[test]
fn a_tool_directory_holding_a_locked_pack_is_refused() {
    let setup = Setup::new();
    setup.add(&setup.repo.url()).success();
    setup.plant_tool_lua();
    let list = setup
        .toolhost(&["--tools-dir", "packs", "list", "--json"])
        .success();
    let stderr = Setup::stderr(&list);
    assert!(
        stderr.contains(
            "the tool directory is refused: its folder packs holds the locked pack 'weather'"
        ),
        "{stderr}"
    );
    let tools: Vec<Value> = serde_json::from_slice(&list.get_output().stdout).expect("json");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(!names.contains(&"planted"), "{names:?}");
}

/// The stderr of `toolhost list` with plugin `mine` (folder `mine/`) holding a link at
/// `mine/LINK` to the installed pack's `forecast.lua`.
fn list_with_a_link_into_the_pack(link: &str) -> String {
    let setup = Setup::new();
    setup.add(&setup.repo.url()).success();
    setup.add_plugin("mine", "mine");
    let at = setup.project.root().join("mine").join(link);
    std::fs::create_dir_all(at.parent().expect("a folder")).unwrap();
    std::os::unix::fs::symlink(setup.pack_file("forecast.lua"), at).unwrap();
    Setup::stderr(&setup.toolhost(&["list"]).success())
}

const MINE_REFUSED: &str =
    "plugin 'mine' is refused: its folder mine holds the locked pack 'weather'";

#[test]
fn a_plugin_folder_linking_into_a_locked_pack_is_refused() {
    let stderr = list_with_a_link_into_the_pack("forecast.lua");
    assert!(stderr.contains(MINE_REFUSED), "{stderr}");
}

#[test]
fn a_package_file_linking_into_a_locked_pack_is_refused() {
    let stderr = list_with_a_link_into_the_pack("pkg/tool.lua");
    assert!(stderr.contains(MINE_REFUSED), "{stderr}");
}

#[test]
fn the_project_folder_holding_the_packs_folder_is_not_refused() {
    let setup = Setup::new();
    setup.add(&setup.repo.url()).success();
    let list = setup.toolhost(&["--tools-dir", ".", "list"]).success();
    let stderr = Setup::stderr(&list);
    assert!(!stderr.contains("is refused"), "{stderr}");
}

#[test]
fn a_tool_directory_that_is_a_tampered_locked_pack_is_refused() {
    let setup = Setup::new();
    setup.add(&setup.repo.url()).success();
    setup.tamper_forecast();
    let list = setup
        .toolhost(&["--tools-dir", "packs/weather", "list", "--json"])
        .success();
    let stderr = Setup::stderr(&list);
    assert!(
        stderr.contains("pack 'weather' is refused: its files do not match toolhost.lock"),
        "{stderr}"
    );
    let tools: Vec<Value> = serde_json::from_slice(&list.get_output().stdout).expect("json");
    assert!(tools.iter().all(|t| t["name"] != "forecast"), "{tools:?}");
}

#[test]
fn a_tool_directory_that_is_an_intact_locked_pack_loads() {
    let setup = Setup::new();
    setup.add(&setup.repo.url()).success();
    let list = setup
        .toolhost(&["--tools-dir", "packs/weather", "list", "--json"])
        .success();
    let tools: Vec<Value> = serde_json::from_slice(&list.get_output().stdout).expect("json");
    assert!(tools.iter().any(|t| t["name"] == "forecast"), "{tools:?}");
}

//! The one harness of the binary's end-to-end tests (`cli`, `hook`, `mcp`,
//! `mounted`, `pipelines`): a temporary state directory driven through the
//! real `berth` binary, a user's repository to import, and the clean-up that
//! must run even when a test fails (the berths' containers and disks go
//! before the directory does). Each module builds what it needs on top of
//! it instead of keeping its own copy of the same set-up. `berth serve`'s
//! binaries (`serve`, `serve_browser`) share it through `support/server.rs`.
// Each test binary uses its part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// A state directory (`<tmp>/state`) and the files a test makes beside it.
pub struct Fixture {
    dir: tempfile::TempDir,
    project: String,
    /// Set for every `berth` this fixture runs.
    env: Vec<(String, String)>,
}

impl Drop for Fixture {
    /// A Docker berth left up outlives its test unless it is removed here,
    /// and a berth's own disk (berth as root) stays mounted in the state
    /// directory: both go first, failed or not.
    fn drop(&mut self) {
        if self.state().join("identities").exists() {
            let instance = berth_engine::berths::instance_of(&self.state());
            let ids = Command::new("docker")
                .args(["ps", "-aq", "--filter"])
                .arg(format!("label=berth.instance={instance}"))
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            let ids: Vec<&str> = ids.split_whitespace().collect();
            if !ids.is_empty() {
                let _ = Command::new("docker")
                    .args(["rm", "-f"])
                    .args(&ids)
                    .output();
            }
        }
        berth_engine::release_disks_under(&self.state());
    }
}

impl Fixture {
    /// An empty temporary directory: no state yet, project `demo`.
    pub fn new() -> Fixture {
        Fixture::named("demo")
    }

    /// The same with another project name (container names are per project
    /// and agent, so Docker tests running at once take unique ones).
    pub fn named(project: &str) -> Fixture {
        Fixture {
            dir: tempfile::tempdir().unwrap(),
            project: project.to_string(),
            env: Vec::new(),
        }
    }

    /// `berth init` and the project imported from [`Fixture::source_repo`].
    pub fn with_project(self) -> Fixture {
        let src = self.source_repo();
        self.ok(&["init"]);
        self.ok(&[
            "project",
            "add",
            &self.project,
            "--from",
            src.to_str().unwrap(),
        ]);
        self
    }

    /// [`Fixture::with_project`] with every berth of the project in one
    /// backend (`runner` or `mounted`), also the ones an agent's loop brings
    /// up on its own.
    pub fn with_berth_mode(self, mode: &str) -> Fixture {
        let f = self.with_project();
        f.edit_config(|text| {
            assert!(text.contains("\nmode = \"auto\"\n"), "{text}");
            text.replace("\nmode = \"auto\"\n", &format!("\nmode = \"{mode}\"\n"))
        });
        f
    }

    /// The temporary directory everything lives in.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn state(&self) -> PathBuf {
        self.root().join("state")
    }

    pub fn project_name(&self) -> &str {
        &self.project
    }

    /// The project's `berth.toml` in the state.
    pub fn config(&self) -> PathBuf {
        self.state()
            .join("projects")
            .join(&self.project)
            .join("berth.toml")
    }

    pub fn edit_config(&self, edit: impl FnOnce(String) -> String) {
        let config = self.config();
        let text = std::fs::read_to_string(&config).unwrap();
        std::fs::write(&config, edit(text)).unwrap();
    }

    /// A user's repository with one commit (`a.txt`), to import.
    pub fn source_repo(&self) -> PathBuf {
        let src = self.root().join("src");
        if src.join(".git").exists() {
            return src;
        }
        std::fs::create_dir_all(&src).unwrap();
        git(&src, &["init", "-q", "-b", "main"]);
        std::fs::write(src.join("a.txt"), "a\n").unwrap();
        git(&src, &["add", "a.txt"]);
        git(&src, &["commit", "-q", "-m", "init"]);
        src
    }

    /// Sets `key` for every `berth` run from now on.
    pub fn set_env(&mut self, key: &str, value: &str) {
        self.env.push((key.to_string(), value.to_string()));
    }

    /// `berth ARGS` against this state, as user `ada`, without the
    /// caller's `RUST_LOG`.
    pub fn command(&self, args: &[&str]) -> Command {
        self.command_of(Path::new(env!("CARGO_BIN_EXE_berth")), args)
    }

    /// [`command`](Self::command) with another binary than the `berth`
    /// the build made (a copy of it elsewhere).
    pub fn command_of(&self, program: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(program);
        c.args(args)
            .envs(self.env.iter().cloned())
            .env("BERTH_HOME", self.state())
            .env("USER", "ada")
            .env_remove("RUST_LOG");
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Runs and asserts success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        expect_ok(args, self.run(args))
    }

    /// Runs and asserts failure; returns the exit code and stderr.
    pub fn err(&self, args: &[&str]) -> (i32, String) {
        let out = self.run(args);
        assert!(!out.status.success(), "berth {args:?} succeeded");
        (
            out.status.code().unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    }

    /// `berth agent activate AGENT --impl command --command COMMAND` in the
    /// fixture's project; returns stdout.
    pub fn activate_command(&self, agent: &str, command: &str) -> String {
        self.ok(&[
            "agent",
            "activate",
            agent,
            "--project",
            &self.project,
            "--impl",
            "command",
            "--command",
            command,
        ])
    }

    /// A new task titled `title` in this fixture's project: its id.
    pub fn new_task(&self, title: &str) -> String {
        let t = self.json(&[
            "task",
            "create",
            "--project",
            &self.project,
            "--title",
            title,
            "--json",
        ]);
        t["id"].as_str().unwrap().to_string()
    }

    /// Runs and asserts success; returns stdout parsed as JSON.
    pub fn json(&self, args: &[&str]) -> Value {
        serde_json::from_str(&self.ok(args)).unwrap()
    }
}

/// Asserts a finished `berth` run succeeded; returns its stdout.
pub fn expect_ok(args: &[&str], out: Output) -> String {
    assert!(
        out.status.success(),
        "berth {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The host's git as a user would run it, in a directory the test made.
pub fn git(dir: &Path, args: &[&str]) {
    git_out(
        dir,
        &[
            &["-c", "user.name=Ada", "-c", "user.email=ada@example.com"],
            args,
        ]
        .concat(),
    );
}

/// The same; returns stdout, trimmed.
pub fn git_out(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

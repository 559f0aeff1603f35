//! Shared fixtures: real repositories in temporary directories, made and
//! inspected with the git CLI (tests only; berth itself never runs git).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod smart_http;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use berth_worktrees::{AgentName, CommitRequest, Identity, ProjectName, TaskName, Worktrees};

/// Runs git with no user or system configuration, trusting every directory
/// (repositories chowned to another uid are inspected too).
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_cmd(dir, args).output().expect("run git");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}{}",
        dir.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

pub fn git_cmd(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Test Person")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test Person")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .args(["-c", "safe.directory=*", "-c", "init.defaultBranch=main"])
        .args(args);
    cmd
}

/// A source repository on `main` with `files` committed.
pub fn source_repo(dir: &Path, files: &[(&str, &str)]) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q"]);
    for (path, content) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "initial"]);
    dir.to_path_buf()
}

pub fn project(name: &str) -> ProjectName {
    ProjectName::new(name).unwrap()
}
pub fn agent(name: &str) -> AgentName {
    AgentName::new(name).unwrap()
}
pub fn task(name: &str) -> TaskName {
    TaskName::new(name).unwrap()
}

pub fn commit_request(message: &str, action: &str) -> CommitRequest {
    CommitRequest {
        message: message.to_owned(),
        action_id: action.to_owned(),
        identity: None,
        co_author: Some(Identity::new("Ada Lovelace", "ada@example.com").unwrap()),
    }
}

/// A state directory with project `web` imported from a small source
/// repository (`main`, plus a `.gitignore` ignoring `target/`).
pub struct Fixture {
    pub tmp: tempfile::TempDir,
    pub wt: Worktrees,
    pub project: ProjectName,
    pub source: PathBuf,
}

impl Fixture {
    pub fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let source = source_repo(
            &tmp.path().join("source"),
            &[
                ("README.md", "hello\n"),
                ("src/lib.rs", "pub fn f() {}\n"),
                (".gitignore", "target/\n"),
            ],
        );
        let wt = Worktrees::open(tmp.path().join("state")).unwrap();
        let project = project("web");
        wt.import_project(&project, &source, None).unwrap();
        Fixture {
            tmp,
            wt,
            project,
            source,
        }
    }

    pub fn state(&self) -> &Path {
        self.wt.layout().state_dir()
    }

    pub fn forge(&self) -> PathBuf {
        self.wt.layout().forge(&self.project)
    }

    /// Every ref of the forge with its target.
    pub fn forge_refs(&self) -> BTreeMap<String, String> {
        refs(&self.forge())
    }
}

/// Every ref of a repository with its target (`git for-each-ref`).
pub fn refs(repo: &Path) -> BTreeMap<String, String> {
    git(repo, &["for-each-ref", "--format=%(refname) %(objectname)"])
        .lines()
        .map(|l| {
            let (r, o) = l.split_once(' ').unwrap();
            (r.to_owned(), o.to_owned())
        })
        .collect()
}

/// `git log -1 --format=...` of a ref in a repository.
pub fn show(repo: &Path, rev: &str, format: &str) -> String {
    git(repo, &["log", "-1", &format!("--format={format}"), rev])
}

/// Whether this test process runs as root (needed to chown). Outside CI a
/// non-root run skips the test with a note; under `CI=true` it fails.
pub fn require_root(test: &str) -> bool {
    let root = std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false);
    if !root {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{test} needs root (it chowns files to uid 1000) and CI=true is set"
        );
        eprintln!("skipping {test}: not running as root");
    }
    root
}

/// The name libtest knows a test by, for re-running it in a child process:
/// `module::name` in the crate's one test binary, `name` in a binary of its
/// own. `module_path` is the caller's `module_path!()`.
pub fn test_path(module_path: &str, name: &str) -> String {
    match module_path.split_once("::") {
        Some((_, module)) => format!("{module}::{name}"),
        None => name.to_string(),
    }
}

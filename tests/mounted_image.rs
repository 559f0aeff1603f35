#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Any local image in `[sandbox] image`, through the `berth` binary, against
//! the real Docker engine: an image with no shell, no git and no user of its
//! own hosts a berth, because berth injects its tools at `/opt/berth`.
//!
//! Without a Docker engine these tests skip with the reason, except under
//! `CI=true`, where they fail.

use crate::docker::docker_answers;
use crate::fixture::Fixture;

use std::path::Path;
use std::process::Command;

/// A local image made for one test; removed (with its tags) on drop.
struct TestImage(String);

impl TestImage {
    /// `docker build` of `dockerfile` with the files of `files` in `dir`.
    fn build(dir: &Path, tag: &str, dockerfile: &str, files: &[(&str, &str)]) -> TestImage {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("Dockerfile"), dockerfile).unwrap();
        for (name, content) in files {
            std::fs::write(dir.join(name), content).unwrap();
        }
        let out = Command::new("docker")
            .args(["build", "-q", "--network", "none", "-t", tag])
            .arg(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "docker build: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        TestImage(tag.to_string())
    }
}

impl Drop for TestImage {
    fn drop(&mut self) {
        let _ = Command::new("docker").args(["rmi", "-f", &self.0]).output();
    }
}

#[test]
fn berth_exec_runs_git_in_an_image_with_no_shell_no_git_and_no_user() {
    if !docker_answers() {
        return;
    }
    let project = format!("i{}-bare", std::process::id());
    let mut f = Fixture::named(&project).with_project();
    let tools = f.root().join("tools");
    f.set_env("BERTH_TOOLS_DIR", tools.to_str().unwrap());
    let tag = format!("berth-test-cli-bare-{}:1", std::process::id());
    let _image = TestImage::build(
        &f.root().join("bare-image"),
        &tag,
        "FROM scratch\nCOPY hello.txt /hello.txt\n",
        &[("hello.txt", "hello\n")],
    );
    f.edit_config(|text| {
        assert!(text.contains("\nimage = \"\"\n"), "{text}");
        text.replace("\nimage = \"\"\n", &format!("\nimage = \"{tag}\"\n"))
    });
    f.ok(&["agent", "activate", "dev-1", "--project", &project]);
    f.ok(&["up", "dev-1", "--project", &project, "--mode", "mounted"]);
    f.ok(&["autonomy", "set", "dev-1", "terminal", "auto_approve"]);

    let exec = |line: &str| f.ok(&["exec", "dev-1", "--", line]);
    assert_eq!(exec("cat /hello.txt"), "hello\n");
    let status = exec("git status --short --branch");
    assert!(status.starts_with("## agent/dev-1/"), "{status}");
    exec("echo b > b.txt");
    exec("git add b.txt");
    exec("git commit -q -m 'from a bare image'");
    assert_eq!(exec("git log -1 --format=%s"), "from a bare image\n");
    // The tool set was assembled where the user said, once.
    let sets: Vec<_> = std::fs::read_dir(&tools)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(sets.len(), 1, "{sets:?}");
    f.ok(&["down", "dev-1"]);
}

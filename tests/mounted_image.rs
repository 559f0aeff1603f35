#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Any local image in `[sandbox] image`, through the `berth` binary, against
//! the real Docker engine: an image with no shell, no git and no user of its
//! own hosts a berth, because berth injects its tools at `/opt/berth`; a
//! toolchain image `berth image build --recipe` makes from the host's Python
//! runs a project's `python3 -m unittest` through `berth exec`, as the
//! berth's own uid.
//!
//! Without a Docker engine these tests skip with the reason, except under
//! `CI=true`, where they fail.

use crate::cli::JsonDoc;
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
    // Built first, so it is removed after the fixture's containers.
    let image_dir = tempfile::tempdir().unwrap();
    let tag = format!("berth-test-cli-bare-{}:1", std::process::id());
    let _image = TestImage::build(
        image_dir.path(),
        &tag,
        "FROM scratch\nCOPY hello.txt /hello.txt\n",
        &[("hello.txt", "hello\n")],
    );
    let project = format!("i{}-bare", std::process::id());
    let mut f = Fixture::named(&project).with_project();
    let tools = f.root().join("tools");
    f.set_env("BERTH_TOOLS_DIR", tools.to_str().unwrap());
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

#[test]
fn image_build_for_a_project_builds_its_dockerfile_once_and_ls_rm_doctor_know_it() {
    if !docker_answers() {
        return;
    }
    let f = Fixture::named(&format!("i{}-df", std::process::id())).with_project();
    let project = f.project_name().to_string();
    // FROM the default agent image, which `berth image build` makes.
    f.ok(&["image", "build"]);
    let ctx = f.root().join("ctx");
    std::fs::create_dir_all(&ctx).unwrap();
    std::fs::write(
        ctx.join("Dockerfile"),
        "FROM berth-agent:latest\nCOPY marker.txt /etc/marker.txt\nENV MARKER=from-the-project\n",
    )
    .unwrap();
    // Unique content: the tag is the content's hash.
    std::fs::write(ctx.join("marker.txt"), format!("{}\n", std::process::id())).unwrap();
    f.edit_config(|text| {
        let at = text.find("[sandbox.build]\n").unwrap();
        let (head, tail) = text.split_at(at);
        format!(
            "{head}{}",
            tail.replacen(
                "context = \"\"",
                &format!("context = \"{}\"", ctx.display()),
                1
            )
        )
    });

    // Each command's JSON as docs/cli-json.md says.
    let doc = JsonDoc::load();
    let checked = |command: &str, args: &[&str]| {
        let out = f.ok(args);
        doc.check(command, &out);
        serde_json::from_str::<serde_json::Value>(&out).unwrap()
    };
    let built = checked(
        "image build",
        &["image", "build", "--project", &project, "--json"],
    );
    let tag = built["tag"].as_str().unwrap().to_string();
    let _image = TestImage(tag.clone());
    assert!(tag.starts_with("berth-build:"), "{built}");
    assert_eq!(built["up_to_date"], false, "{built}");
    let again = f.json(&["image", "build", "--project", &project, "--json"]);
    assert_eq!(
        (again["tag"].as_str(), &again["up_to_date"]),
        (Some(tag.as_str()), &serde_json::json!(true))
    );
    // A host path still builds, and is said to be deprecated.
    let warned = f.run(&["image", "build", "--project", &project]);
    let stderr = String::from_utf8_lossy(&warned.stderr);
    assert!(
        warned.status.success()
            && stderr.contains("is a host path")
            && stderr.contains("deprecated"),
        "{stderr}"
    );

    let listed = checked("image ls", &["image", "ls", "--json"]);
    let ours = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|i| {
            i["tags"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t == &serde_json::json!(tag))
        })
        .unwrap_or_else(|| panic!("{tag} not in {listed}"));
    assert_eq!(ours["source"], "dockerfile");

    let doctor = String::from_utf8_lossy(&f.run(&["doctor"]).stdout).into_owned();
    assert!(
        doctor.contains(&format!(
            "the image of project {project}'s Dockerfile is built ({tag})"
        )),
        "{doctor}"
    );

    let removed = checked("image rm", &["image", "rm", &tag, "--json"]);
    assert!(
        removed["removed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == &serde_json::json!(tag)),
        "{removed}"
    );
    let listed = f.json(&["image", "ls", "--json"]).to_string();
    assert!(!listed.contains(&tag), "{listed}");
    let doctor = String::from_utf8_lossy(&f.run(&["doctor"]).stdout).into_owned();
    assert!(
        doctor.contains("is not built for its current context"),
        "{doctor}"
    );
}

#[test]
fn image_rm_refuses_an_image_berth_did_not_build() {
    if !docker_answers() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tag = format!("berth-test-cli-foreign-{}:1", std::process::id());
    let _image = TestImage::build(
        dir.path(),
        &tag,
        "FROM scratch\nCOPY a.txt /a.txt\n",
        &[("a.txt", "a\n")],
    );
    let f = Fixture::new();
    let (code, err) = f.err(&["image", "rm", &tag]);
    assert_ne!(code, 0);
    assert!(err.contains("not built by berth"), "{err}");
    // Still there.
    let out = Command::new("docker")
        .args(["image", "inspect", &tag])
        .output()
        .unwrap();
    assert!(out.status.success());
}

/// This host's Python and its standard library (as Python itself names
/// it), as a recipe's `[[host]]` entries with the libraries `ldd` finds; the
/// library less its own tests, caches and what an image needs no display for.
fn host_python_entries() -> Option<String> {
    let out = Command::new("/usr/bin/python3")
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['stdlib'])",
        ])
        .output()
        .ok()?;
    let stdlib = String::from_utf8(out.stdout).ok()?.trim().to_string();
    let skip = [
        "test",
        "__pycache__",
        "idlelib",
        "tkinter",
        "turtledemo",
        "ensurepip",
        "lib2to3",
        "dist-packages",
        "site-packages",
    ];
    (out.status.success() && Path::new(&stdlib).is_dir()).then(|| {
        format!(
            "\n[[host]]\npath = \"/usr/bin/python3\"\nlibraries = true\n\n[[host]]\npath = {stdlib:?}\nlibraries = true\nexclude = {skip:?}\n"
        )
    })
}

#[test]
fn a_python_toolchain_image_from_the_recipe_runs_unittest_through_berth_exec() {
    if !docker_answers() {
        return;
    }
    let Some(python) = host_python_entries() else {
        // CI's host has it: a skip there would hide a failure.
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(
            !ci,
            "CI=true and this host has no Python with its standard library"
        );
        return eprintln!("skipping: no host Python");
    };
    let project = format!("i{}-py", std::process::id());
    let f = Fixture::named(&project);
    // The project: a module and its tests, committed on the base branch.
    let src = f.source_repo();
    std::fs::write(src.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    std::fs::write(
        src.join("test_calc.py"),
        "import json, unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n    def test_json(self):\n        self.assertEqual(json.loads('[1]'), [1])\n",
    )
    .unwrap();
    crate::fixture::git(&src, &["add", "-A"]);
    crate::fixture::git(&src, &["commit", "-q", "-m", "calc"]);
    let f = f.with_project();

    // The agent recipe and the host's Python with its standard library.
    let recipe = concat!(env!("CARGO_MANIFEST_DIR"), "/../images/agent/recipe.toml");
    let name = format!("berth-test-cli-python-{}", std::process::id());
    let text = std::fs::read_to_string(recipe).unwrap().replacen(
        "name = \"berth-agent\"",
        &format!("name = \"{name}\""),
        1,
    ) + &python;
    assert!(text.contains(&name), "the recipe names its image otherwise");
    let recipe_file = f.root().join("python.toml");
    std::fs::write(&recipe_file, text).unwrap();
    let built = f.json(&[
        "image",
        "build",
        "--recipe",
        recipe_file.to_str().unwrap(),
        "--json",
    ]);
    let _tag = TestImage(built["tag"].as_str().unwrap().to_string());
    let latest = TestImage(built["latest"].as_str().unwrap().to_string());
    f.edit_config(|text| {
        assert!(text.contains("\nimage = \"\"\n"), "{text}");
        text.replace("\nimage = \"\"\n", &format!("\nimage = \"{}\"\n", latest.0))
    });
    f.ok(&["agent", "activate", "dev-1", "--project", &project]);
    let up = f.json(&[
        "up",
        "dev-1",
        "--project",
        &project,
        "--mode",
        "mounted",
        "--json",
    ]);
    f.ok(&["autonomy", "set", "dev-1", "terminal", "auto_approve"]);
    // The berth's uid owns its worktree.
    let owner = {
        use std::os::unix::fs::MetadataExt as _;
        std::fs::metadata(up["worktree"].as_str().unwrap())
            .unwrap()
            .uid()
    };
    let out = f.ok(&["exec", "dev-1", "--", "id -u; python3 -m unittest 2>&1"]);
    assert!(
        out.starts_with(&format!("{owner}\n"))
            && out.contains("Ran 2 tests")
            && out.contains("\nOK"),
        "{out}"
    );
    f.ok(&["down", "dev-1"]);
}

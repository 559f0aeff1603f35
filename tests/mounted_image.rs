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

use berth_sandbox::image::HostPreset;
use serde_json::Value;

/// Whether this run is CI's, where a skip would hide a failure.
fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// `berth image build --recipe` of the agent recipe renamed `name`, with
/// `extra` appended: its JSON.
fn build_recipe(f: &Fixture, name: &str, extra: &str) -> Value {
    let recipe = concat!(env!("CARGO_MANIFEST_DIR"), "/../images/agent/recipe.toml");
    let text = std::fs::read_to_string(recipe).unwrap().replacen(
        "name = \"berth-agent\"",
        &format!("name = \"{name}\""),
        1,
    ) + "\n"
        + extra;
    assert!(text.contains(name), "the recipe names its image otherwise");
    let recipe_file = f.root().join(format!("{}.toml", name.replace('/', "-")));
    std::fs::write(&recipe_file, text).unwrap();
    f.json(&[
        "image",
        "build",
        "--recipe",
        recipe_file.to_str().unwrap(),
        "--json",
    ])
}

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
    mounted_with_image(&f, &project, &tag);

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

#[test]
fn a_python_toolchain_image_from_the_recipe_runs_unittest_through_berth_exec() {
    if !docker_answers() {
        return;
    }
    // Debian's Python, and its standard library as `sysconfig` names it.
    if let Err(e) = HostPreset::Python.files(Some(Path::new("/usr/bin/python3"))) {
        // CI's host has it: a skip there would hide a failure.
        assert!(
            !ci(),
            "CI=true and this host's Python does not resolve: {e}"
        );
        return eprintln!("skipping: {e}");
    }
    let project = format!("i{}-py", std::process::id());
    // The project: a module and its tests, committed on the base branch.
    let f = project_with(
        &project,
        &[
            ("calc.py", "def add(a, b):\n    return a + b\n"),
            (
                "test_calc.py",
                "import json, unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n    def test_json(self):\n        self.assertEqual(json.loads('[1]'), [1])\n",
            ),
        ],
    );

    // The agent recipe and the `python` preset.
    let name = format!("berth-test-cli-python-{}", std::process::id());
    let built = build_recipe(
        &f,
        &name,
        "[[host]]\npreset = \"python\"\npath = \"/usr/bin/python3\"\n",
    );
    let _tag = TestImage(built["tag"].as_str().unwrap().to_string());
    let latest = TestImage(built["latest"].as_str().unwrap().to_string());
    let owner = mounted_with_image(&f, &project, &latest.0);
    let out = f.ok(&["exec", "dev-1", "--", "id -u; python3 -m unittest 2>&1"]);
    assert!(
        out.starts_with(&format!("{owner}\n"))
            && out.contains("Ran 2 tests")
            && out.contains("\nOK"),
        "{out}"
    );
    f.ok(&["down", "dev-1"]);
}

/// A project whose base branch holds `files` (relative paths), committed.
fn project_with(project: &str, files: &[(&str, &str)]) -> Fixture {
    let f = Fixture::named(project);
    let src = f.source_repo();
    for (path, text) in files {
        let path = src.join(path);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(path, text).unwrap();
    }
    crate::fixture::git(&src, &["add", "-A"]);
    crate::fixture::git(&src, &["commit", "-q", "-m", "calc"]);
    f.with_project()
}

/// Brings agent `dev-1` up in a mounted berth on `image`, with terminal
/// actions auto-approved; returns the berth's uid, which owns its worktree.
fn mounted_with_image(f: &Fixture, project: &str, image: &str) -> u32 {
    use std::os::unix::fs::MetadataExt as _;
    f.edit_config(|text| {
        assert!(text.contains("\nimage = \"\"\n"), "{text}");
        text.replace("\nimage = \"\"\n", &format!("\nimage = \"{image}\"\n"))
    });
    f.ok(&["agent", "activate", "dev-1", "--project", project]);
    let up = f.json(&[
        "up",
        "dev-1",
        "--project",
        project,
        "--mode",
        "mounted",
        "--json",
    ]);
    f.ok(&["autonomy", "set", "dev-1", "terminal", "auto_approve"]);
    std::fs::metadata(up["worktree"].as_str().unwrap())
        .unwrap()
        .uid()
}

/// The Rust toolchain image's repository: ~600 MB that take ~20 s to build,
/// kept between runs under this fixed name. Its tag hashes the recipe and
/// every resolved host file's metadata, so a toolchain or gcc upgrade builds
/// a new image; older ones are removed.
const RUST_IMAGE: &str = "berth-test-rust-toolchain";

/// Host `program args`' stdout.
fn host_output(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap();
    assert!(out.status.success(), "{program} {args:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_rust_toolchain_image_from_the_recipe_runs_cargo_test_offline_through_berth_exec() {
    if !docker_answers() {
        return;
    }
    if let Err(e) = HostPreset::Rust.files(None) {
        assert!(
            !ci(),
            "CI=true and this host has no Rust toolchain with gcc, binutils and libc6-dev: {e}"
        );
        return eprintln!("skipping: {e}");
    }
    let project = format!("i{}-rs", std::process::id());
    // A crate with two unit tests and a doctest, committed on the base branch.
    let f = project_with(
        &project,
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
            ),
            (
                "src/lib.rs",
                "/// Adds.\n///\n/// ```\n/// assert_eq!(calc::add(1, 1), 2);\n/// ```\npub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(2, 3), 5);\n    }\n\n    #[test]\n    fn formats() {\n        assert_eq!(format!(\"{:?}\", vec![super::add(1, 2)]), \"[3]\");\n    }\n}\n",
            ),
        ],
    );

    // The agent recipe and the `rust` preset: rustc, cargo, rustdoc and
    // rust-std of this host's target, with gcc, ld and libc's files.
    let built = build_recipe(&f, RUST_IMAGE, "[[host]]\npreset = \"rust\"\n");
    let id = built["id"].as_str().unwrap();
    // Older toolchains' images; one a container still uses stays, for a
    // later run.
    let listed = host_output(
        "docker",
        &[
            "image",
            "ls",
            "--no-trunc",
            "--format",
            "{{.ID}}",
            RUST_IMAGE,
        ],
    );
    for other in listed.lines().filter(|i| *i != id) {
        let _ = Command::new("docker").args(["rmi", other]).output();
    }
    // The compiler's two libraries alone are ~340 MB; the whole toolchain
    // directory, with docs, sources, clippy and rustfmt, well over 1 GB.
    let bytes = built["bytes"].as_u64().unwrap();
    assert!(bytes < 700 << 20 || built["up_to_date"] == true, "{bytes}");

    let owner = mounted_with_image(&f, &project, built["tag"].as_str().unwrap());
    let out = f.ok(&[
        "exec",
        "dev-1",
        "--timeout",
        "600",
        "--",
        "id -u; cargo test --offline 2>&1",
    ]);
    assert!(
        out.starts_with(&format!("{owner}\n"))
            && out.contains("test tests::adds ... ok")
            && out.contains("test tests::formats ... ok")
            && out.contains("test result: ok. 2 passed")
            && out.contains("src/lib.rs - add (line 3) ... ok"),
        "{out}"
    );
    // The test binary was linked in the berth, owned by the berth's uid, by
    // the host's compiler; its docs, sources and other tools stayed out.
    let sysroot = host_output("rustc", &["--print", "sysroot"]);
    let sysroot = sysroot.trim();
    // (Two lines: a line of which only a part matches an allow rule is
    // held for a person, whatever the autonomy.)
    let out = f.ok(&[
        "exec",
        "dev-1",
        "--",
        "stat -c %u target/debug/deps/calc-* | sort -u; rustc -V",
    ]);
    assert_eq!(out, format!("{owner}\n{}", host_output("rustc", &["-V"])));
    let out = f.ok(&[
        "exec",
        "dev-1",
        "--",
        &format!(
            "ls {sysroot}/bin; ls -d {sysroot}/share {sysroot}/lib/rustlib/src {sysroot}/lib/rustlib/etc 2>/dev/null | wc -l"
        ),
    ]);
    assert_eq!(out, "cargo\nrustc\nrustdoc\n0\n");
    f.ok(&["down", "dev-1"]);
}

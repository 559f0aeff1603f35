//! Any local image hosts a berth: berth's own tools (busybox, git with its
//! libraries and loader, berth-helper) are injected read-only at `/opt/berth`.
//! The image here is `FROM scratch` with one file: no shell, no git, no
//! `/etc/passwd`, no loader — and git at `/work` still works. A toolchain
//! image from the recipe's `python` preset runs a project's tests as the
//! berth's uid (the `rust` preset's image runs `cargo test` through the
//! CLI, in tests/mounted_image.rs, so it is built once).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use berth_confine::git_env::GitIdentity;
use berth_sandbox::docker::{DockerBackend, DockerBerth};
use berth_sandbox::image::{HostPreset, ImageRef, TOOLS_MOUNT};
use berth_sandbox::{ExecOutcome, ExecRequest, ExitStatus, Sandbox};
use common::{ImageGuard, Layout, git, text};
use futures_util::StreamExt;

/// The image's own `PATH`, which must come before berth's tools.
const IMAGE_PATH: &str = "/usr/local/bin:/custom/bin";

/// Builds `<repo>:1` from scratch with one file and an environment.
async fn build_bare_image(backend: &DockerBackend, repo: &str) -> String {
    let tag = format!("{repo}:1");
    let dockerfile =
        format!("FROM scratch\nCOPY hello.txt /hello.txt\nENV PATH={IMAGE_PATH} GREETING=bare\n");
    let mut b = tar::Builder::new(Vec::new());
    for (name, data) in [
        ("Dockerfile", dockerfile.as_bytes()),
        ("hello.txt", b"hello from the image\n".as_slice()),
    ] {
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o644);
        h.set_size(data.len() as u64);
        b.append_data(&mut h, name, data).unwrap();
    }
    let context = b.into_inner().unwrap();
    let options = bollard::query_parameters::BuildImageOptionsBuilder::default()
        .t(&tag)
        .rm(true)
        .forcerm(true)
        .networkmode("none")
        .build();
    let mut stream =
        backend
            .docker()
            .build_image(options, None, Some(bollard::body_full(context.into())));
    while let Some(item) = stream.next().await {
        let info = item.unwrap();
        assert!(info.error_detail.is_none(), "{info:?}");
    }
    tag
}

async fn run(berth: &DockerBerth, line: &str) -> ExecOutcome {
    let mut r = ExecRequest::shell(line);
    r.timeout = Duration::from_secs(60);
    berth.exec(r, None).await.unwrap()
}

/// Runs `line`, which must exit 0; its stdout.
async fn stdout_of(berth: &DockerBerth, line: &str) -> String {
    let out = run(berth, line).await;
    assert_eq!(
        out.status,
        ExitStatus::Exited(0),
        "{line}: {} / {}",
        text(&out.stdout.bytes),
        text(&out.stderr.bytes)
    );
    text(&out.stdout.bytes)
}

#[tokio::test]
async fn git_works_at_work_in_an_image_with_no_shell_no_git_and_no_user() {
    let backend = engine_or_skip!();
    let repo_name = format!("berth-test-bare-{}", std::process::id());
    let _image = ImageGuard(repo_name.clone());
    let tag = build_bare_image(&backend, &repo_name).await;

    let layout = Layout::new("bare");
    let mut spec = layout.spec_with_uid("dev-1", 1000);
    spec.image = ImageRef::Named(tag);
    spec.tools_root = Some(layout.root().join("tools"));
    spec.git_identity = Some(GitIdentity {
        name: "dev-1[bot]".into(),
        email: "dev-1@berth.invalid".into(),
    });
    let repo = spec.agent_repo.clone();
    let berth = backend.up(spec.clone()).await.unwrap();

    // The image's PATH first, berth's tools after it.
    assert_eq!(
        stdout_of(&berth, "echo $PATH; echo $GREETING").await,
        format!("{IMAGE_PATH}:{TOOLS_MOUNT}/bin\nbare\n")
    );
    assert_eq!(
        stdout_of(
            &berth,
            "command -v git; cat /hello.txt; test -e /bin/sh || echo no-sh"
        )
        .await,
        "/opt/berth/bin/git\nhello from the image\nno-sh\n"
    );
    // The berth's uid has a name, a home it can write, though the image has
    // no user database at all.
    assert_eq!(
        stdout_of(
            &berth,
            "id -u; id -un; echo $HOME; touch $HOME/x && echo ok"
        )
        .await,
        "1000\nagent\n/home/agent\nok\n"
    );

    // git, started through the injected loader, with its exec-path and
    // templates beside it.
    assert_eq!(
        stdout_of(&berth, "git rev-parse --abbrev-ref HEAD; git --exec-path").await,
        "agent/dev-1/t1\n/opt/berth/git-core\n"
    );
    let helper = stdout_of(&berth, "\"$(git --exec-path)\"/git version").await;
    assert!(helper.starts_with("git version "), "{helper}");
    assert_eq!(
        stdout_of(
            &berth,
            "git init -q /tmp/t && test -f /tmp/t/.git/description && echo templates"
        )
        .await,
        "templates\n"
    );
    assert_eq!(
        stdout_of(
            &berth,
            "echo new > new.txt && git add new.txt && git commit -q -m 'from a bare image' && git status --porcelain && git log -1 --format=%s"
        )
        .await,
        "from a bare image\n"
    );
    // The commit is in the agent's repository on the host.
    assert_eq!(
        git(&repo, &["log", "-1", "--format=%s %an", "agent/dev-1/t1"]),
        "from a bare image dev-1[bot]\n"
    );

    // The tools are read-only, and nothing else of the image became writable.
    let out = run(&berth, "touch /opt/berth/x || echo refused").await;
    assert_eq!(text(&out.stdout.bytes), "refused\n");

    // A deadline still kills the command: the kill script runs under the
    // injected shell too.
    let mut r = ExecRequest::shell("sleep 60");
    r.timeout = Duration::from_secs(1);
    let out = berth.exec(r, None).await.unwrap();
    assert!(out.timed_out, "{out:?}");
    assert!(out.duration < Duration::from_secs(15), "{:?}", out.duration);
    let ps = stdout_of(&berth, "ps -o pid,comm,args").await;
    assert!(!ps.contains("sleep 60"), "{ps}");

    // A second `up` adopts the container and reuses the tool set.
    let again = backend.up(spec.clone()).await.unwrap();
    assert!(again.adopted());
    let set = spec.ensure_tools().unwrap().unwrap();
    assert!(!set.built);
    assert!(set.dir.starts_with(layout.root().join("tools")), "{set:?}");
}

/// A berth of `image` as `uid` whose worktree holds `files` (path, content),
/// owned by `uid`; the layout must outlive the berth.
async fn up_with_project(
    backend: &DockerBackend,
    image: &str,
    name: &str,
    uid: u32,
    files: &[(&str, &str)],
) -> (Layout, DockerBerth) {
    let layout = Layout::new(name);
    let mut spec = layout.spec_with_uid("dev-1", uid);
    spec.image = ImageRef::Named(image.to_string());
    spec.tools_root = Some(layout.root().join("tools"));
    for (file, content) in files {
        let path = spec.worktree.join(file);
        let parent = path.parent().unwrap();
        if !parent.exists() {
            std::fs::create_dir_all(parent).unwrap();
            std::os::unix::fs::chown(parent, Some(uid), Some(uid)).unwrap();
        }
        std::fs::write(&path, content).unwrap();
        std::os::unix::fs::chown(&path, Some(uid), Some(uid)).unwrap();
    }
    let berth = backend.up(spec).await.unwrap();
    (layout, berth)
}

#[tokio::test]
async fn a_toolchain_image_from_the_recipe_runs_python_unittest_as_the_berths_uid() {
    let backend = engine_or_skip!();
    // Debian's Python, and its standard library as `sysconfig` names it.
    let python = std::path::Path::new("/usr/bin/python3");
    if let Err(e) = HostPreset::Python.files(Some(python)) {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true and this host has no /usr/bin/python3 with its standard library: {e}"
        );
        eprintln!("skipping: {e}");
        return;
    }
    let name = format!("berth-test-python-{}", std::process::id());
    let _image = ImageGuard(name.clone());
    // The agent recipe and the `python` preset.
    let recipe_text = berth_sandbox::image::DEFAULT_RECIPE.replacen(
        "name = \"berth-agent\"",
        &format!("name = \"{name}\""),
        1,
    ) + "\n[[host]]\npreset = \"python\"\npath = \"/usr/bin/python3\"\n";
    let recipe = berth_sandbox::image::Recipe::parse(&recipe_text, "python toolchain").unwrap();
    let built = backend
        .build_image(&recipe, &mut berth_sandbox::image::NoProgress)
        .await
        .unwrap();

    let uid = 100_123;
    let files = [
        ("calc.py", "def add(a, b):\n    return a + b\n"),
        (
            "test_calc.py",
            "import json, unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n    def test_json(self):\n        self.assertEqual(json.loads('[1]'), [1])\n",
        ),
    ];
    let (_layout, berth) = up_with_project(&backend, &built.tag, "python", uid, &files).await;
    let out = run(&berth, "id -u; python3 -m unittest 2>&1").await;
    let stdout = text(&out.stdout.bytes);
    assert_eq!(out.status, ExitStatus::Exited(0), "{stdout}");
    assert!(
        stdout.starts_with(&format!("{uid}\n"))
            && stdout.contains("Ran 2 tests")
            && stdout.contains("OK"),
        "{stdout}"
    );
}

/// `docker load` of a one-layer image whose configuration names another
/// CPU than this host's.
async fn load_foreign_image(backend: &DockerBackend, tag: &str) {
    use sha2::Digest as _;
    let hex = |b: &[u8]| {
        sha2::Sha256::digest(b)
            .iter()
            .map(|x| format!("{x:02x}"))
            .collect::<String>()
    };
    let tar_of = |entries: &[(&str, &[u8])]| {
        let mut b = tar::Builder::new(Vec::new());
        for (name, data) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_mode(0o644);
            h.set_size(data.len() as u64);
            b.append_data(&mut h, name, *data).unwrap();
        }
        b.into_inner().unwrap()
    };
    let layer = tar_of(&[("hello.txt", b"hello\n")]);
    let foreign = if cfg!(target_arch = "x86_64") {
        "arm64"
    } else {
        "amd64"
    };
    let config = format!(
        r#"{{"architecture":"{foreign}","os":"linux","config":{{}},"rootfs":{{"type":"layers","diff_ids":["sha256:{}"]}}}}"#,
        hex(&layer)
    );
    let config_name = format!("{}.json", hex(config.as_bytes()));
    let manifest =
        format!(r#"[{{"Config":"{config_name}","RepoTags":["{tag}"],"Layers":["l/layer.tar"]}}]"#);
    let archive = tar_of(&[
        ("l/layer.tar", &layer),
        (&config_name, config.as_bytes()),
        ("manifest.json", manifest.as_bytes()),
    ]);
    let mut stream = backend.docker().import_image(
        bollard::query_parameters::ImportImageOptionsBuilder::default().build(),
        bollard::body_full(archive.into()),
        None,
    );
    while let Some(item) = stream.next().await {
        let info = item.unwrap();
        assert!(info.error_detail.is_none(), "{info:?}");
    }
}

#[tokio::test]
async fn an_image_for_another_cpu_is_refused_before_a_container_is_made() {
    let backend = engine_or_skip!();
    let repo = format!("berth-test-foreign-{}", std::process::id());
    let _image = ImageGuard(repo.clone());
    let tag = format!("{repo}:1");
    load_foreign_image(&backend, &tag).await;
    let layout = Layout::new("foreign");
    let mut spec = layout.spec("dev-1");
    spec.image = ImageRef::Named(tag.clone());
    spec.tools_root = Some(layout.root().join("tools"));
    let err = backend.up(spec).await.unwrap_err().to_string();
    assert!(err.contains(&tag) && err.contains("no emulation"), "{err}");
    assert_eq!(
        backend.list_berths(Some(&layout.project)).await.unwrap(),
        vec![]
    );
}

//! Any local image hosts a berth: berth's own tools (busybox, git with its
//! libraries and loader, berth-helper) are injected read-only at `/opt/berth`.
//! The image here is `FROM scratch` with one file: no shell, no git, no
//! `/etc/passwd`, no loader — and git at `/work` still works. Toolchain
//! images from the recipe's `[[host]]` entries (the host's Python; its Rust
//! toolchain with the C linker) run a project's tests as the berth's uid.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use berth_confine::git_env::GitIdentity;
use berth_sandbox::docker::{DockerBackend, DockerBerth};
use berth_sandbox::image::{ImageRef, TOOLS_MOUNT};
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

/// The host's Python (`/usr/bin/python3` and its standard library), when
/// there is one: `(interpreter, stdlib directory)`.
fn host_python() -> Option<(String, String)> {
    let real = std::fs::canonicalize("/usr/bin/python3").ok()?;
    let version = real
        .file_name()?
        .to_str()?
        .strip_prefix("python")?
        .to_string();
    let stdlib = format!("/usr/lib/python{version}");
    std::path::Path::new(&stdlib)
        .is_dir()
        .then(|| ("/usr/bin/python3".to_string(), stdlib))
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
    let Some((python, stdlib)) = host_python() else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true and this host has no /usr/bin/python3 with its standard library"
        );
        eprintln!("skipping: no host Python");
        return;
    };
    let name = format!("berth-test-python-{}", std::process::id());
    let _image = ImageGuard(name.clone());
    // The agent recipe, and the host's Python with its standard library
    // (less its own tests and caches) and the libraries `ldd` finds.
    let recipe_text = berth_sandbox::image::DEFAULT_RECIPE.replacen(
        "name = \"berth-agent\"",
        &format!("name = \"{name}\""),
        1,
    ) + &format!(
        "\n[[host]]\npath = \"{python}\"\nlibraries = true\n\n[[host]]\npath = \"{stdlib}\"\nlibraries = true\nexclude = [\"test\", \"__pycache__\", \"idlelib\", \"tkinter\", \"turtledemo\", \"ensurepip\", \"lib2to3\", \"dist-packages\", \"site-packages\"]\n"
    );
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

/// This host's Rust toolchain, when `rustc` on `PATH` is a rustup-style one
/// for this machine's target with `cargo` beside it, and the C linker cargo
/// calls (`cc`, with gcc's startup files and libc's development files):
/// `(sysroot, host target, gcc's library directory)`.
fn host_rust() -> Option<(String, String, String)> {
    let output = |program: &str, args: &[&str]| {
        let out = std::process::Command::new(program)
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let sysroot = output("rustc", &["--print", "sysroot"])?;
    let host = output("rustc", &["-vV"])?
        .lines()
        .find_map(|l| l.strip_prefix("host: "))?
        .to_string();
    // gcc's own files (collect2, crtbeginS.o, libgcc.a) live beside libgcc.a.
    let libgcc = output("cc", &["-print-libgcc-file-name"])?;
    let gcc_dir = std::path::Path::new(&libgcc)
        .parent()?
        .to_str()?
        .to_string();
    let wanted = [
        format!("{sysroot}/bin/rustc"),
        format!("{sysroot}/bin/cargo"),
        format!("{sysroot}/lib/rustlib/{host}/lib"),
        format!("{gcc_dir}/collect2"),
        "/usr/lib/x86_64-linux-gnu/Scrt1.o".to_string(),
        "/usr/bin/ld".to_string(),
    ];
    (host == "x86_64-unknown-linux-gnu" && wanted.iter().all(|p| std::path::Path::new(p).exists()))
        .then_some((sysroot, host, gcc_dir))
}

/// The recipe of a Rust toolchain image: the agent recipe, plus the host
/// target's `rustc`, `cargo`, `rustdoc` (`cargo test` runs doctests), the
/// compiler's libraries and `rust-std`, the linker `rustc` runs (`rust-lld`
/// behind gcc's `-fuse-ld=lld`), and gcc, binutils' `ld` and libc's
/// development files for the link. No docs, sources or analysis data.
fn rust_recipe(name: &str, sysroot: &str, host: &str, gcc_dir: &str) -> String {
    let mut hosts: Vec<(String, bool, &[&str])> = vec![
        (format!("{sysroot}/bin/rustc"), true, &[]),
        (format!("{sysroot}/bin/cargo"), true, &[]),
        (format!("{sysroot}/bin/rustdoc"), true, &[]),
        // librustc_driver and libLLVM.
        (format!("{sysroot}/lib"), true, &["rustlib"]),
        // rust-std, less the sanitizer runtimes.
        (
            format!("{sysroot}/lib/rustlib/{host}/lib"),
            false,
            &["librustc-stable_rt.*"],
        ),
        (
            format!("{sysroot}/lib/rustlib/{host}/bin"),
            true,
            &["wasm-component-ld", "rust-objcopy"],
        ),
        ("/usr/bin/cc".to_string(), true, &[]),
        ("/usr/bin/ld".to_string(), true, &[]),
        // libm.so's script names libmvec, which nothing links.
        (
            "/usr/lib/x86_64-linux-gnu/libmvec.so.1".to_string(),
            false,
            &[],
        ),
        (
            "/usr/lib/x86_64-linux-gnu/libgcc_s.so.1".to_string(),
            false,
            &[],
        ),
    ];
    // gcc's driver files (with their libraries) and its startup files.
    let gcc = [
        ("collect2", true),
        ("lto-wrapper", true),
        ("liblto_plugin.so", true),
        ("crtbegin.o", false),
        ("crtbeginS.o", false),
        ("crtend.o", false),
        ("crtendS.o", false),
        ("libgcc.a", false),
        ("libgcc_eh.a", false),
        ("libgcc_s.so", false),
    ];
    hosts.extend(
        gcc.iter()
            .map(|(file, libraries)| (format!("{gcc_dir}/{file}"), *libraries, &[][..])),
    );
    // libc6-dev: the startup files and the link-time libraries std names.
    let libc = [
        "crt1.o",
        "Scrt1.o",
        "crti.o",
        "crtn.o",
        "libc.so",
        "libc_nonshared.a",
        "libm.so",
        "libdl.a",
        "libpthread.a",
        "librt.a",
        "libutil.a",
    ];
    hosts.extend(
        libc.iter()
            .map(|file| (format!("/usr/lib/x86_64-linux-gnu/{file}"), false, &[][..])),
    );
    let mut text = berth_sandbox::image::DEFAULT_RECIPE
        .replacen("name = \"berth-agent\"", &format!("name = \"{name}\""), 1)
        .replacen(
            "PATH = \"/usr/local/bin:",
            &format!("PATH = \"{sysroot}/bin:/usr/local/bin:"),
            1,
        );
    for (path, libraries, exclude) in hosts {
        let exclude = exclude
            .iter()
            .map(|e| format!("{e:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        text.push_str(&format!(
            "\n[[host]]\npath = {path:?}\nlibraries = {libraries}\nexclude = [{exclude}]\n"
        ));
    }
    text
}

/// The Rust toolchain image's repository, kept between test runs.
const RUST_IMAGE: &str = "berth-test-rust-toolchain";

/// Removes the images of `repo` other than `keep` (older toolchains). One a
/// container still uses stays: it is removed by a later run.
async fn remove_other_images(backend: &DockerBackend, repo: &str, keep: &str) {
    let filters =
        std::collections::HashMap::from([("reference".to_string(), vec![repo.to_string()])]);
    let options = bollard::query_parameters::ListImagesOptionsBuilder::default()
        .filters(&filters)
        .build();
    for image in backend.docker().list_images(Some(options)).await.unwrap() {
        if image.id != keep {
            let _ = backend
                .docker()
                .remove_image(
                    &image.id,
                    None::<bollard::query_parameters::RemoveImageOptions>,
                    None,
                )
                .await;
        }
    }
}

#[tokio::test]
async fn a_toolchain_image_from_the_recipe_runs_cargo_test_offline_as_the_berths_uid() {
    let backend = engine_or_skip!();
    let Some((sysroot, host, gcc_dir)) = host_rust() else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true and this host has no x86_64 Rust toolchain with cargo, gcc, binutils and libc6-dev"
        );
        eprintln!("skipping: no host Rust toolchain with a C linker");
        return;
    };
    // ~600 MB that take ~20 s to build: kept between runs under a fixed name.
    // Its tag hashes the recipe and every resolved host file's metadata, so a
    // toolchain or gcc upgrade builds a new image; older ones are removed.
    let recipe_text = rust_recipe(RUST_IMAGE, &sysroot, &host, &gcc_dir);
    let recipe = berth_sandbox::image::Recipe::parse(&recipe_text, "rust toolchain").unwrap();
    let started = std::time::Instant::now();
    let built = backend
        .build_image(&recipe, &mut berth_sandbox::image::NoProgress)
        .await
        .unwrap();
    eprintln!(
        "rust toolchain image: {} entries, {} bytes, {} in {:?}",
        built.entries,
        built.bytes,
        if built.up_to_date {
            "up to date"
        } else {
            "built"
        },
        started.elapsed()
    );
    remove_other_images(&backend, RUST_IMAGE, &built.id).await;
    // The compiler's two libraries alone are ~340 MB; the whole toolchain
    // directory, with docs, sources, clippy and rustfmt, well over 1 GB.
    assert!(built.bytes < 700 << 20, "{}", built.bytes);

    let uid = 100_124;
    let files = [
        (
            "Cargo.toml",
            "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        (
            "src/lib.rs",
            "/// Adds.\n///\n/// ```\n/// assert_eq!(calc::add(1, 1), 2);\n/// ```\npub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(2, 3), 5);\n    }\n\n    #[test]\n    fn formats() {\n        assert_eq!(format!(\"{:?}\", vec![super::add(1, 2)]), \"[3]\");\n    }\n}\n",
        ),
    ];
    let (_layout, berth) = up_with_project(&backend, &built.tag, "rust", uid, &files).await;
    let mut r = ExecRequest::shell("id -u; cargo test --offline 2>&1");
    r.timeout = Duration::from_secs(300);
    let started = std::time::Instant::now();
    let out = berth.exec(r, None).await.unwrap();
    let stdout = text(&out.stdout.bytes);
    eprintln!("cargo test --offline in the berth: {:?}", started.elapsed());
    assert_eq!(out.status, ExitStatus::Exited(0), "{stdout}");
    assert!(
        stdout.starts_with(&format!("{uid}\n"))
            && stdout.contains("test tests::adds ... ok")
            && stdout.contains("test tests::formats ... ok")
            && stdout.contains("test result: ok. 2 passed")
            && stdout.contains("src/lib.rs - add (line 3) ... ok"),
        "{stdout}"
    );
    // The test binary was linked in the berth, owned by the berth's uid, by
    // the host's compiler; its docs, sources and other tools stayed out.
    let host_rustc = std::process::Command::new("rustc")
        .arg("-V")
        .output()
        .unwrap();
    let out = run(
        &berth,
        &format!(
            "stat -c %u target/debug/deps/calc-* | sort -u; rustc -V; ls {sysroot}/bin; ls -d {sysroot}/share {sysroot}/lib/rustlib/src {sysroot}/lib/rustlib/etc 2>/dev/null | wc -l"
        ),
    )
    .await;
    assert_eq!(
        text(&out.stdout.bytes),
        format!(
            "{uid}\n{}cargo\nrustc\nrustdoc\n0\n",
            text(&host_rustc.stdout)
        )
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

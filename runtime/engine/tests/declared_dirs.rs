#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `[sandbox] toolchains` and `caches` in a runner berth when berth is root:
//! a declared toolchain runs but cannot be written, a declared cache takes
//! writes, and `berth up` names a declared directory the berth's uid cannot
//! reach (under a 0700 directory, as `/root` holds rustup, cargo, pyenv);
//! and, as any user, a declared toolchain's variables and programs (its
//! `path_bin` on PATH) reach its commands, a variable pointing elsewhere is
//! refused naming the file and line.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use berth_engine::AgentImpl;
use common::{Fixture, named, terminal, user};

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A temporary directory at a path shown at its own path in a runner exec
/// (not under /tmp, the berth's private one there, nor /opt, a system
/// directory shown read-only anyway).
fn host_dir(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in("/srv")
        .unwrap()
}

#[tokio::test]
async fn as_root_declared_toolchains_run_read_only_and_caches_take_writes() {
    if berth_sandbox::identity::current_uid() != 0 {
        eprintln!("skipped: berth is not root, so the user namespace maps the user's own uid");
        return;
    }
    let f = Fixture::new().await;
    f.agent("dev-1", AgentImpl::Real).await;

    let tools = host_dir("berth-toolchain-");
    // Open to all: only the read-only bind and Landlock keep the berth out.
    chmod(tools.path(), 0o777);
    std::fs::create_dir(tools.path().join("bin")).unwrap();
    chmod(&tools.path().join("bin"), 0o777);
    let hello = tools.path().join("bin/hello");
    std::fs::write(&hello, "#!/bin/sh\necho hello-from-toolchain\n").unwrap();
    chmod(&hello, 0o777);
    let cache = host_dir("berth-cache-");
    chmod(cache.path(), 0o777);
    // A toolchain below a 0700 directory inside /opt, a system directory
    // the runner shows as it is: out of the berth's reach, and named.
    let closed = tempfile::Builder::new()
        .prefix("berth-closed-")
        .tempdir_in("/opt")
        .unwrap();
    chmod(closed.path(), 0o700);
    let hidden = closed.path().join("toolchain");
    std::fs::create_dir(&hidden).unwrap();
    chmod(&hidden, 0o755);
    // One below a 0700 directory no other shown directory holds (as
    // /root/.cargo below /root): its ancestors are made fresh, it runs.
    let fenced = host_dir("berth-fenced-");
    chmod(fenced.path(), 0o700);
    let reached = fenced.path().join("toolchain");
    std::fs::create_dir(&reached).unwrap();
    chmod(&reached, 0o755);
    for dir in [&hidden, &reached] {
        std::fs::write(dir.join("h"), "#!/bin/sh\necho reached\n").unwrap();
        chmod(&dir.join("h"), 0o755);
    }

    let cfg = f.dir.path().join("state/projects/demo/berth.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    let text = text
        .replacen(
            "toolchains = []",
            &format!(
                "toolchains = [{:?}, {:?}, {:?}]",
                tools.path().display().to_string(),
                hidden.display().to_string(),
                reached.display().to_string()
            ),
            1,
        )
        .replacen(
            "caches = []",
            &format!("caches = [{:?}]", cache.path().display().to_string()),
            1,
        );
    assert!(text.contains(&hidden.display().to_string()), "{text}");
    std::fs::write(&cfg, text).unwrap();

    let info = f
        .engine
        .up(
            &named("dev-1"),
            &named("demo"),
            Some(berth_engine::BerthMode::Runner),
            &user(),
        )
        .await
        .unwrap();
    let note = info.note.unwrap_or_default();
    let blocked = format!("{} is 0700", closed.path().display());
    assert!(
        note.contains(&blocked) && note.contains(&hidden.display().to_string()),
        "the note names the unreachable toolchain and what blocks it: {note}"
    );
    for reachable in [tools.path(), reached.as_path()] {
        assert!(
            !note.contains(&format!("toolchain {}", reachable.display())),
            "a reachable toolchain is not named: {note}"
        );
    }

    let (code, out, err) = terminal(&f.engine, "dev-1", &hello.display().to_string()).await;
    assert_eq!((code, out.as_str()), (0, "hello-from-toolchain\n"), "{err}");

    let planted = tools.path().join("bin/planted");
    let (code, _, _) = terminal(
        &f.engine,
        "dev-1",
        &format!("echo x > {}", planted.display()),
    )
    .await;
    assert_ne!(code, 0, "a toolchain is read-only");
    assert!(!planted.exists());
    let (code, _, _) = terminal(
        &f.engine,
        "dev-1",
        &format!("echo x >> {}", hello.display()),
    )
    .await;
    assert_ne!(code, 0, "a toolchain's programs are read-only");
    assert_eq!(
        std::fs::read_to_string(&hello).unwrap(),
        "#!/bin/sh\necho hello-from-toolchain\n"
    );

    // What the note says holds: the berth's uid cannot run it.
    let (code, _, err) =
        terminal(&f.engine, "dev-1", &hidden.join("h").display().to_string()).await;
    assert_ne!(code, 0, "the unreachable toolchain ran");
    assert!(err.contains("Permission denied"), "{err}");
    let (code, out, err) =
        terminal(&f.engine, "dev-1", &reached.join("h").display().to_string()).await;
    assert_eq!((code, out.as_str()), (0, "reached\n"), "{err}");
    let cached = cache.path().join("c.txt");
    let (code, _, err) = terminal(
        &f.engine,
        "dev-1",
        &format!("echo cached > {}", cached.display()),
    )
    .await;
    assert_eq!(code, 0, "a cache takes writes: {err}");
    assert_eq!(std::fs::read_to_string(&cached).unwrap(), "cached\n");
}

/// Writes `line` over the `key = …` line of project `demo`'s berth.toml.
fn set_line(f: &Fixture, key: &str, line: &str) -> std::path::PathBuf {
    let cfg = f.dir.path().join("state/projects/demo/berth.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    let start = text.find(&format!("\n{key} = ")).unwrap() + 1;
    let end = text[start..].find('\n').unwrap() + start;
    let mut text = text;
    text.replace_range(start..end, line);
    std::fs::write(&cfg, text).unwrap();
    cfg
}

async fn up_runner(f: &Fixture) -> Result<berth_engine::BerthInfo, berth_engine::EngineError> {
    f.engine
        .up(
            &named("dev-1"),
            &named("demo"),
            Some(berth_engine::BerthMode::Runner),
            &user(),
        )
        .await
}

#[tokio::test]
async fn a_declared_toolchain_carries_its_variables_and_its_programs_run_by_name() {
    let f = Fixture::new().await;
    f.agent("dev-1", AgentImpl::Real).await;
    let tools = host_dir("berth-toolchain-");
    chmod(tools.path(), 0o755);
    std::fs::create_dir(tools.path().join("bin")).unwrap();
    chmod(&tools.path().join("bin"), 0o755);
    let hello = tools.path().join("bin/hello");
    std::fs::write(&hello, "#!/bin/sh\necho \"hello from $RUSTUP_HOME\"\n").unwrap();
    chmod(&hello, 0o755);
    let path = tools.path().display().to_string();

    // A variable the policy reads as changing what runs may only point into
    // declared directories: refused at `up`, naming the file and the line.
    let cfg = set_line(
        &f,
        "toolchains",
        &format!(
            "toolchains = [{{ path = {path:?}, env = {{ RUSTUP_HOME = \"/root/.rustup\" }} }}]"
        ),
    );
    let line = std::fs::read_to_string(&cfg)
        .unwrap()
        .lines()
        .position(|l| l.starts_with("toolchains = "))
        .unwrap()
        + 1;
    let err = up_runner(&f).await.unwrap_err().to_string();
    for want in [
        format!("{}:{line}:", cfg.display()),
        "RUSTUP_HOME".to_string(),
        "\"/root/.rustup\" is not in one".to_string(),
    ] {
        assert!(err.contains(&want), "{want:?} not in {err}");
    }
    // PATH is berth's: the table's `path_bin` appends to it.
    set_line(
        &f,
        "toolchains",
        &format!("toolchains = [{{ path = {path:?}, env = {{ PATH = \"{{path}}/bin\" }} }}]"),
    );
    let err = up_runner(&f).await.unwrap_err().to_string();
    assert!(err.contains("path_bin"), "{err}");

    set_line(
        &f,
        "toolchains",
        &format!(
            "toolchains = [{{ path = {path:?}, env = {{ RUSTUP_HOME = \"{{path}}\" }}, path_bin = \"bin\" }}]"
        ),
    );
    up_runner(&f).await.unwrap();
    let (code, out, err) = terminal(&f.engine, "dev-1", "hello").await;
    assert_eq!(
        (code, out.as_str()),
        (0, format!("hello from {path}\n").as_str()),
        "{err}"
    );
    let (code, out, err) = terminal(&f.engine, "dev-1", "echo \"$PATH\"").await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.trim_end().ends_with(&format!(":{path}/bin")),
        "the toolchain's programs come last on PATH: {out}"
    );
}

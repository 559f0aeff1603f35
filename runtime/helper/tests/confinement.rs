//! What `berth-helper` can reach once confined, asked through its `probe`
//! subcommand: only its ruleset's directories (writing only the writable
//! ones), never a host file — a root-only one included, even when it runs as
//! root — and as the target uid when it starts as root.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

const HELPER: &str = env!("CARGO_BIN_EXE_berth-helper");

fn is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

/// Outside CI a non-root run skips; under `CI=true` it fails.
fn require_root(test: &str) -> bool {
    if !is_root() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{test} needs root and CI=true is set"
        );
        eprintln!("skipping {test}: not running as root");
    }
    is_root()
}

fn run(sub: &str, request: &Value) -> (i32, String, String) {
    let mut child = Command::new(HELPER)
        .arg(sub)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A helper that refuses before reading closes the pipe early.
    let _ = child
        .stdin
        .take()
        .unwrap()
        .write_all(request.to_string().as_bytes());
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A tree: `rw/` (writable), `ro/` (readable), `other/` (neither), each
/// holding `f`; `other/secret` is root-only.
struct Tree {
    tmp: tempfile::TempDir,
}

impl Tree {
    fn new() -> Tree {
        let tmp = tempfile::tempdir().unwrap();
        for d in ["rw", "ro", "other"] {
            std::fs::create_dir(tmp.path().join(d)).unwrap();
            std::fs::write(tmp.path().join(d).join("f"), "data\n").unwrap();
            std::fs::set_permissions(
                tmp.path().join(d).join("f"),
                std::fs::Permissions::from_mode(0o644),
            )
            .unwrap();
        }
        let secret = tmp.path().join("other/secret");
        std::fs::write(&secret, "root only\n").unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        Tree { tmp }
    }
    fn p(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }
}

fn probe(tree: &Tree, uid: Option<u32>, read: &[PathBuf], write: &[PathBuf]) -> Value {
    let request = json!({
        "confinement": {
            "uid": uid, "gid": uid,
            "read": [tree.p("ro")],
            "write": [tree.p("rw")],
        },
        "read": read,
        "write": write,
    });
    let (code, out, err) = run("probe", &request);
    assert_eq!(code, 0, "probe failed: {out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    v["ok"].clone()
}

/// Refused by Landlock or the uid, or not even there (the helper's own mount
/// namespace hides what it does not need).
fn denied(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| s.contains("Permission denied") || s.contains("No such file"))
}

fn check_confined(tree: &Tree, uid: Option<u32>) -> Value {
    let shadow = Path::new("/etc/shadow");
    let reads = vec![
        tree.p("rw/f"),
        tree.p("ro/f"),
        tree.p("other/f"),
        tree.p("other/secret"),
        PathBuf::from("/etc/hostname"),
        shadow.to_path_buf(),
    ];
    let writes = vec![
        tree.p("rw/new"),
        tree.p("ro/new"),
        tree.p("other/new"),
        tree.p("other/f"),
    ];
    let got = probe(tree, uid, &reads, &writes);
    let r = got["read"].as_array().unwrap();
    let w = got["write"].as_array().unwrap();
    assert_eq!(r[0], "ok", "{got}");
    assert_eq!(r[1], "ok", "{got}");
    for (i, what) in [(2, "a readable file outside"), (3, "a root-only file")] {
        assert!(denied(&r[i]), "{what} was readable: {got}");
    }
    if Path::new("/etc/hostname").exists() {
        assert!(denied(&r[4]), "/etc/hostname was readable: {got}");
    }
    if shadow.exists() {
        assert!(denied(&r[5]), "/etc/shadow was readable: {got}");
    }
    assert_eq!(w[0], "ok", "{got}");
    for i in 1..4 {
        assert!(
            denied(&w[i]),
            "write {} allowed: {got}",
            writes[i].display()
        );
    }
    assert!(!tree.p("ro/new").exists() && !tree.p("other/new").exists());
    assert_eq!(
        std::fs::read_to_string(tree.p("other/f")).unwrap(),
        "data\n"
    );
    got
}

#[test]
fn landlock_alone_keeps_the_helper_to_its_directories_even_as_root() {
    let tree = Tree::new();
    check_confined(&tree, None);
}

#[test]
fn as_root_it_becomes_the_target_uid_before_opening_anything() {
    if !require_root("as_root_it_becomes_the_target_uid_before_opening_anything") {
        return;
    }
    let tree = Tree::new();
    // The tree's root stays 0700 (root's): the helper reaches its two
    // directories through its own mount namespace.
    std::fs::set_permissions(tree.tmp.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let status = Command::new("chown")
        .args(["-R", "1000:1000"])
        .arg(tree.p("rw"))
        .status()
        .unwrap();
    assert!(status.success());
    let got = check_confined(&tree, Some(1000));
    assert_eq!(got["uid"], 1000, "{got}");
    assert_eq!(got["gid"], 1000, "{got}");
    let made = std::fs::metadata(tree.p("rw/new")).unwrap();
    assert_eq!((made.uid(), made.gid()), (1000, 1000));
}

#[test]
fn it_refuses_to_run_as_uid_0_and_bad_requests() {
    let tree = Tree::new();
    let request = json!({
        "confinement": {"uid": 0, "gid": 0, "read": [], "write": [tree.p("rw")]},
        "read": [], "write": [],
    });
    let (code, out, err) = run("probe", &request);
    assert_ne!(code, 0);
    let msg = format!("{out}{err}");
    assert!(msg.contains("uid 0") || msg.contains("not root"), "{msg}");

    let (code, _, err) = run("probe", &json!({"nonsense": true}));
    assert_eq!(code, 1);
    assert!(err.contains("parsing the request"), "{err}");

    let (code, _, err) = run("no-such-thing", &json!({}));
    assert_eq!(code, 2);
    assert!(err.contains("unknown subcommand"), "{err}");

    // A ruleset directory that is a link is refused, not followed.
    let link = tree.p("link");
    std::os::unix::fs::symlink(tree.p("other"), &link).unwrap();
    let request = json!({
        "confinement": {"uid": null, "gid": null, "read": [], "write": [link]},
        "read": [], "write": [],
    });
    let (code, out, err) = run("probe", &request);
    assert_ne!(code, 0, "{out}");
    assert!(err.contains("for the ruleset"), "{err}");
}

//! The confined file actions on real directories and links: what stays
//! beneath a mount is read and written, what a link leads out of it — `..`,
//! absolute targets, `/proc`'s magic links, a dangling link, a parent that is
//! a link — is refused with the link and its target named, and nothing
//! outside is read, created or changed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::{MetadataExt, symlink};
use std::path::{Path, PathBuf};

use berth_sandbox::confined_files::{ConfinedFiles, FileMount, LinkTargets};
use berth_sandbox::{FileActionError, FileContent, FileOp};

struct Tree {
    _dir: tempfile::TempDir,
    wt: PathBuf,
    outside: PathBuf,
}

/// `base/wt` is the worktree (`/work`), `base/outside` holds `secret`.
fn tree() -> Tree {
    let dir = tempfile::Builder::new()
        .prefix("berth-confined-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let wt = base.join("wt");
    let outside = base.join("outside");
    std::fs::create_dir_all(wt.join("sub/deeper")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret"), "outside secret\n").unwrap();
    std::fs::write(wt.join("sub/deeper/f.txt"), "inside\n").unwrap();
    Tree {
        _dir: dir,
        wt,
        outside,
    }
}

fn files(wt: &Path, targets: LinkTargets) -> ConfinedFiles {
    ConfinedFiles::new(
        vec![FileMount {
            frame: "/work".into(),
            host: wt.to_path_buf(),
            writable: true,
        }],
        targets,
    )
}

fn text(read: berth_sandbox::FileRead) -> String {
    match read.content {
        FileContent::File(b) => String::from_utf8(b).unwrap(),
        FileContent::Listing(l) => l,
    }
}

/// The refusal of a read or write that a link leads out of the mount.
fn escape(r: Result<impl std::fmt::Debug, FileActionError>) -> String {
    match r {
        Err(e @ FileActionError::Escape { .. }) => {
            let m = e.to_string();
            assert!(m.contains("refused, nothing was"), "{m}");
            m
        }
        other => panic!("expected an escape refusal, got {other:?}"),
    }
}

#[test]
fn reads_lists_and_writes_beneath_the_mount() {
    let t = tree();
    let f = files(&t.wt, LinkTargets::Host);
    let r = f.read("/work/sub/deeper/f.txt").unwrap();
    assert_eq!(r.host_path, t.wt.join("sub/deeper/f.txt"));
    assert_eq!(text(r), "inside\n");
    symlink("deeper/f.txt", t.wt.join("sub/rel")).unwrap();
    // A relative link that stays inside is followed, beneath the root.
    assert_eq!(text(f.read("/work/sub/rel").unwrap()), "inside\n");
    assert_eq!(
        text(f.read("/work/sub").unwrap()),
        "deeper/\nrel@\n",
        "sorted, `/` after dirs, `@` after links"
    );
    let w = f.write("/work/sub/new.txt", b"n").unwrap();
    assert!(w.created);
    assert_eq!(std::fs::read(t.wt.join("sub/new.txt")).unwrap(), b"n");
    let w = f
        .write("/work/sub/new.txt", b"shorter? no: longer")
        .unwrap();
    assert!(!w.created);
    assert_eq!(
        std::fs::read_to_string(t.wt.join("sub/new.txt")).unwrap(),
        "shorter? no: longer"
    );
    f.write("/work/sub/new.txt", b"x").unwrap();
    assert_eq!(std::fs::read(t.wt.join("sub/new.txt")).unwrap(), b"x");
}

#[test]
fn dot_dot_never_leaves_the_mount() {
    let t = tree();
    let f = files(&t.wt, LinkTargets::Host);
    // Lexically outside: on no mount at all.
    let e = f.read("/work/../outside/secret").unwrap_err();
    assert!(
        matches!(e, FileActionError::NotOnMount { .. }),
        "{e}: {e:?}"
    );
    // Through a relative link: refused, the link and target named.
    symlink("../outside", t.wt.join("up")).unwrap();
    let m = escape(f.read("/work/up/secret"));
    assert!(m.contains("/work/up -> ../outside"), "{m}");
    assert!(!m.contains("outside secret"), "{m}");
    symlink("../../../outside/secret", t.wt.join("sub/deeper/back")).unwrap();
    escape(f.read("/work/sub/deeper/back"));
}

#[test]
fn absolute_links_are_host_paths_in_the_runner_and_container_paths_in_a_container() {
    let t = tree();
    symlink(&t.outside, t.wt.join("abs")).unwrap();
    let host = files(&t.wt, LinkTargets::Host);
    let m = escape(host.read("/work/abs/secret"));
    assert!(
        m.contains(&format!(
            "resolves to {}",
            t.outside.join("secret").display()
        )),
        "{m}"
    );
    // Host mode: a link to the worktree's own host path stays inside.
    symlink(t.wt.join("sub"), t.wt.join("self")).unwrap();
    assert_eq!(
        text(host.read("/work/self/deeper/f.txt").unwrap()),
        "inside\n"
    );

    let container = files(&t.wt, LinkTargets::Frame);
    symlink("/", t.wt.join("rootfs")).unwrap();
    symlink("/etc/hostname", t.wt.join("hostinfo")).unwrap();
    let m = escape(container.read("/work/hostinfo"));
    assert!(m.contains("resolves to /etc/hostname"), "{m}");
    assert!(m.contains("/work/hostinfo -> /etc/hostname"), "{m}");
    escape(container.read("/work/rootfs"));
    escape(container.read("/work/rootfs/etc"));
    // A container path into /work is followed there (and only there).
    symlink("/work/sub", t.wt.join("in")).unwrap();
    let r = container.read("/work/in/deeper/f.txt").unwrap();
    assert_eq!(r.host_path, t.wt.join("sub/deeper/f.txt"));
    assert_eq!(text(r), "inside\n");
    container.write("/work/in/made.txt", b"m").unwrap();
    assert!(t.wt.join("sub/made.txt").is_file());
}

#[test]
fn magic_links_are_never_followed() {
    let t = tree();
    symlink("/proc/self/root", t.wt.join("magic")).unwrap();
    for targets in [LinkTargets::Host, LinkTargets::Frame] {
        let f = files(&t.wt, targets);
        escape(f.read("/work/magic/etc/hostname"));
        escape(f.write("/work/magic/tmp/planted", b"x"));
    }
    // Even with /proc beneath the mount's root, a magic link is refused.
    let procs = ConfinedFiles::new(
        vec![FileMount {
            frame: "/p".into(),
            host: "/proc/self".into(),
            writable: false,
        }],
        LinkTargets::Frame,
    );
    let e = procs.read("/p/root/etc/hostname").unwrap_err();
    assert!(matches!(e, FileActionError::Escape { .. }), "{e}: {e:?}");
    assert!(procs.read("/p/cwd").is_err());
}

#[test]
fn a_dangling_link_or_a_linked_parent_is_never_written_through() {
    let t = tree();
    let f = files(&t.wt, LinkTargets::Host);
    symlink(t.outside.join("created"), t.wt.join("dangling")).unwrap();
    let m = escape(f.write("/work/dangling", b"x"));
    assert!(m.contains("nothing was written"), "{m}");
    assert!(!t.outside.join("created").exists());

    symlink(&t.outside, t.wt.join("d")).unwrap();
    escape(f.write("/work/d/notes.txt", b"x"));
    escape(f.write("/work/d/new/dir/notes.txt", b"x"));
    assert!(!t.outside.join("notes.txt").exists());
    assert!(!t.outside.join("new").exists());
    // A link to an existing file outside: not changed.
    symlink(t.outside.join("secret"), t.wt.join("s")).unwrap();
    escape(f.write("/work/s", b"x"));
    assert_eq!(
        std::fs::read_to_string(t.outside.join("secret")).unwrap(),
        "outside secret\n"
    );
    // A dangling link that stays inside creates its target inside.
    symlink("sub/target.txt", t.wt.join("in-dangling")).unwrap();
    f.write("/work/in-dangling", b"in").unwrap();
    assert_eq!(std::fs::read(t.wt.join("sub/target.txt")).unwrap(), b"in");
}

#[test]
fn deep_parents_are_created_beneath_and_handed_to_the_owner() {
    let t = tree();
    let root = std::fs::metadata("/proc/self").unwrap().uid() == 0;
    let f = files(&t.wt, LinkTargets::Frame).with_owner(54321, 54322);
    let deep = "/work/a/b/c/d/e/f/g/h/i/j/file.txt";
    let w = f.write(deep, b"deep").unwrap();
    assert!(w.created);
    assert_eq!(w.host_path, t.wt.join("a/b/c/d/e/f/g/h/i/j/file.txt"));
    if root {
        for p in [
            "a",
            "a/b/c",
            "a/b/c/d/e/f/g/h/i/j",
            "a/b/c/d/e/f/g/h/i/j/file.txt",
        ] {
            let meta = std::fs::metadata(t.wt.join(p)).unwrap();
            assert_eq!((meta.uid(), meta.gid()), (54321, 54322), "{p}");
        }
        // What existed keeps its owner.
        assert_ne!(std::fs::metadata(&t.wt).unwrap().uid(), 54321);
    }
}

#[test]
fn reads_are_bounded_and_only_of_files_and_directories() {
    let t = tree();
    let f = files(&t.wt, LinkTargets::Host);
    let big = std::fs::File::create(t.wt.join("big")).unwrap();
    big.set_len(berth_sandbox::confined_files::MAX_READ + 1)
        .unwrap();
    let e = f.read("/work/big").unwrap_err();
    assert!(matches!(e, FileActionError::TooLarge { .. }), "{e}");
    let made = std::process::Command::new("mkfifo")
        .arg(t.wt.join("fifo"))
        .status()
        .unwrap();
    assert!(made.success());
    // A named pipe neither blocks the read nor the write.
    let e = f.read("/work/fifo").unwrap_err();
    assert!(e.to_string().contains("named pipe"), "{e}");
    assert!(f.write("/work/fifo", b"x").is_err());
    // A hard link is a second name for one file: not written.
    std::fs::write(t.wt.join("one"), "1").unwrap();
    std::fs::hard_link(t.wt.join("one"), t.wt.join("two")).unwrap();
    let e = f.write("/work/two", b"x").unwrap_err();
    assert!(matches!(e, FileActionError::HardLinked { .. }), "{e}");
    assert_eq!(std::fs::read(t.wt.join("one")).unwrap(), b"1");
}

#[test]
fn a_read_only_mount_refuses_writes() {
    let t = tree();
    let f = ConfinedFiles::new(
        vec![FileMount {
            frame: "/state/forge/p.git/objects".into(),
            host: t.wt.clone(),
            writable: false,
        }],
        LinkTargets::Frame,
    );
    assert!(
        f.check("/state/forge/p.git/objects/planted", FileOp::Write)
            .is_none(),
        "inside its mount: the write is refused as read-only, not as an escape"
    );
    let e = f
        .write("/state/forge/p.git/objects/planted", b"x")
        .unwrap_err();
    assert!(matches!(e, FileActionError::ReadOnly { .. }), "{e}");
    assert!(e.to_string().contains("read-only"), "{e}");
    assert!(!t.wt.join("planted").exists());
    assert!(
        f.read("/state/forge/p.git/objects/sub/deeper/f.txt")
            .is_ok()
    );
}

#[test]
fn the_decision_time_check_names_where_a_path_leads() {
    let t = tree();
    let f = files(&t.wt, LinkTargets::Frame);
    symlink("/etc", t.wt.join("etc")).unwrap();
    symlink("sub", t.wt.join("inner")).unwrap();
    symlink("loop", t.wt.join("loop")).unwrap();
    assert!(f.check("/work/sub/deeper/f.txt", FileOp::Read).is_none());
    assert!(f.check("/work/missing/new.txt", FileOp::Write).is_none());
    assert!(f.check("/work/inner/deeper", FileOp::Read).is_none());
    assert!(
        f.check("/etc/passwd", FileOp::Read).is_none(),
        "on no mount: the decision's business"
    );
    let e = f.check("/work/etc/shadow", FileOp::Read).unwrap();
    let m = e.to_string();
    assert!(
        m.contains(
            "/work/etc/shadow resolves to /etc/shadow through the link(s) /work/etc -> /etc"
        ),
        "{m}"
    );
    let e = f.check("/work/loop", FileOp::Write).unwrap();
    assert!(e.to_string().contains("links"), "{e}");
    let r = f.resolve("/work/inner/deeper/../x").unwrap();
    assert_eq!(r.resolved, "/work/sub/x", "lexical `..` first, as decided");
}

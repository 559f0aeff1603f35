#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The berth's own disk through the engine, runner mode (mounted mode's are
//! in `mounted.rs`): with berth as root, `up` mounts a loop-backed ext4 image
//! of `[sandbox] disk` at the berth's directory, where the worktree and the
//! agent repository are made (and a runner berth's `$HOME` and `/tmp`);
//! a write past its size stops with ENOSPC and
//! the host's disk outside the image does not grow; file creation stops at
//! `disk_inodes`; `down` leaves no mount, no loop device and no image; a
//! checkout bigger than the disk fails `up` naming the key, losing nothing;
//! reconcile removes a disk a crash left and mounts a kept one again; two
//! berths' disks are copies of one template, each with a UUID of its own.
//!
//! Real loop devices: without root, `/dev/loop-control` or `mkfs.ext4` the
//! tests skip with the reason, except under `CI=true`, where they fail.

use crate::common;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use berth_engine::{AgentImpl, BerthMode};
use berth_sandbox::disk;
use common::{Fixture, git, named, terminal, user};

/// Whether this host can give berths a disk; panics under `CI=true` when not.
pub(crate) fn loop_devices() -> bool {
    match disk::unavailable() {
        None => true,
        Some(why) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true and berths cannot get a disk of their own here: {why}")
        }
        Some(why) => {
            eprintln!("skipping: {why}");
            false
        }
    }
}

/// Sets `[sandbox] key = value` in project `demo`'s berth.toml.
pub(crate) fn set_sandbox(state: &Path, key: &str, value: &str) {
    let cfg = state.join("projects/demo/berth.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    let start = text
        .find(&format!("\n{key} = "))
        .unwrap_or_else(|| panic!("the embedded berth.toml documents {key}"));
    let end = text[start + 1..].find('\n').unwrap() + start + 1;
    let mut text = text;
    text.replace_range(start + 1..end, &format!("{key} = {value}"));
    std::fs::write(&cfg, text).unwrap();
}

struct Paths {
    berth_dir: PathBuf,
    image: PathBuf,
}

fn paths(f: &Fixture, agent: &str) -> Paths {
    let state = f.dir.path().join("state");
    Paths {
        berth_dir: state.join("berths/demo").join(agent),
        image: state.join("disks/demo").join(format!("{agent}.img")),
    }
}

/// Bytes the host gives the file (its allocated blocks, not its length).
fn allocated(path: &Path) -> u64 {
    std::fs::metadata(path)
        .map(|m| m.blocks() * 512)
        .unwrap_or(0)
}

/// Bytes allocated under `dir`, not crossing into other file systems.
fn allocated_under(dir: &Path) -> u64 {
    let out = std::process::Command::new("du")
        .args(["-s", "-x", "-B1"])
        .arg(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Asserts the berth's disk is gone: no mount, no loop device on its image,
/// no image, no berth directory.
fn assert_released(p: &Paths) {
    assert!(
        disk::mounted_at(&p.berth_dir).unwrap().is_none(),
        "still mounted"
    );
    assert_eq!(disk::loops_backed_by(&p.image), Vec::<PathBuf>::new());
    assert!(!p.image.exists(), "the image is still there");
    assert!(
        !p.berth_dir.exists(),
        "the berth's directory is still there"
    );
}

async fn fixture(disk_size: &str, inodes: u64) -> Option<Fixture> {
    if !loop_devices() {
        return None;
    }
    let f = Fixture::new().await;
    let state = f.dir.path().join("state");
    set_sandbox(&state, "disk", &format!("\"{disk_size}\""));
    set_sandbox(&state, "disk_inodes", &inodes.to_string());
    f.agent("dev-1", AgentImpl::Real).await;
    Some(f)
}

#[tokio::test]
async fn a_runner_berths_disk_stops_bytes_and_files_at_its_limits_and_down_leaves_nothing() {
    let Some(f) = fixture("64MiB", 4096).await else {
        return;
    };
    let info = f
        .engine
        .up(
            &named("dev-1"),
            &named("demo"),
            Some(BerthMode::Runner),
            &user(),
        )
        .await
        .unwrap();
    let p = paths(&f, "dev-1");
    let note = info.note.clone().unwrap_or_default();
    assert!(!note.contains("not limited"), "{note}");
    // The worktree and the agent repository are on the disk, mounted
    // nosuid,nodev at the berth's directory.
    let mount = disk::mounted_at(&p.berth_dir).unwrap().expect("mounted");
    assert_eq!(mount.fs_type, "ext4");
    for option in ["nosuid", "nodev"] {
        assert!(mount.options.split(',').any(|o| o == option), "{mount:?}");
    }
    assert_eq!(info.worktree.as_deref(), Some(&*p.berth_dir.join("dev-1")));
    assert!(p.berth_dir.join("dev-1.git").is_dir());
    let usage = disk::usage(&p.berth_dir).unwrap();
    assert!(
        usage.bytes_total <= 64 << 20 && usage.bytes_total > 48 << 20,
        "{usage:?}"
    );

    // Past the size: ENOSPC for the agent; the image holds at most its
    // size on the host, and nothing else of the state directory grew.
    let state = f.dir.path().join("state");
    let outside_before = allocated_under(&state) - allocated(&p.image);
    let (code, _, stderr) = terminal(
        &f.engine,
        "dev-1",
        "dd if=/dev/zero of=/work/big bs=1M count=200",
    )
    .await;
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    let image = allocated(&p.image);
    assert!(
        image <= (64 << 20) + (1 << 20),
        "the image takes {image} bytes"
    );
    let outside_after = allocated_under(&state) - image;
    assert!(
        outside_after < outside_before + (8 << 20),
        "the state directory grew from {outside_before} to {outside_after} bytes outside the disk"
    );
    // berth's own store still records (this command's result is stored).
    let (code, out, _) = terminal(&f.engine, "dev-1", "rm /work/big && echo gone").await;
    assert_eq!((code, out.as_str()), (0, "gone\n"));

    // Files: creation stops near disk_inodes with ENOSPC.
    let (code, out, stderr) = terminal(
        &f.engine,
        "dev-1",
        "mkdir /work/many && cd /work/many && i=0; while true > f$i 2>/dev/null; do i=$((i+1)); [ $i -gt 100000 ] && break; done; echo $i; true > one-more",
    )
    .await;
    let made: u64 = out
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{out:?} {stderr}"));
    assert!((1000..8192).contains(&made), "{made} files were made");
    assert_ne!(code, 0);
    assert!(stderr.contains("No space left on device"), "{stderr}");

    // A full disk: nothing can be saved from it, and `down` says so
    // (keeping the worktree) until told to discard.
    let refused = f
        .engine
        .down(&named("dev-1"), false, &berth_engine::Actor::current_user())
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("--discard"), "{refused}");
    assert!(p.berth_dir.join("dev-1/many").is_dir(), "nothing removed");
    f.engine
        .down_with(
            &named("dev-1"),
            false,
            true,
            &berth_engine::Actor::current_user(),
        )
        .await
        .unwrap();
    assert_released(&p);
}

#[tokio::test]
async fn a_runner_berths_home_and_tmp_are_on_its_disk_and_go_with_it() {
    let Some(f) = fixture("64MiB", 4096).await else {
        return;
    };
    f.engine
        .up(
            &named("dev-1"),
            &named("demo"),
            Some(BerthMode::Runner),
            &user(),
        )
        .await
        .unwrap();
    let p = paths(&f, "dev-1");
    let state = f.dir.path().join("state");
    // $HOME is the berth's `.home`, on its disk (the same file system as
    // the worktree), as /tmp is its `.tmp`.
    let (code, out, stderr) = terminal(
        &f.engine,
        "dev-1",
        "echo \"$HOME\"; stat -c %d \"$HOME\" /tmp /work",
    )
    .await;
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], p.berth_dir.join(".home").to_str().unwrap());
    assert!(
        lines[1] == lines[2] && lines[2] == lines[3],
        "$HOME, /tmp and /work on one device: {out}"
    );
    let outside_before = allocated_under(&state) - allocated(&p.image);
    for (place, path) in [("$HOME", "\"$HOME/big\""), ("/tmp", "/tmp/big")] {
        let (code, _, stderr) = terminal(
            &f.engine,
            "dev-1",
            &format!("dd if=/dev/zero of={path} bs=1M count=200"),
        )
        .await;
        assert_ne!(code, 0, "{place}: {stderr}");
        assert!(
            stderr.contains("No space left on device"),
            "{place}: {stderr}"
        );
        let outside_after = allocated_under(&state) - allocated(&p.image);
        assert!(
            outside_after < outside_before + (8 << 20),
            "{place}: the state directory grew from {outside_before} to {outside_after} bytes outside the disk"
        );
        let (code, _, stderr) = terminal(&f.engine, "dev-1", &format!("rm {path}")).await;
        assert_eq!(code, 0, "{stderr}");
    }
    let (code, _, stderr) =
        terminal(&f.engine, "dev-1", "echo kept > \"$HOME/.profile-ish\"").await;
    assert_eq!(code, 0, "{stderr}");
    // Kept across `down --keep-worktree`, gone with the worktree at `down`.
    f.engine.down(&named("dev-1"), true, &user()).await.unwrap();
    assert!(p.berth_dir.join(".home/.profile-ish").is_file());
    f.engine
        .down(&named("dev-1"), false, &user())
        .await
        .unwrap();
    assert_released(&p);
    assert!(!state.join("homes").exists(), "nothing in <state>/homes");
}

/// A source whose only file is `mib` MiB of zeros (tiny in git, that size
/// at checkout).
fn large_file_source(root: &Path, mib: usize) -> PathBuf {
    let src = root.join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("zeros.bin"), vec![0u8; mib << 20]).unwrap();
    git(&src, &["init", "-q"]);
    git(&src, &["add", "-A"]);
    git(&src, &["commit", "-q", "-m", "a large file"]);
    src
}

#[tokio::test]
async fn up_refuses_a_checkout_bigger_than_the_disk_naming_the_key_and_loses_nothing() {
    if !loop_devices() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = large_file_source(dir.path(), 48);
    let f = Fixture::from_source(dir, src).await;
    let state = f.dir.path().join("state");
    set_sandbox(&state, "disk", "\"32MiB\"");
    f.agent("dev-1", AgentImpl::Real).await;
    let p = paths(&f, "dev-1");

    let err = f
        .engine
        .up(
            &named("dev-1"),
            &named("demo"),
            Some(BerthMode::Runner),
            &user(),
        )
        .await
        .unwrap_err()
        .to_string();
    for want in [
        "[sandbox] disk = \"32MiB\"",
        "needs at least 48.0 MiB",
        "raise [sandbox] disk",
        "nothing was lost",
    ] {
        assert!(err.contains(want), "{want:?} not in {err}");
    }
    assert_released(&p);
    let a = f.engine.agent("dev-1").await.unwrap();
    assert_eq!((a.berth, a.worktree), (None, None));

    // Raised, the same berth comes up with the file.
    set_sandbox(&state, "disk", "\"128MiB\"");
    let info = f
        .engine
        .up(
            &named("dev-1"),
            &named("demo"),
            Some(BerthMode::Runner),
            &user(),
        )
        .await
        .unwrap();
    let worktree = info.worktree.unwrap();
    assert_eq!(
        std::fs::metadata(worktree.join("zeros.bin")).unwrap().len(),
        48 << 20
    );
    assert!(disk::mounted_at(&p.berth_dir).unwrap().is_some());
}

#[tokio::test]
async fn reconcile_removes_a_disk_a_crash_left_and_mounts_a_kept_one_again() {
    let Some(f) = fixture("64MiB", 4096).await else {
        return;
    };
    let kept = paths(&f, "dev-1");
    let info = f
        .engine
        .up(
            &named("dev-1"),
            &named("demo"),
            Some(BerthMode::Runner),
            &user(),
        )
        .await
        .unwrap();
    let worktree = info.worktree.unwrap();
    let (code, _, stderr) = terminal(&f.engine, "dev-1", "echo mine > /work/kept.txt").await;
    assert_eq!(code, 0, "{stderr}");

    // A berth process killed between mounting dev-2's disk and recording
    // its worktree: a mount and an image nothing in the store names.
    f.agent("dev-2", AgentImpl::Real).await;
    let orphan = paths(&f, "dev-2");
    disk::attach(&disk::DiskSpec {
        image: orphan.image.clone(),
        mount_point: orphan.berth_dir.clone(),
        bytes: 64 << 20,
        inodes: 4096,
        templates: None,
    })
    .unwrap();
    // A reboot: every process ends (dev-1's resident, which binds its
    // directories, too); dev-1's disk is no longer mounted, its worktree
    // not there.
    let state = f.dir.path().join("state");
    let scope = berth_sandbox::provider::cgroup_scope(
        &berth_sandbox::provider::instance_of(&state),
        "demo",
    );
    berth_sandbox::runner::end_berth_processes(
        &state.join("residents/demo/dev-1"),
        &scope,
        "dev-1",
    )
    .unwrap();
    let st = std::process::Command::new("umount")
        .arg(&kept.berth_dir)
        .status()
        .unwrap();
    assert!(st.success());
    assert!(!worktree.join("kept.txt").exists());

    let mut report: Vec<(String, &str)> = f
        .engine
        .reconcile_disks()
        .await
        .unwrap()
        .into_iter()
        .map(|d| (d.agent, d.outcome))
        .collect();
    report.sort();
    assert_eq!(
        report,
        [
            ("dev-1".to_string(), "remounted"),
            ("dev-2".to_string(), "removed")
        ]
    );
    assert_released(&orphan);
    assert_eq!(
        std::fs::read_to_string(worktree.join("kept.txt")).unwrap(),
        "mine\n"
    );
    // Nothing more to do.
    assert!(f.engine.reconcile_disks().await.unwrap().is_empty());
}

#[tokio::test]
async fn berths_disks_are_copies_of_one_template_each_with_a_uuid_of_its_own() {
    let Some(f) = fixture("64MiB", 4096).await else {
        return;
    };
    f.agent("dev-2", AgentImpl::Real).await;
    for agent in ["dev-1", "dev-2"] {
        crate::removal::up_runner(&f, agent).await;
    }
    let templates = f.dir.path().join("state/disk-templates");
    let made: Vec<PathBuf> = std::fs::read_dir(&templates)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(made.len(), 1, "one template for one key: {made:?}");
    let ids = [
        made[0].clone(),
        paths(&f, "dev-1").image,
        paths(&f, "dev-2").image,
    ]
    .map(|p| disk::filesystem_identity(&p).unwrap());
    for (i, x) in ids.iter().enumerate() {
        for y in &ids[i + 1..] {
            assert_ne!(x.uuid, y.uuid);
            assert_ne!(x.hash_seed, y.hash_seed);
        }
    }
    for agent in ["dev-1", "dev-2"] {
        f.engine.down(&named(agent), false, &user()).await.unwrap();
        assert_released(&paths(&f, agent));
    }
    // The template stays for the next berth.
    assert!(made[0].is_file());
}

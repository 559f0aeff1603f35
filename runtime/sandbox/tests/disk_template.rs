//! A berth's disk copied from a template, on real loop devices with the
//! host's `mkfs.ext4` and `e2fsck`: each copy has a UUID and a hash seed of
//! its own and is a clean file system after use; a template is made per
//! key (size, inodes, format) and templates of another format go; a
//! truncated or damaged template is made again, never copied from; where no
//! template can be used the disk is made by `mkfs.ext4` as before.
//!
//! Without root, `/dev/loop-control` or `mkfs.ext4` the tests skip with the
//! reason, except under `CI=true`, where they fail.

use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use berth_sandbox::disk::{self, Attached, DiskSpec, Made};

fn loop_devices() -> bool {
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

/// A state directory whose disks are released when dropped.
struct State {
    dir: tempfile::TempDir,
    attached: Vec<DiskSpec>,
}

impl State {
    fn new() -> Self {
        Self {
            dir: tempfile::Builder::new()
                .prefix("berth-disk-template-")
                .tempdir()
                .unwrap(),
            attached: Vec::new(),
        }
    }

    fn templates(&self) -> PathBuf {
        self.dir.path().join("disk-templates")
    }

    fn spec(&self, agent: &str, bytes: u64, inodes: u64) -> DiskSpec {
        DiskSpec {
            image: self.dir.path().join("disks").join(format!("{agent}.img")),
            mount_point: self.dir.path().join("berths").join(agent),
            bytes,
            inodes,
            templates: Some(self.templates()),
        }
    }

    fn attach(&mut self, spec: &DiskSpec) -> Attached {
        let attached = disk::attach(spec).unwrap();
        self.attached.push(spec.clone());
        attached
    }

    /// Unmounts `spec`'s disk, keeping its image.
    fn unmount(&self, spec: &DiskSpec) {
        let st = Command::new("umount")
            .arg(&spec.mount_point)
            .status()
            .unwrap();
        assert!(st.success());
    }
}

impl Drop for State {
    fn drop(&mut self) {
        for spec in &self.attached {
            let _ = disk::release(&spec.image, &spec.mount_point);
        }
    }
}

/// `e2fsck -fn`'s exit status and output: 0 is a clean file system.
fn fsck(image: &Path) -> (i32, String) {
    let out = Command::new("e2fsck")
        .arg("-fn")
        .arg(image)
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// The UUID of the template's file system: a template made again has
/// another (its inode number may well be the same, reused).
fn made_as(template: &Path) -> [u8; 16] {
    disk::filesystem_identity(template).unwrap().uuid
}

const MIB64: u64 = 64 << 20;

/// Attaches a new 64 MiB, 4,096-file disk for `agent` and asserts it was
/// copied from `template` made again (a file system of another UUID).
fn attach_after_remaking(st: &mut State, template: &Path, agent: &str) -> DiskSpec {
    let before = made_as(template);
    let spec = st.spec(agent, MIB64, 4096);
    assert_eq!(st.attach(&spec), Attached::Created(Made::FromTemplate));
    assert_ne!(made_as(template), before, "made again");
    spec
}

#[test]
fn each_copy_gets_its_own_uuid_and_hash_seed_and_stays_a_clean_file_system() {
    if !loop_devices() {
        return;
    }
    let mut st = State::new();
    let a = st.spec("dev-1", MIB64, 4096);
    let b = st.spec("dev-2", MIB64, 4096);
    assert_eq!(st.attach(&a), Attached::Created(Made::FromTemplate));
    assert_eq!(st.attach(&b), Attached::Created(Made::FromTemplate));
    let template = disk::template_path(&st.templates(), &a).unwrap();
    assert_eq!(template, disk::template_path(&st.templates(), &b).unwrap());
    let ids = [&template, &a.image, &b.image].map(|p| disk::filesystem_identity(p).unwrap());
    for (i, x) in ids.iter().enumerate() {
        for y in &ids[i + 1..] {
            assert_ne!(x.uuid, y.uuid);
            assert_ne!(x.hash_seed, y.hash_seed);
        }
    }
    // The template's directory is berth's alone.
    let mode = std::fs::metadata(st.templates()).unwrap().mode();
    assert_eq!(mode & 0o777, 0o700, "{mode:o}");
    assert_eq!(fsck(&template).0, 0, "{}", fsck(&template).1);

    // Mounted as a disk made by mkfs is: ext4, nosuid,nodev, root's root
    // directory, the size asked for; written to, it stays clean.
    let mount = disk::mounted_at(&a.mount_point).unwrap().unwrap();
    assert_eq!(mount.fs_type, "ext4");
    for option in ["nosuid", "nodev"] {
        assert!(mount.options.split(',').any(|o| o == option), "{mount:?}");
    }
    let root = std::fs::metadata(&a.mount_point).unwrap();
    assert_eq!((root.uid(), root.gid()), (0, 0));
    let usage = disk::usage(&a.mount_point).unwrap();
    assert!(
        usage.bytes_total <= MIB64 && usage.bytes_total > 48 << 20,
        "{usage:?}"
    );
    assert!(
        usage.files_total >= 4096 && usage.files_total < 8192,
        "{usage:?}"
    );
    let many = a.mount_point.join("many");
    std::fs::create_dir(&many).unwrap();
    for i in 0..2000 {
        std::fs::write(many.join(format!("a-long-file-name-{i}")), b"x").unwrap();
    }
    st.unmount(&a);
    let (code, out) = fsck(&a.image);
    assert_eq!(code, 0, "{out}");
    // 11 of mkfs's own, the directory and its 2000 files.
    assert!(out.contains(" 2012/4096 files"), "{out}");
    // The kernel reads the copy's UUID (and the mount did not rewrite it).
    assert_eq!(disk::filesystem_identity(&a.image).unwrap(), ids[1]);
    let blkid = Command::new("blkid")
        .args(["-p", "-o", "value", "-s", "UUID"])
        .arg(&a.image)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&blkid.stdout).trim(),
        ids[1].uuid_string()
    );
}

#[test]
fn a_template_is_made_per_key_and_templates_of_another_format_go() {
    if !loop_devices() {
        return;
    }
    let mut st = State::new();
    let small = st.spec("dev-1", MIB64, 4096);
    st.attach(&small);
    let first = disk::template_path(&st.templates(), &small).unwrap();
    let first_made = made_as(&first);
    // A template of another mkfs.ext4 (another format hash), and its marker.
    let stale = st
        .templates()
        .join("ext4-0000000000000000-67108864-4096.img");
    std::fs::write(&stale, b"old").unwrap();
    let stale_marker = stale.with_extension("unusable");
    std::fs::write(&stale_marker, b"old").unwrap();

    // The same key: the same template, not made again.
    let again = st.spec("dev-2", MIB64, 4096);
    assert_eq!(st.attach(&again), Attached::Created(Made::FromTemplate));
    assert_eq!(made_as(&first), first_made);
    assert!(stale.exists());

    // Another key (more inodes, then another size): a template of its own,
    // and the other format's are removed when one is made.
    let more = st.spec("dev-3", MIB64, 8192);
    assert_eq!(st.attach(&more), Attached::Created(Made::FromTemplate));
    let second = disk::template_path(&st.templates(), &more).unwrap();
    assert_ne!(second, first);
    assert!(second.is_file() && first.is_file());
    assert!(!stale.exists() && !stale_marker.exists());
    let usage = disk::usage(&more.mount_point).unwrap();
    assert!(usage.files_total >= 8192, "{usage:?}");
    let bigger = st.spec("dev-4", 2 * MIB64, 4096);
    st.attach(&bigger);
    let third = disk::template_path(&st.templates(), &bigger).unwrap();
    assert!(third.is_file() && third != first);
    let usage = disk::usage(&bigger.mount_point).unwrap();
    assert!(usage.bytes_total > MIB64, "{usage:?}");
}

#[test]
fn a_truncated_or_damaged_template_is_made_again_never_copied() {
    if !loop_devices() {
        return;
    }
    let mut st = State::new();
    let spec = st.spec("dev-1", MIB64, 4096);
    st.attach(&spec);
    let template = disk::template_path(&st.templates(), &spec).unwrap();
    let len = std::fs::metadata(&template).unwrap().len();

    // Truncated (a partial write, a full host disk): refused before a copy.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&template)
        .unwrap();
    f.set_len(len / 2).unwrap();
    drop(f);
    attach_after_remaking(&mut st, &template, "dev-2");
    assert_eq!(std::fs::metadata(&template).unwrap().len(), len);

    // The right length but a damaged group descriptor (64 MiB: 1 KiB
    // blocks, the descriptors at byte 2048): the copy is checked against
    // the template's digest, thrown away, and the template made again.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&template)
        .unwrap();
    let mut byte = [0u8; 1];
    f.read_exact_at(&mut byte, 2048 + 12).unwrap();
    f.write_all_at(&[byte[0] ^ 0x5a], 2048 + 12).unwrap();
    drop(f);
    let third = attach_after_remaking(&mut st, &template, "dev-3");
    st.unmount(&third);
    let (code, out) = fsck(&third.image);
    assert_eq!(code, 0, "{out}");
    assert_eq!(fsck(&template).0, 0);

    // A template whose trailer is not its own (renamed from another key).
    let other = st.spec("dev-4", MIB64, 8192);
    st.attach(&other);
    let other_template = disk::template_path(&st.templates(), &other).unwrap();
    std::fs::copy(&other_template, &template).unwrap();
    let fourth = attach_after_remaking(&mut st, &template, "dev-5");
    let usage = disk::usage(&fourth.mount_point).unwrap();
    assert!(usage.files_total < 8192, "{usage:?}");
}

#[test]
fn where_no_template_can_be_used_the_disk_is_made_by_mkfs() {
    if !loop_devices() {
        return;
    }
    let mut st = State::new();
    // The templates' directory cannot be made: a file is in its place.
    std::fs::write(st.templates(), b"not a directory").unwrap();
    let spec = st.spec("dev-1", MIB64, 4096);
    assert_eq!(st.attach(&spec), Attached::Created(Made::ByMkfs));
    assert!(disk::mounted_at(&spec.mount_point).unwrap().is_some());
    std::fs::remove_file(st.templates()).unwrap();

    // A template marked unusable for this mkfs.ext4: mkfs, every time.
    std::fs::create_dir(st.templates()).unwrap();
    let second = st.spec("dev-2", MIB64, 4096);
    let template = disk::template_path(&st.templates(), &second).unwrap();
    std::fs::write(template.with_extension("unusable"), "a test says so\n").unwrap();
    assert_eq!(st.attach(&second), Attached::Created(Made::ByMkfs));
    assert!(!template.exists());
    st.unmount(&second);
    assert_eq!(fsck(&second.image).0, 0);

    // No template directory: mkfs, as before templates.
    let third = DiskSpec {
        templates: None,
        ..st.spec("dev-3", MIB64, 4096)
    };
    assert_eq!(st.attach(&third), Attached::Created(Made::ByMkfs));
}

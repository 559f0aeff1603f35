//! Block devices written by any program and in any path spelling: the
//! programs that write what they are given (`dd of=`, `mkfs.*`, `wipefs`),
//! writers by option (`curl -o`), and a redirection (checked by the
//! caller), after `cd /dev` too.

use super::*;

/// Programs that write the devices they are given: every operand is a
/// target.
pub(super) fn writes_devices(program: &str) -> bool {
    program.starts_with("mkfs")
        || matches!(
            program,
            "mke2fs"
                | "mkswap"
                | "mkdosfs"
                | "mkntfs"
                | "mkexfatfs"
                | "mkudffs"
                | "wipefs"     // erases signatures
                | "blkdiscard" // discards every block
                | "sgdisk"     // `--zap-all` and every change rewrites the table
                | "sfdisk"
                | "gdisk"
                | "cgdisk"
                | "fdisk"
                | "cfdisk"
                | "parted"
                | "shred"      // overwrites in place
                | "cryptsetup" // `luksFormat`
                | "pvcreate"
                | "mdadm"
                | "zpool"
                | "tee"
        )
}

/// Programs that only read (or only name) what they are given: a block
/// device among their arguments is not written.
pub(super) fn reads_only(program: &str) -> bool {
    matches!(
        program,
        "cat"
            | "head"
            | "tail"
            | "less"
            | "more"
            | "od"
            | "hexdump"
            | "xxd"
            | "strings"
            | "file"
            | "stat"
            | "ls"
            | "lsblk"
            | "blkid"
            | "findmnt"
            | "df"
            | "du"
            | "wc"
            | "cmp"
            | "diff"
            | "md5sum"
            | "sha1sum"
            | "sha256sum"
            | "sha512sum"
            | "b2sum"
            | "cksum"
            | "smartctl"
            | "udevadm"
            | "readlink"
            | "realpath"
            | "test"
            | "["
            | "[["
            | "echo"
            | "printf"
            | "grep"
            | "dumpe2fs"
            | "pv"
    )
}

/// The device templates: a block device written by any program or path
/// spelling. Known writers (`mkfs.*`, `wipefs`, `sgdisk`, `tee`, …) on a
/// device, `dd of=`, an output option's value (`-o`, `--output=`,
/// `-sSLo/dev/sda`), the target of `cp`/`mv`/`install`: deny. A device
/// named to any other program that is not known to only read: it may
/// write it, so it is not auto-approved.
pub(super) fn device_write(inv: &[Arg], cwd: &Cwd) -> Option<Hit> {
    let first = inv.first()?;
    // Most commands name nothing under `/dev` and run far from it: their
    // program's name is not looked for.
    if !near_dev(cwd)
        && !inv[1..]
            .iter()
            .any(|a| a.dynamic || a.glob || crate::substring::contains(&a.text, "dev"))
    {
        return None;
    }
    let program = first.basename();
    let listing = inv[1..]
        .iter()
        .any(|a| a.is("-l") || a.is("--list") || a.is("-L"));
    let writer =
        writes_devices(program) && !(listing && matches!(program, "fdisk" | "sfdisk" | "parted"));
    // A word that cannot be known may be the device for a disk tool and
    // `dd of=`; for `tee` or `curl -o` it is as likely a log file.
    let strict = writer && program != "tee";
    let reader = reads_only(program) || (listing && !writer);
    let mut maybe = None;
    let mut hit = |value: &Arg, output: bool| -> Option<Hit> {
        let d = device_danger(value, cwd, strict || (output && program == "dd"));
        match d {
            Danger::Yes if writer || output => Some(Hit::Deny(format!(
                "`{program}` writing the block device {}",
                value.text
            ))),
            Danger::No => None,
            _ if reader && !output => None,
            _ => {
                maybe = maybe.take().or(Some(format!(
                    "`{program}` given {}, which may be a block device it writes",
                    describe(value)
                )));
                None
            }
        }
    };
    let last_is_target = matches!(program, "cp" | "mv" | "install" | "cat");
    let ops = operands(inv);
    let mut next_is_output = false;
    for a in inv.iter().skip(1) {
        if next_is_output {
            next_is_output = false;
            if let Some(h) = hit(a, true) {
                return Some(h);
            }
            continue;
        }
        if a.dynamic {
            // `of=$OUT`: the key is known, the value is not.
            let (output, value) = match a.text.split_once('=') {
                Some((key, value)) => {
                    let key = key.trim_start_matches('-');
                    if program == "dd" && key == "if" {
                        continue;
                    }
                    let v = Arg {
                        text: value.to_string(),
                        ..a.clone()
                    };
                    (program == "dd" && key == "of" || is_output_option(key), v)
                }
                None => (false, a.clone()),
            };
            if let Some(h) = hit(&value, output) {
                return Some(h);
            }
            continue;
        }
        let t = a.text.as_str();
        // `of=/dev/sda`, `--output=/dev/sda`, `--device=/dev/sda`.
        if let Some((key, value)) = t.split_once('=') {
            let key = key.trim_start_matches('-');
            let output = program == "dd" && key == "of" || is_output_option(key);
            if program == "dd" && key == "if" {
                continue;
            }
            let v = Arg {
                text: value.to_string(),
                ..a.clone()
            };
            if let Some(h) = hit(&v, output) {
                return Some(h);
            }
            continue;
        }
        if let Some(long) = t.strip_prefix("--") {
            next_is_output = is_output_option(long);
            continue;
        }
        if let Some(cluster) = t.strip_prefix('-').filter(|c| !c.is_empty()) {
            // `-o FILE`, `-sSLo FILE`, `-o/dev/sda`, `-sSLo/dev/sda`.
            if let Some(k) = cluster.find(['o', 'O']) {
                let attached = &cluster[k + 1..];
                if attached.is_empty() {
                    next_is_output = true;
                } else if attached.starts_with(['/', '.', '~']) {
                    let v = Arg {
                        text: attached.to_string(),
                        ..a.clone()
                    };
                    if let Some(h) = hit(&v, true) {
                        return Some(h);
                    }
                }
            }
            continue;
        }
        let target =
            last_is_target && ops.len() > 1 && ops.last().is_some_and(|l| std::ptr::eq(*l, a));
        if let Some(h) = hit(a, target) {
            return Some(h);
        }
    }
    maybe.map(Hit::Maybe)
}

/// Whether a relative path from the cwd may land in `/dev` without naming
/// it (`sda` in `/dev`, `dev/sda` in `/`), or the cwd is not known.
pub(super) fn near_dev(cwd: &Cwd) -> bool {
    match cwd {
        Cwd::Known(dirs) => dirs.iter().any(|d| scope::under(d, "/dev") || d == "/"),
        Cwd::Unknown => true,
    }
}

/// Long options that name where output goes.
pub(super) fn is_output_option(name: &str) -> bool {
    matches!(
        name,
        "o" | "of" | "output" | "output-document" | "out" | "outfile" | "out-file" | "output-file"
    )
}

/// Device names a glob is tried against (one of each kind).
pub(super) const DEVICE_SAMPLES: &[&str] = &[
    "/dev/sda",
    "/dev/sdb1",
    "/dev/hda",
    "/dev/vda",
    "/dev/xvda",
    "/dev/nvme0n1",
    "/dev/nvme0n1p1",
    "/dev/mmcblk0",
    "/dev/pmem0",
    "/dev/loop0",
    "/dev/dm-0",
    "/dev/md0",
    "/dev/sr0",
    "/dev/nbd0",
    "/dev/zram0",
    "/dev/mem",
    "/dev/kmem",
    "/dev/port",
    "/dev/mapper/root",
    "/dev/disk/by-id/x",
    "/dev/block/8:0",
    "/dev/sg0",
    "/dev/fd0",
    "/dev/mtdblock0",
    "/dev/root",
];

/// Whether a word names a block device: by any path spelling
/// (`//dev/sda`, `./../../dev/sda`, `sda` in `/dev`,
/// `/proc/self/root/dev/sda`) or a glob that can match one.
/// `strict`: for a known writer, a word that cannot be known may be one.
pub(super) fn device_danger(a: &Arg, cwd: &Cwd, strict: bool) -> Danger {
    if a.proc_sub || a.package {
        return Danger::No;
    }
    if a.dynamic {
        let skel = a.text.as_str();
        return if crate::substring::contains(skel, "/dev/") || (strict && !skel.contains('/')) {
            Danger::Maybe
        } else {
            Danger::No
        };
    }
    let t = a.text.as_str();
    if !(crate::substring::contains(t, "dev") || a.glob || (near_dev(cwd) && !t.starts_with('/'))) {
        return Danger::No;
    }
    let mut worst = Danger::No;
    for place in places(cwd, t) {
        let d = match place {
            None => {
                let base = crate::arg::basename(t);
                if is_block_device(&format!("/dev/{base}")) {
                    Danger::Maybe
                } else {
                    Danger::No
                }
            }
            Some(p) if a.glob => {
                if DEVICE_SAMPLES.iter().any(|s| scope::pattern_matches(&p, s)) {
                    Danger::Yes
                } else {
                    Danger::No
                }
            }
            Some(p) => {
                if is_block_device(&p) {
                    Danger::Yes
                } else {
                    Danger::No
                }
            }
        };
        worst = worst.max(d);
    }
    worst
}

/// Block devices and raw memory: `/dev/sda`, `/dev/nvme0n1`, `/dev/pmem0`,
/// `/dev/mapper/x`, `/dev/disk/by-id/x`, … (not `/dev/null`, `/dev/zero`,
/// `/dev/tty`, `/dev/stdout`).
pub fn is_block_device(path: &str) -> bool {
    let Some(dev) = path.strip_prefix("/dev/") else {
        return false;
    };
    if dev.starts_with("disk/")
        || dev.starts_with("mapper/")
        || dev.starts_with("block/")
        || dev.starts_with("md/")
        || matches!(dev, "mem" | "kmem" | "port")
    {
        return true;
    }
    let letters = |prefix: &str| {
        dev.strip_prefix(prefix)
            .is_some_and(|r| r.chars().next().is_some_and(|c| c.is_ascii_lowercase()))
    };
    let digits = |prefix: &str| {
        dev.strip_prefix(prefix)
            .is_some_and(|r| r.chars().next().is_some_and(|c| c.is_ascii_digit()))
    };
    letters("sd")
        || letters("hd")
        || letters("vd")
        || letters("xvd")
        || digits("nvme")
        || digits("mmcblk")
        || digits("pmem")
        || digits("loop")
        || digits("dm-")
        || digits("md")
        || digits("sr")
        || digits("nbd")
        || digits("zram")
        || digits("ram")
        || digits("rbd")
        || digits("drbd")
        || digits("zd")
        || digits("sg")
        || digits("fd")
        || digits("mtd")
        || digits("mtdblock")
        || digits("ublkb")
        || digits("bcache")
        || dev == "root"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_devices() {
        for p in [
            "/dev/sda",
            "/dev/sdb1",
            "/dev/nvme0n1",
            "/dev/mapper/root",
            "/dev/vda",
            "/dev/mem",
            "/dev/disk/by-id/x",
        ] {
            assert!(is_block_device(p), "{p}");
        }
        for p in [
            "/dev/null",
            "/dev/tty",
            "/dev/stdout",
            "/dev/fd/1",
            "/tmp/sda",
            "/dev/shm/x",
        ] {
            assert!(!is_block_device(p), "{p}");
        }
    }
}

//! Measuring a pushed pack before libgit2 indexes it.
//!
//! The pack comes from `berth-helper`, which packs only objects it measured;
//! but libgit2's indexer inflates every object whole and allocates a delta's
//! declared result size, so berth does not rely on the helper: it reads the
//! pack once, entry by entry, with small buffers — each entry's declared size
//! (a delta's result size from the delta's own header) against
//! `max_object_bytes`, the inflated data against what the entry declared —
//! and refuses before anything is indexed.

use std::io::{BufRead, Read};

/// Why a pack was refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PackRefusal {
    /// An object (or a delta's result) over the limit.
    #[error("pack entry {index} is an object of {size} bytes")]
    TooLarge {
        /// Its position in the pack.
        index: u32,
        /// Its declared size.
        size: u64,
    },
    /// The pack is not what git writes.
    #[error("malformed pack: {0}")]
    Malformed(String),
    /// Reading it failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// What the scan found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PackSummary {
    /// Entries.
    pub objects: u32,
    /// The sum of the objects' sizes (deltas counted at their result size).
    pub bytes: u64,
}

fn byte(r: &mut dyn BufRead) -> Result<u8, PackRefusal> {
    let mut b = [0u8; 1];
    r.read_exact(&mut b)?;
    Ok(b[0])
}

/// A delta header's size: 7 bits a byte, least significant first.
fn delta_varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*at)?;
        *at += 1;
        value |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// Reads a whole pack from `r`, checking every entry against
/// `max_object_bytes`.
pub(crate) fn scan_pack(
    r: &mut dyn BufRead,
    max_object_bytes: u64,
) -> Result<PackSummary, PackRefusal> {
    let bad = |s: &str| PackRefusal::Malformed(s.to_owned());
    let mut header = [0u8; 12];
    r.read_exact(&mut header)?;
    if &header[..4] != b"PACK" || !matches!(header[7], 2 | 3) || header[4..7] != [0, 0, 0] {
        return Err(bad("no PACK v2/v3 header"));
    }
    let count = u32::from_be_bytes([header[8], header[9], header[10], header[11]]);
    let mut summary = PackSummary {
        objects: count,
        bytes: 0,
    };
    let mut buf = vec![0u8; 64 * 1024];
    for index in 0..count {
        let mut c = byte(r)?;
        let kind = (c >> 4) & 7;
        let mut size = u64::from(c & 0x0f);
        let mut shift = 4;
        while c & 0x80 != 0 {
            if shift > 57 {
                return Err(bad("entry size overflows"));
            }
            c = byte(r)?;
            size |= u64::from(c & 0x7f) << shift;
            shift += 7;
        }
        match kind {
            1..=4 => {}
            6 => {
                // The base's offset: skipped, only its end matters.
                let mut c = byte(r)?;
                let mut n = 0;
                while c & 0x80 != 0 {
                    n += 1;
                    if n > 10 {
                        return Err(bad("delta offset overflows"));
                    }
                    c = byte(r)?;
                }
            }
            7 => {
                let mut base = [0u8; 20];
                r.read_exact(&mut base)?;
            }
            _ => return Err(bad("unknown entry type")),
        }
        let is_delta = kind >= 6;
        // A delta is never much larger than what it makes; its own size is
        // bounded like an object's.
        if size > max_object_bytes {
            return Err(PackRefusal::TooLarge { index, size });
        }
        let mut inflated: u64 = 0;
        let mut head = Vec::new();
        let mut z = flate2::bufread::ZlibDecoder::new(&mut *r);
        loop {
            let n = z.read(&mut buf)?;
            if n == 0 {
                break;
            }
            inflated += n as u64;
            if inflated > size {
                return Err(bad("an entry inflates past its declared size"));
            }
            if is_delta && head.len() < 20 {
                let take = (20 - head.len()).min(n);
                head.extend_from_slice(buf.get(..take).unwrap_or_default());
            }
        }
        if inflated != size {
            return Err(bad("an entry inflates short of its declared size"));
        }
        let object_size = if is_delta {
            let mut at = 0;
            delta_varint(&head, &mut at).ok_or_else(|| bad("delta without a base size"))?;
            delta_varint(&head, &mut at).ok_or_else(|| bad("delta without a result size"))?
        } else {
            size
        };
        if object_size > max_object_bytes {
            return Err(PackRefusal::TooLarge {
                index,
                size: object_size,
            });
        }
        summary.bytes = summary.bytes.saturating_add(object_size);
    }
    let mut trailer = [0u8; 20];
    r.read_exact(&mut trailer)?;
    if !r.fill_buf()?.is_empty() {
        return Err(bad("data after the pack's checksum"));
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::process::Command;

    fn git(dir: &std::path::Path, args: &[&str], input: Option<&[u8]>) -> Vec<u8> {
        let mut cmd = Command::new("git");
        cmd.current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        std::io::Write::write_all(&mut stdin, input.unwrap_or_default()).unwrap();
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "git {args:?}");
        out.stdout
    }

    /// A pack (made by git) of two 100 KiB blobs, one a delta of the other,
    /// and a 2 MiB blob of zeros.
    fn pack() -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q", "--bare"], None);
        let mut x = 7u32;
        let base: Vec<u8> = (0..100 * 1024)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        let mut changed = base.clone();
        changed.extend_from_slice(b"one more line\n");
        let mut oids = String::new();
        for blob in [base, changed, vec![0u8; 2 * 1024 * 1024]] {
            let oid = git(dir.path(), &["hash-object", "-w", "--stdin"], Some(&blob));
            oids.push_str(std::str::from_utf8(&oid).unwrap());
        }
        git(
            dir.path(),
            &["pack-objects", "--stdout"],
            Some(oids.as_bytes()),
        )
    }

    #[test]
    fn a_pack_is_measured_entry_by_entry_deltas_by_their_result() {
        let pack = pack();
        let ok = scan_pack(&mut &pack[..], 4 * 1024 * 1024).unwrap();
        assert_eq!(ok.objects, 3);
        assert_eq!(ok.bytes, 2 * 100 * 1024 + 14 + 2 * 1024 * 1024);
        // The zeros are refused by their header.
        let err = scan_pack(&mut &pack[..], 1024 * 1024).unwrap_err();
        assert!(
            matches!(err, PackRefusal::TooLarge { size, .. } if size == 2 * 1024 * 1024),
            "{err}"
        );
        // A cut or padded pack is not a pack.
        assert!(scan_pack(&mut &pack[..pack.len() - 1], u64::MAX).is_err());
        let mut padded = pack.clone();
        padded.push(0);
        assert!(scan_pack(&mut &padded[..], u64::MAX).is_err());
    }
    // A delta declaring a huge result: tests/hostile_helper.rs, end to end.
}

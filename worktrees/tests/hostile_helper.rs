//! berth does not trust the pack it is sent: a helper that answers "ok" and
//! streams a delta declaring a 2 GiB result (as a subverted helper could) is
//! refused by berth's own measure before libgit2 indexes anything.
//!
//! Its own test binary: it points `BERTH_HELPER` (process-wide) at a missing
//! helper, then at a fake.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::PermissionsExt;

use berth_worktrees::{Error, GitLimits};
use common::*;

fn zip(data: &[u8]) -> Vec<u8> {
    // A stored (uncompressed) zlib stream: header, one final stored block,
    // adler32 — enough for a test without a compressor.
    let mut out = vec![0x78, 0x01, 0x01];
    let len = data.len() as u16;
    out.extend(len.to_le_bytes());
    out.extend((!len).to_le_bytes());
    out.extend_from_slice(data);
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in data {
        a = (a + u32::from(byte)) % 65521;
        b = (b + a) % 65521;
    }
    out.extend(((b << 16) | a).to_be_bytes());
    out
}

/// A pack of a 6-byte blob and a delta of it declaring a 2 GiB result.
fn bomb() -> Vec<u8> {
    let base = b"hello\n";
    let mut delta = vec![base.len() as u8];
    let mut result: u64 = 2 << 30;
    loop {
        let b = (result & 0x7f) as u8;
        result >>= 7;
        if result == 0 {
            delta.push(b);
            break;
        }
        delta.push(b | 0x80);
    }
    delta.extend_from_slice(&[0x90, 0x06]);
    let mut pack = b"PACK\0\0\0\x02\0\0\0\x02".to_vec();
    pack.push((3 << 4) | base.len() as u8);
    pack.extend(zip(base));
    pack.push((6 << 4) | delta.len() as u8);
    pack.push(0x12); // the base entry is 18 bytes back
    pack.extend(zip(&delta));
    pack.extend([0u8; 20]);
    pack
}

#[test]
fn a_pack_declaring_a_huge_delta_result_is_refused_before_indexing() {
    let f = Fixture::new();
    let (p, a) = (&f.project, agent("dev-1"));
    let info = f.wt.provision(p, &a, &task("t"), None).unwrap();
    std::fs::write(info.path.join("x.txt"), "x\n").unwrap();
    let c = f.wt.commit(p, &a, &commit_request("x", "act-1")).unwrap();

    let dir = tempfile::tempdir().unwrap();
    // A helper that is not there is an error that says how to build it.
    let missing = dir.path().join("no-such-helper");
    // SAFETY: this test binary holds one test; nothing else reads the
    // environment concurrently.
    unsafe { std::env::set_var("BERTH_HELPER", &missing) };
    let err = f.wt.push(p, &a, &info.branch).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::HelperMissing { .. }), "{msg}");
    assert!(msg.contains("cargo build -p berth-helper"), "{msg}");
    assert!(msg.contains("no-such-helper"), "{msg}");

    let pack = dir.path().join("bomb.pack");
    std::fs::write(&pack, bomb()).unwrap();
    let fake = dir.path().join("berth-helper");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\ncat >/dev/null\nprintf '%s\\n' '{{\"ok\":{{\"tip\":\"{}\",\"objects\":2,\"object_bytes\":12}}}}'\ncat '{}'\n",
            c.oid,
            pack.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    // SAFETY: as above.
    unsafe { std::env::set_var("BERTH_HELPER", &fake) };

    let packs = || {
        let mut v: Vec<_> = std::fs::read_dir(f.forge().join("objects/pack"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        v.sort();
        v
    };
    let (packs_before, refs_before) = (packs(), f.forge_refs());
    let limits = GitLimits {
        max_object_bytes: 1024 * 1024,
        ..GitLimits::default()
    };
    let err = f.wt.push_bounded(p, &a, &info.branch, &limits).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::PackRefused { .. }), "{msg}");
    assert!(msg.contains("2147483648 bytes"), "{msg}");
    assert_eq!(packs(), packs_before, "something was indexed");
    assert_eq!(f.forge_refs(), refs_before);
    // Nothing left beside the forge either (the pack was an unnamed file).
    let leftovers: Vec<_> = std::fs::read_dir(f.forge())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".tmp"))
        .collect();
    assert_eq!(leftovers, Vec::<String>::new());
}

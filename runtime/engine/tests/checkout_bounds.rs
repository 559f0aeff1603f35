#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `[git] max_checkout_bytes` at `berth up`: a small repository that names
//! one large blob at many paths expands without bound at checkout, so the
//! checkout is measured (by object headers, each path counted) and refused
//! over the bound with the size, the bound and the key; under it, `up` works.

use crate::common;

use berth_engine::{AgentImpl, BerthMode};
use common::{Fixture, git, named, user};

/// One 1 MiB blob at 64 paths (8 directories of the same 8 copies).
fn repeated_blob_source(root: &std::path::Path) -> std::path::PathBuf {
    let src = root.join("src");
    let blob: Vec<u8> = (0..1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    for d in 0..8 {
        let dir = src.join(format!("d{d}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..8 {
            std::fs::write(dir.join(format!("copy{f}.bin")), &blob).unwrap();
        }
    }
    git(&src, &["init", "-q"]);
    git(&src, &["add", "-A"]);
    git(&src, &["commit", "-q", "-m", "one blob at 64 paths"]);
    src
}

fn set_bound(state: &std::path::Path, bytes: u64) {
    let cfg = state.join("projects/demo/berth.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("max_checkout_bytes = "))
        .expect("the embedded berth.toml documents max_checkout_bytes")
        .to_string();
    std::fs::write(
        &cfg,
        text.replacen(&line, &format!("max_checkout_bytes = {bytes}"), 1),
    )
    .unwrap();
}

fn checked_out(worktree: &std::path::Path) -> usize {
    (0..8)
        .flat_map(|d| (0..8).map(move |f| worktree.join(format!("d{d}/copy{f}.bin"))))
        .filter(|p| p.exists())
        .count()
}

#[tokio::test]
async fn up_refuses_a_checkout_over_max_checkout_bytes_and_takes_one_under_it() {
    let dir = tempfile::tempdir().unwrap();
    let src = repeated_blob_source(dir.path());
    let f = Fixture::from_source(dir, src).await;
    let (engine, state) = (&f.engine, f.dir.path().join("state"));
    f.agent("dev-1", AgentImpl::Real).await;
    set_bound(&state, 16 * 1024 * 1024);
    let err = engine
        .up(
            &named("dev-1"),
            &named("demo"),
            Some(BerthMode::Runner),
            &user(),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("over the limit of 16777216 bytes ([git] max_checkout_bytes)")
            && err.contains("nothing was checked out")
            && err.contains("berth.toml"),
        "{err}"
    );
    let worktree = state.join("berths/demo/dev-1/dev-1");
    assert_eq!(checked_out(&worktree), 0, "nothing checked out");

    set_bound(&state, 128 * 1024 * 1024);
    let up = engine
        .up(
            &named("dev-1"),
            &named("demo"),
            Some(BerthMode::Runner),
            &user(),
        )
        .await
        .unwrap();
    assert_eq!(checked_out(&up.worktree.unwrap()), 64);
}

//! berth's git work on an agent's repository cannot be steered outside it:
//! links the agent plants (reflogs, ref directories, worktree directories —
//! once or in a loop) lead berth's commit nowhere the agent could not go
//! itself, and what enters the forge is bounded in size.
//!
//! The race tests run a flipping thread for `BERTH_RACE_ROUNDS` commits
//! (default 40) and must see zero escapes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use berth_worktrees::{Error, GitLimits, Owner};
use common::*;

fn rounds() -> usize {
    std::env::var("BERTH_RACE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40)
}

/// A "host file" outside everything berth gives the agent.
struct Outside {
    dir: tempfile::TempDir,
}

impl Outside {
    fn new() -> Outside {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("victim"), "host data\n").unwrap();
        Outside { dir }
    }
    fn victim(&self) -> PathBuf {
        self.dir.path().join("victim")
    }
    fn absent(&self) -> PathBuf {
        self.dir.path().join("created-by-berth")
    }
    /// Every entry and its content: what must never change.
    fn snapshot(&self) -> Vec<(String, String)> {
        let mut all: Vec<_> = std::fs::read_dir(self.dir.path())
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let content = std::fs::read_to_string(e.path()).unwrap_or_default();
                (e.file_name().to_string_lossy().into_owned(), content)
            })
            .collect();
        all.sort();
        all
    }
}

/// Replaces `path` with a link to `target`.
fn plant_link(path: &Path, target: &Path) {
    let _ = std::fs::remove_file(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    symlink(target, path).unwrap();
}

fn reflogs_through_links_never_reach_the_host(owner: Option<Owner>) {
    let f = Fixture::new();
    if owner.is_some() {
        // An ancestor uid 1000 cannot search (like /root, 0700, around a
        // default state directory): the helper must still reach the agent's
        // directories at their own paths.
        std::fs::set_permissions(f.tmp.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let (p, a) = (&f.project, agent("dev-1"));
    let info = f.wt.provision(p, &a, &task("t"), owner).unwrap();
    let outside = Outside::new();
    let before = outside.snapshot();
    let repo = &info.agent_repo;
    // The worktree's HEAD reflog appends to a host file; the branch reflog
    // would create one.
    plant_link(&repo.join("worktrees/dev-1/logs/HEAD"), &outside.victim());
    plant_link(
        &repo.join("logs/refs/heads/agent/dev-1/t"),
        &outside.absent(),
    );
    if let Some(o) = owner {
        // As the agent would have made them.
        let status = std::process::Command::new("chown")
            .args(["-hR", &format!("{}:{}", o.uid, o.gid)])
            .arg(repo)
            .status()
            .unwrap();
        assert!(status.success());
    }
    for (i, message) in ["x; touch /tmp/PWNED #", "second"].iter().enumerate() {
        std::fs::write(info.path.join(format!("f{i}.txt")), "change\n").unwrap();
        // It may fail (the reflog cannot be written) or succeed without it.
        let result =
            f.wt.commit(p, &a, &commit_request(message, &format!("act-{i}")));
        eprintln!("commit {i}: {:?}", result.as_ref().map(|c| c.oid));
        assert_eq!(outside.snapshot(), before, "commit {i} wrote outside");
        assert!(!outside.absent().exists());
    }
    // With the links gone, the same commit works (through the helper's own
    // view of the paths when an ancestor is closed to the agent's uid), and
    // what it wrote belongs to the repository's owner.
    std::fs::remove_file(repo.join("worktrees/dev-1/logs/HEAD")).unwrap();
    std::fs::remove_file(repo.join("logs/refs/heads/agent/dev-1/t")).unwrap();
    let c =
        f.wt.commit(p, &a, &commit_request("clean", "act-clean"))
            .unwrap();
    assert!(c.created);
    let want = owner.map_or(0, |o| o.uid);
    let hex = c.oid.to_string();
    let object = repo.join("objects").join(&hex[..2]).join(&hex[2..]);
    assert_eq!(std::fs::metadata(object).unwrap().uid(), want);
    assert_eq!(
        std::fs::metadata(repo.join("refs/heads/agent/dev-1/t"))
            .unwrap()
            .uid(),
        want
    );
}

#[test]
fn reflogs_replaced_by_links_never_carry_a_commit_outside() {
    reflogs_through_links_never_reach_the_host(None);
}

#[test]
fn reflogs_replaced_by_links_never_carry_a_commit_outside_as_the_agents_uid() {
    if !require_root("reflogs_replaced_by_links_never_carry_a_commit_outside_as_the_agents_uid") {
        return;
    }
    reflogs_through_links_never_reach_the_host(Some(Owner {
        uid: 1000,
        gid: 1000,
    }));
}

/// Exchanges `dir` and a link to `target` (atomically, `RENAME_EXCHANGE`)
/// until `stop`, so `dir` is a link half of the time; returns the number of
/// exchanges. `dir` is a directory again at the end.
fn flip(dir: PathBuf, target: PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    std::thread::spawn(move || {
        let mut link = dir.clone().into_os_string();
        link.push(".swap");
        let link = PathBuf::from(link);
        symlink(&target, &link).unwrap();
        let mut flips = 0u64;
        while !stop.load(Ordering::Relaxed) {
            if renameat_with(CWD, &dir, CWD, &link, RenameFlags::EXCHANGE).is_ok() {
                flips += 1;
            }
            for _ in 0..100 {
                std::hint::spin_loop();
            }
        }
        if std::fs::symlink_metadata(&dir)
            .unwrap()
            .file_type()
            .is_symlink()
        {
            renameat_with(CWD, &dir, CWD, &link, RenameFlags::EXCHANGE).unwrap();
        }
        std::fs::remove_file(&link).unwrap();
        flips
    })
}

/// Commits `rounds()` times (changing `work.txt`, then `touch(i)`) on agent
/// `dev-1` while `flippers` run, stops them and says how it went.
fn commit_rounds_while_flipping(
    f: &Fixture,
    worktree: &Path,
    flippers: Vec<std::thread::JoinHandle<u64>>,
    stop: &AtomicBool,
    mut touch: impl FnMut(usize),
) {
    let a = agent("dev-1");
    let start = std::time::Instant::now();
    let (mut made, n) = (0, rounds());
    for i in 0..n {
        std::fs::write(worktree.join("work.txt"), format!("round {i}\n")).unwrap();
        touch(i);
        let request = commit_request(&format!("round {i}"), &format!("act-{i}"));
        if f.wt.commit(&f.project, &a, &request).is_ok() {
            made += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let flips: u64 = flippers.into_iter().map(|h| h.join().unwrap()).sum();
    eprintln!(
        "{n} commits ({made} made) against {flips} flips in {:?}",
        start.elapsed()
    );
    assert!(flips > 0, "the flipper never ran");
}

#[test]
fn a_ref_directory_flipped_to_a_link_in_a_loop_never_carries_a_write_outside() {
    let f = Fixture::new();
    let (p, a) = (&f.project, agent("dev-1"));
    let info = f.wt.provision(p, &a, &task("t"), None).unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("t"), "host ref\n").unwrap();
    let logs_outside = tempfile::tempdir().unwrap();
    std::fs::write(logs_outside.path().join("t"), "host log\n").unwrap();
    let snapshot = |d: &Path| {
        let mut v: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.file_name(), std::fs::read(e.path()).unwrap_or_default())
            })
            .collect();
        v.sort();
        v
    };
    let (refs_before, logs_before) = (snapshot(outside.path()), snapshot(logs_outside.path()));

    // A bare repository writes no reflog until asked: make the directory the
    // agent would swap.
    std::fs::create_dir_all(info.agent_repo.join("logs/refs/heads/agent/dev-1")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flippers = [
        flip(
            info.agent_repo.join("refs/heads/agent/dev-1"),
            outside.path().to_path_buf(),
            stop.clone(),
        ),
        flip(
            info.agent_repo.join("logs/refs/heads/agent/dev-1"),
            logs_outside.path().to_path_buf(),
            stop.clone(),
        ),
    ];
    commit_rounds_while_flipping(&f, &info.path, flippers.into(), &stop, |_| {});
    assert_eq!(snapshot(outside.path()), refs_before, "a ref write escaped");
    assert_eq!(
        snapshot(logs_outside.path()),
        logs_before,
        "a reflog write escaped"
    );
}

#[test]
fn a_worktree_directory_flipped_to_a_root_only_directory_never_enters_a_commit() {
    let f = Fixture::new();
    let (p, a) = (&f.project, agent("dev-1"));
    let info = f.wt.provision(p, &a, &task("t"), None).unwrap();
    // A root-only directory of the host with root-only files, of the same
    // names and sizes as the agent's own (a read through the link then
    // succeeds instead of failing on a size change).
    let secret_dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(secret_dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let marker = format!("TOP-SECRET-{}", std::process::id());
    let line = |s: &str| format!("{s:<31}\n");
    const FILES: usize = 20;
    for j in 0..FILES {
        let secret = secret_dir.path().join(format!("notes{j}.txt"));
        std::fs::write(&secret, line(&marker)).unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    // The agent's own directory of the same shape, written through its own
    // descriptor (never through the link the flipper swaps in).
    std::fs::create_dir(info.path.join("d")).unwrap();
    let own = std::fs::File::open(info.path.join("d")).unwrap();
    let in_own = |name: &str| {
        PathBuf::from(format!(
            "/proc/self/fd/{}/{name}",
            std::os::fd::AsRawFd::as_raw_fd(&own)
        ))
    };
    for j in 0..FILES {
        std::fs::write(in_own(&format!("notes{j}.txt")), line("mine")).unwrap();
    }
    f.wt.commit(p, &a, &commit_request("mine", "act-mine"))
        .unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let flipper = flip(
        info.path.join("d"),
        secret_dir.path().to_path_buf(),
        stop.clone(),
    );
    commit_rounds_while_flipping(&f, &info.path, vec![flipper], &stop, |i| {
        for j in 0..FILES {
            let name = format!("notes{j}.txt");
            std::fs::write(in_own(&name), line(&format!("mine {j} round {i}"))).unwrap();
        }
    });
    // Not in any object of the agent's repository: not committed, not even
    // staged.
    let all = git_cmd(
        &info.agent_repo,
        &["cat-file", "--batch-all-objects", "--batch"],
    )
    .output()
    .unwrap();
    assert!(all.status.success());
    let text = String::from_utf8_lossy(&all.stdout);
    assert!(
        text.contains("mine"),
        "the agent's own file was never staged"
    );
    assert!(
        !text.contains(&marker),
        "a root-only host file entered the agent's repository"
    );
}

/// Commits `files` (name, bytes) on a fresh agent and returns its branch.
fn commit_files(f: &Fixture, agent_name: &str, files: &[(&str, Vec<u8>)]) -> String {
    let a = agent(agent_name);
    let info = f.wt.provision(&f.project, &a, &task("t"), None).unwrap();
    for (name, bytes) in files {
        std::fs::write(info.path.join(name), bytes).unwrap();
    }
    f.wt.commit(&f.project, &a, &commit_request("big", "act-big"))
        .unwrap();
    info.branch
}

fn pack_files(forge: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(forge.join("objects/pack"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The peak resident memory of this process, in KiB.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn a_push_holding_an_object_over_max_object_bytes_is_refused_before_indexing() {
    let f = Fixture::new();
    let big = 32 * 1024 * 1024;
    let branch = commit_files(&f, "dev-1", &[("zeros.bin", vec![0u8; big])]);
    let limits = GitLimits {
        max_object_bytes: 1024 * 1024,
        ..GitLimits::default()
    };
    let packs_before = pack_files(&f.forge());
    let refs_before = f.forge_refs();
    let rss_before = peak_rss_kib();
    let start = std::time::Instant::now();
    let err =
        f.wt.push_bounded(&f.project, &agent("dev-1"), &branch, &limits)
            .unwrap_err();
    let rss_after = peak_rss_kib();
    eprintln!(
        "refused in {:?}; peak RSS {rss_before} -> {rss_after} KiB",
        start.elapsed()
    );
    let msg = err.to_string();
    assert!(
        matches!(err, Error::ObjectTooLarge { size, limit, .. } if size == big as u64 && limit == 1024 * 1024),
        "{msg}"
    );
    assert!(msg.contains("max_object_bytes"), "{msg}");
    // Nothing reached the forge: no pack, no ref.
    assert_eq!(pack_files(&f.forge()), packs_before);
    assert_eq!(f.forge_refs(), refs_before);
    // berth's own process did not grow with the object (the helper measured
    // it by header and sent nothing).
    assert!(
        rss_after.saturating_sub(rss_before) < 8 * 1024,
        "berth's peak RSS grew by {} KiB",
        rss_after - rss_before
    );
    // Within the default limits the same push goes through.
    let ok = f.wt.push(&f.project, &agent("dev-1"), &branch).unwrap();
    assert!(ok.updated);
}

#[test]
fn a_push_over_max_push_bytes_is_refused() {
    let f = Fixture::new();
    // Three 40 KiB files that do not compress into each other.
    let noise = |seed: u32| -> Vec<u8> {
        let mut x = seed.wrapping_mul(2_654_435_761).max(1);
        (0..40 * 1024)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect()
    };
    let branch = commit_files(
        &f,
        "dev-1",
        &[
            ("a.bin", noise(1)),
            ("b.bin", noise(2)),
            ("c.bin", noise(3)),
        ],
    );
    let limits = GitLimits {
        max_push_bytes: 64 * 1024,
        ..GitLimits::default()
    };
    let packs_before = pack_files(&f.forge());
    let err =
        f.wt.push_bounded(&f.project, &agent("dev-1"), &branch, &limits)
            .unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, Error::PushTooLarge { limit, bytes, .. } if limit == 64 * 1024 && bytes > 120 * 1024),
        "{msg}"
    );
    assert!(msg.contains("max_push_bytes"), "{msg}");
    assert_eq!(pack_files(&f.forge()), packs_before);
    assert!(!f.forge_refs().contains_key(&format!("refs/heads/{branch}")));
}

#[test]
fn a_shallow_clone_is_refused_at_import_with_how_to_unshallow_it() {
    let tmp = tempfile::tempdir().unwrap();
    let src = source_repo(&tmp.path().join("src"), &[("a.txt", "1\n")]);
    for i in 2..4 {
        std::fs::write(src.join("a.txt"), format!("{i}\n")).unwrap();
        git(&src, &["commit", "-qam", &format!("change {i}")]);
    }
    let url = format!("file://{}", src.display());
    git(
        tmp.path(),
        &["clone", "-q", "--depth", "1", &url, "shallow"],
    );
    let wt = berth_worktrees::Worktrees::open(tmp.path().join("state")).unwrap();
    let name = project("web");
    let err = wt
        .import_project(&name, &tmp.path().join("shallow"), None)
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::ShallowSource { .. }), "{msg}");
    assert!(msg.contains("git fetch --unshallow"), "{msg}");
    // No forge, not even a half-built one.
    assert!(!wt.layout().forge(&name).exists());
    assert_eq!(
        std::fs::read_dir(wt.layout().forge_dir()).unwrap().count(),
        0
    );
    // Unshallowed, it imports.
    git(&tmp.path().join("shallow"), &["fetch", "-q", "--unshallow"]);
    wt.import_project(&name, &tmp.path().join("shallow"), None)
        .unwrap();
}

#[test]
fn an_import_holding_an_object_over_max_object_bytes_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let src = source_repo(&tmp.path().join("src"), &[("a.txt", "1\n")]);
    // The big blob only on a side branch and under a tag: every ref counts.
    git(&src, &["checkout", "-qb", "side"]);
    std::fs::write(src.join("zeros.bin"), vec![0u8; 4 * 1024 * 1024]).unwrap();
    git(&src, &["add", "zeros.bin"]);
    git(&src, &["commit", "-qm", "big"]);
    git(&src, &["tag", "-a", "-m", "v1", "v1"]);
    git(&src, &["checkout", "-q", "main"]);
    git(&src, &["branch", "-qD", "side"]);
    let wt = berth_worktrees::Worktrees::open(tmp.path().join("state")).unwrap();
    let name = project("web");
    let limits = GitLimits {
        max_object_bytes: 1024 * 1024,
        ..GitLimits::default()
    };
    let err = wt
        .import_project_bounded(&name, &src, None, &limits)
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::ObjectTooLarge { .. }), "{msg}");
    assert!(!wt.layout().forge(&name).exists());
    // The default limit takes it.
    wt.import_project(&name, &src, None).unwrap();
}

#[test]
fn provisioning_again_never_writes_a_reflog_through_a_link() {
    let f = Fixture::new();
    let (p, a) = (&f.project, agent("dev-1"));
    let info = f.wt.provision(p, &a, &task("t"), None).unwrap();
    let repo = &info.agent_repo;
    // The agent asks for reflogs everywhere and points the base mirror's at
    // a host file.
    let repo_arg = format!("--git-dir={}", repo.display());
    git(
        repo,
        &[&repo_arg, "config", "core.logAllRefUpdates", "always"],
    );
    let outside = Outside::new();
    let before = outside.snapshot();
    plant_link(
        &repo.join("logs/refs/remotes/forge/main"),
        &outside.victim(),
    );
    // The forge's base moves on, so provisioning refreshes the mirror.
    std::fs::write(f.source.join("README.md"), "moved\n").unwrap();
    git(&f.source, &["commit", "-qam", "moved"]);
    let forge = f.forge();
    git(&f.source, &["push", "-q", forge.to_str().unwrap(), "main"]);

    let again = f.wt.provision(p, &a, &task("t"), None);
    eprintln!("provision again: {:?}", again.as_ref().map(|i| i.head));
    assert_eq!(
        outside.snapshot(),
        before,
        "a reflog line was written outside"
    );
}

#[test]
fn a_worktrees_directory_flipped_to_a_link_never_gets_berths_admin_files_outside() {
    let f = Fixture::new();
    let (p, a) = (&f.project, agent("dev-1"));
    let info = f.wt.provision(p, &a, &task("t0"), None).unwrap();
    let outside = tempfile::tempdir().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = flip(
        info.agent_repo.join("worktrees"),
        outside.path().to_path_buf(),
        stop.clone(),
    );
    let (mut made, n) = (0, rounds() / 2);
    for i in 0..n {
        let options = berth_worktrees::RecycleOptions {
            force: true,
            delete_branch: true,
            remove_repository: false,
        };
        let _ = f.wt.recycle(p, &a, options);
        if f.wt
            .provision(p, &a, &task(&format!("t{}", i + 1)), None)
            .is_ok()
        {
            made += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let flips = flipper.join().unwrap();
    eprintln!("{n} provisionings ({made} made) against {flips} flips");
    assert!(flips > 0, "the flipper never ran");
    let entries: Vec<_> = std::fs::read_dir(outside.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(entries, Vec::<PathBuf>::new(), "berth wrote outside");
}

/// A source repository whose tree names one 1 MiB blob at 64 paths: eight
/// directories holding the same eight copies (so one subtree at eight paths
/// too). Small to store, 64 MiB to check out.
fn repeated_blob_source(dir: &Path) -> PathBuf {
    let blob: Vec<u8> = (0..1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    std::fs::create_dir_all(dir).unwrap();
    for d in 0..8 {
        let sub = dir.join(format!("d{d}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..8 {
            std::fs::write(sub.join(format!("copy{f}.bin")), &blob).unwrap();
        }
    }
    std::fs::write(dir.join("README.md"), "hello\n").unwrap();
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "one blob at 64 paths"]);
    dir.to_path_buf()
}

fn checked_out_bins(worktree: &Path) -> usize {
    (0..8)
        .flat_map(|d| (0..8).map(move |f| worktree.join(format!("d{d}/copy{f}.bin"))))
        .filter(|p| p.exists())
        .count()
}

#[test]
fn a_checkout_over_max_checkout_bytes_is_refused_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let src = repeated_blob_source(&tmp.path().join("src"));
    let wt = berth_worktrees::Worktrees::open(tmp.path().join("state")).unwrap();
    let p = project("web");
    // Every object is far under max_object_bytes: the import takes it.
    wt.import_project(&p, &src, None).unwrap();
    let a = agent("dev-1");
    let limit = 16 * 1024 * 1024;
    let err = wt
        .provision_within(&p, &a, &task("t"), None, limit)
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, Error::CheckoutTooLarge { size, limit: l, .. } if size > limit && l == limit),
        "{msg}"
    );
    assert!(msg.contains("[git] max_checkout_bytes"), "{msg}");
    assert!(msg.contains(&limit.to_string()), "{msg}");
    assert!(msg.contains("nothing was checked out"), "{msg}");
    let worktree = wt.layout().worktree(&p, &a);
    assert_eq!(checked_out_bins(&worktree), 0, "nothing checked out");
    assert!(!worktree.join("README.md").exists());

    // Under the bound (64 MiB + a README) it checks out, over the leftover.
    let info = wt
        .provision_within(&p, &a, &task("t"), None, 65 * 1024 * 1024)
        .unwrap();
    assert_eq!(checked_out_bins(&info.path), 64);
    assert!(info.path.join("README.md").exists());
}

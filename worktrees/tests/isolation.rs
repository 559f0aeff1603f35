//! An agent owns its repository and worktree and may rewrite anything in them.
//! None of it may reach the forge, another agent, or run a program in berth.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use berth_worktrees::{Error, RecycleOptions};
use common::*;

fn script(path: &Path, marker: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        path,
        format!(
            "#!/bin/sh\necho \"$0\" >> '{}'\ncat >/dev/null 2>&1\nexit 0\n",
            marker.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn git_config(repo: &Path, key: &str, value: &str) {
    git(
        repo,
        &[
            "config",
            "-f",
            repo.join("config").to_str().unwrap(),
            key,
            value,
        ],
    );
}

/// Everything of a repository a write could change: refs and the files of
/// its directory (names and contents).
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                stack.push(p);
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn an_agent_rewriting_its_git_file_config_and_hooks_harms_no_one() {
    let f = Fixture::new();
    let p = &f.project;
    let (evil, victim) = (agent("evil"), agent("victim"));
    let ie = f.wt.provision(p, &evil, &task("t1"), None).unwrap();
    let iv = f.wt.provision(p, &victim, &task("t1"), None).unwrap();
    std::fs::write(iv.path.join("victim.txt"), "uncommitted victim work\n").unwrap();
    let victim_repo_before = snapshot(&iv.agent_repo);
    let victim_wt_before = snapshot(&iv.path);
    let forge_before = f.forge_refs();

    let marker = f.tmp.path().join("MARKER");
    let hooks = f.tmp.path().join("evil-hooks");
    let names = [
        "pre-commit",
        "prepare-commit-msg",
        "commit-msg",
        "post-commit",
        "pre-push",
        "reference-transaction",
        "post-checkout",
        "post-index-change",
        "fsmonitor-watchman",
    ];
    for name in names {
        script(&hooks.join(name), &marker);
        script(&ie.agent_repo.join("hooks").join(name), &marker);
    }
    let filter = f.tmp.path().join("evil-filter");
    script(&filter, &marker);

    let repo = &ie.agent_repo;
    let victim_repo = iv.agent_repo.to_str().unwrap();
    let forge = f.forge();
    let forge = forge.to_str().unwrap();
    // Configuration that would run programs or redirect berth's work.
    git_config(repo, "core.hooksPath", hooks.to_str().unwrap());
    git_config(repo, "core.fsmonitor", filter.to_str().unwrap());
    git_config(repo, "core.pager", filter.to_str().unwrap());
    git_config(repo, "filter.evil.clean", filter.to_str().unwrap());
    git_config(repo, "filter.evil.smudge", filter.to_str().unwrap());
    git_config(repo, "filter.evil.process", filter.to_str().unwrap());
    git_config(repo, &format!("url.{victim_repo}.pushInsteadOf"), forge);
    git_config(repo, &format!("url.{victim_repo}.insteadOf"), forge);
    git_config(repo, "core.worktree", iv.path.to_str().unwrap());
    git_config(repo, "core.bare", "false");
    std::fs::write(ie.path.join(".gitattributes"), "* filter=evil\n").unwrap();
    // Its worktree's .git file and its admin directory's gitdir file now point
    // at the victim.
    let victim_admin = f.wt.layout().worktree_admin(p, &victim);
    std::fs::write(
        ie.path.join(".git"),
        format!("gitdir: {}\n", victim_admin.display()),
    )
    .unwrap();
    std::fs::write(
        f.wt.layout().worktree_admin(p, &evil).join("gitdir"),
        format!("{}\n", iv.path.join(".git").display()),
    )
    .unwrap();
    std::fs::write(ie.path.join("evil.txt"), "mine\n").unwrap();

    // berth still commits, pushes, re-provisions and recycles the agent's own
    // things, and nothing else.
    let c =
        f.wt.commit(p, &evil, &commit_request("evil work", "act-1"))
            .unwrap();
    let pushed = f.wt.push(p, &evil, &ie.branch).unwrap();
    assert!(pushed.updated);
    let again = f.wt.provision(p, &evil, &task("t1"), None).unwrap();
    assert!(!again.created);

    assert!(
        !marker.exists(),
        "a program configured by the agent ran: {}",
        std::fs::read_to_string(&marker).unwrap()
    );

    // The commit is the agent's worktree, not the victim's.
    let files = git(repo, &["ls-tree", "-r", "--name-only", &c.oid.to_string()]);
    assert_eq!(
        files,
        ".gitattributes\n.gitignore\nREADME.md\nevil.txt\nsrc/lib.rs\n"
    );
    assert_eq!(
        git(repo, &["show", &format!("{}:evil.txt", c.oid)]),
        "mine\n"
    );
    // (no filter ran over the content either)
    assert_eq!(
        git(repo, &["rev-parse", "refs/heads/agent/evil/t1"]).trim(),
        c.oid.to_string()
    );

    // The forge gained exactly the agent's branch.
    let mut want = forge_before.clone();
    want.insert("refs/heads/agent/evil/t1".to_owned(), c.oid.to_string());
    assert_eq!(f.forge_refs(), want);
    // The victim's repository and worktree are byte for byte what they were.
    assert_eq!(snapshot(&iv.agent_repo), victim_repo_before);
    assert_eq!(snapshot(&iv.path), victim_wt_before);

    f.wt.recycle(
        p,
        &evil,
        RecycleOptions {
            force: true,
            ..RecycleOptions::default()
        },
    )
    .unwrap();
    assert!(!ie.path.exists());
    assert_eq!(snapshot(&iv.agent_repo), victim_repo_before);
    assert_eq!(snapshot(&iv.path), victim_wt_before);
    assert!(!marker.exists());
}

#[test]
fn redirecting_where_berth_finds_objects_or_admin_files_is_refused() {
    let f = Fixture::new();
    let p = &f.project;
    let (evil, victim) = (agent("evil"), agent("victim"));
    let layout = f.wt.layout();
    let iv = f.wt.provision(p, &victim, &task("t1"), None).unwrap();
    let victim_before = snapshot(&iv.agent_repo);

    type Tamper = fn(&Path, &Path, &Path);
    // (what, how, whether push refuses too — the admin directory's files are
    // the worktree's, which push does not read)
    let table: &[(&str, Tamper, bool)] = &[
        (
            "commondir at the top of the agent repository",
            |repo, victim_repo, _| {
                std::fs::write(
                    repo.join("commondir"),
                    format!("{}\n", victim_repo.display()),
                )
                .unwrap();
            },
            true,
        ),
        (
            "alternates naming another object store",
            |repo, victim_repo, _| {
                std::fs::write(
                    repo.join("objects/info/alternates"),
                    format!("{}\n", victim_repo.join("objects").display()),
                )
                .unwrap();
            },
            true,
        ),
        (
            "admin commondir naming the victim",
            |_, victim_repo, admin| {
                std::fs::write(
                    admin.join("commondir"),
                    format!("{}/\n", victim_repo.display()),
                )
                .unwrap();
            },
            false,
        ),
        (
            "worktrees directory replaced by a symlink",
            |repo, victim_repo, _| {
                std::fs::rename(repo.join("worktrees"), repo.join("worktrees.old")).unwrap();
                std::os::unix::fs::symlink(victim_repo.join("worktrees"), repo.join("worktrees"))
                    .unwrap();
            },
            true,
        ),
        (
            "the agent's own ref directory replaced by a symlink",
            |repo, victim_repo, _| {
                let own = repo.join("refs/heads/agent/evil");
                std::fs::rename(&own, repo.join("evil-refs.old")).unwrap();
                std::os::unix::fs::symlink(victim_repo.join("refs/heads/agent/victim"), own)
                    .unwrap();
            },
            true,
        ),
        (
            "a reflog directory replaced by a symlink",
            |repo, victim_repo, _| {
                let logs = repo.join("logs/refs/heads/agent");
                std::fs::rename(&logs, repo.join("logs-agent.old")).unwrap();
                std::os::unix::fs::symlink(victim_repo.join("logs/refs/heads/agent"), logs)
                    .unwrap();
            },
            true,
        ),
        (
            "an object directory replaced by a symlink",
            |repo, victim_repo, _| {
                // A fan-out directory the repository does not have yet (which
                // two hex digits its objects took varies from run to run).
                let free = (0..=255u8)
                    .map(|b| repo.join(format!("objects/{b:02x}")))
                    .find(|d| !d.exists())
                    .unwrap();
                std::os::unix::fs::symlink(victim_repo.join("objects/info"), free).unwrap();
            },
            true,
        ),
        (
            "refs directory replaced by a symlink",
            |repo, victim_repo, _| {
                std::fs::rename(repo.join("refs"), repo.join("refs.old")).unwrap();
                std::os::unix::fs::symlink(victim_repo.join("refs"), repo.join("refs")).unwrap();
            },
            true,
        ),
    ];
    for (what, tamper, push_refuses) in table {
        let ie = f.wt.provision(p, &evil, &task("t1"), None).unwrap();
        std::fs::write(ie.path.join("x.txt"), what).unwrap();
        f.wt.commit(
            p,
            &evil,
            &commit_request("before", &format!("pre-{}", what.len())),
        )
        .unwrap();
        std::fs::write(ie.path.join("y.txt"), what).unwrap();
        tamper(
            &ie.agent_repo,
            &iv.agent_repo,
            &layout.worktree_admin(p, &evil),
        );

        let forge_before = f.forge_refs();
        let mut refused = vec![(
            "commit",
            f.wt.commit(p, &evil, &commit_request("after", "act-after"))
                .map(|_| ()),
        )];
        let push = f.wt.push(p, &evil, &ie.branch).map(|_| ());
        if *push_refuses {
            refused.push(("push", push));
        } else {
            // The agent's own, untouched branch may still go to the forge.
            push.unwrap();
        }
        for (op, result) in refused {
            let err = result.expect_err(&format!("{what}: {op} must be refused"));
            assert!(matches!(err, Error::Tampered { .. }), "{what}: {op}: {err}");
            let msg = err.to_string();
            assert!(
                msg.contains("changed from inside the berth") && msg.contains("recycle"),
                "{msg}"
            );
        }
        assert_eq!(snapshot(&iv.agent_repo), victim_before, "{what}");
        let mut forge_now = f.forge_refs();
        forge_now.remove("refs/heads/agent/evil/t1");
        let mut forge_then = forge_before.clone();
        forge_then.remove("refs/heads/agent/evil/t1");
        assert_eq!(forge_now, forge_then, "{what}");

        // The way out the error names: recycle with force, remove the
        // repository, provision again.
        f.wt.recycle(
            p,
            &evil,
            RecycleOptions {
                force: true,
                remove_repository: true,
                ..RecycleOptions::default()
            },
        )
        .unwrap();
        assert_eq!(snapshot(&iv.agent_repo), victim_before, "{what}: recycle");
    }
    let ie = f.wt.provision(p, &evil, &task("t2"), None).unwrap();
    std::fs::write(ie.path.join("z.txt"), "z").unwrap();
    f.wt.commit(p, &evil, &commit_request("fine again", "act-z"))
        .unwrap();
}

//! A forge that is a git server: `git http-backend` on loopback
//! (`common/smart_http.rs`), a mirror in the state directory, berth's
//! restricted push kept exactly over HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use berth_worktrees::{Error, Forge, GitLimits, ProjectInfo, Worktrees};

use crate::common::smart_http::{Moment, SmartHttpServer};
use crate::common::*;

/// A server holding `web.git` (a bare clone of a small source repository,
/// pushes allowed) and a state directory whose project `web` is imported
/// from it.
pub(crate) struct ServerFixture {
    pub(crate) tmp: tempfile::TempDir,
    pub(crate) server: SmartHttpServer,
    pub(crate) wt: Worktrees,
    pub(crate) info: ProjectInfo,
}

impl ServerFixture {
    pub(crate) fn new() -> ServerFixture {
        let tmp = tempfile::tempdir().unwrap();
        let source = source_repo(
            &tmp.path().join("source"),
            &[("README.md", "hello\n"), ("src/lib.rs", "pub fn f() {}\n")],
        );
        let root = tmp.path().join("srv");
        std::fs::create_dir_all(&root).unwrap();
        git(
            &root,
            &["clone", "-q", "--bare", source.to_str().unwrap(), "web.git"],
        );
        git(
            &root.join("web.git"),
            &["config", "http.receivepack", "true"],
        );
        let server = SmartHttpServer::start(&root);
        let wt = Worktrees::open(tmp.path().join("state")).unwrap();
        let info = wt
            .import_project_from_server(
                &project("web"),
                &server.url("web.git"),
                None,
                &GitLimits::default(),
            )
            .unwrap();
        ServerFixture {
            tmp,
            server,
            wt,
            info,
        }
    }

    pub(crate) fn server_repo(&self) -> std::path::PathBuf {
        self.server.repo("web.git")
    }

    fn server_ref(&self, refname: &str) -> Option<String> {
        refs(&self.server_repo()).get(refname).cloned()
    }

    fn mirror_ref(&self, refname: &str) -> Option<String> {
        refs(&self.info.forge).get(refname).cloned()
    }

    /// A commit made on the server by someone else (a clone that pushes by
    /// path, as another host would), on top of `parent_ref`, set at `refname`.
    fn commit_elsewhere(&self, parent_ref: &str, refname: &str, file: &str) -> String {
        let other = self.tmp.path().join(format!("other-{file}"));
        let url = self.server_repo();
        git(
            self.tmp.path(),
            &[
                "clone",
                "-q",
                url.to_str().unwrap(),
                other.to_str().unwrap(),
            ],
        );
        git(
            &other,
            &["fetch", "-q", "origin", &format!("{parent_ref}:refs/x")],
        );
        git(&other, &["checkout", "-q", "refs/x"]);
        std::fs::write(other.join(file), "someone else\n").unwrap();
        git(&other, &["add", file]);
        git(&other, &["commit", "-q", "-m", "someone else's change"]);
        git(
            &other,
            &["push", "-q", "-f", "origin", &format!("HEAD:{refname}")],
        );
        git(&other, &["rev-parse", "HEAD"]).trim().to_owned()
    }
}

fn commit_file(f: &ServerFixture, agent_name: &str, file: &str, action: &str) -> String {
    let a = agent(agent_name);
    let worktree = f.wt.layout().worktree(&f.info.name, &a);
    std::fs::write(worktree.join(file), format!("{file} by {agent_name}\n")).unwrap();
    let out =
        f.wt.commit(&f.info.name, &a, &commit_request("Change", action))
            .unwrap();
    out.oid.to_string()
}

#[test]
fn provisioning_from_a_server_forge_borrows_the_local_mirror() {
    let f = ServerFixture::new();
    assert_eq!(
        f.info.location,
        Forge::Http {
            url: f.server.url("web.git")
        }
    );
    assert_eq!(f.info.base_branch, "main");
    let server_main = f.server_ref("refs/heads/main").unwrap();
    assert_eq!(f.info.base_head.to_string(), server_main);

    let info =
        f.wt.provision(&f.info.name, &agent("dev-1"), &task("t1"), None)
            .unwrap();
    assert_eq!(info.head.to_string(), server_main);
    assert_eq!(
        std::fs::read_to_string(info.path.join("README.md")).unwrap(),
        "hello\n"
    );
    // The agent repository borrows the mirror's objects, on this host.
    assert_eq!(info.forge_objects, f.info.forge.join("objects"));
    let alternates =
        std::fs::read_to_string(info.agent_repo.join("objects/info/alternates")).unwrap();
    assert_eq!(
        alternates.trim(),
        f.info.forge.join("objects").display().to_string()
    );
    // The project is listed with its server.
    let listed = f.wt.projects().unwrap();
    assert_eq!(listed, vec![f.info.clone()]);
}

#[test]
fn berths_push_reaches_the_server_under_the_agents_prefix_only() {
    let f = ServerFixture::new();
    let p = &f.info.name;
    let a = agent("dev-1");
    f.wt.provision(p, &a, &task("t1"), None).unwrap();
    let oid = commit_file(&f, "dev-1", "new.txt", "act-1");

    let out = f.wt.push(p, &a, "agent/dev-1/t1").unwrap();
    assert!(out.updated);
    assert_eq!(out.previous, None);
    assert_eq!(out.oid.to_string(), oid);
    let refname = "refs/heads/agent/dev-1/t1";
    assert_eq!(f.server_ref(refname).as_deref(), Some(oid.as_str()));
    assert_eq!(f.mirror_ref(refname).as_deref(), Some(oid.as_str()));
    assert_eq!(
        git(&f.server_repo(), &["show", &format!("{oid}:new.txt")]),
        "new.txt by dev-1\n"
    );
    // Again: nothing to do, nothing written.
    let again = f.wt.push(p, &a, "agent/dev-1/t1").unwrap();
    assert!(!again.updated);

    // Any other ref is refused before anything reaches the server.
    let before = refs(&f.server_repo());
    for other in ["main", "agent/dev-2/t1", "agent/dev-1"] {
        let e = f.wt.push(p, &a, other).unwrap_err();
        assert!(matches!(e, Error::RefNotAllowed { .. }), "{other}: {e}");
    }
    assert_eq!(refs(&f.server_repo()), before);
}

#[test]
fn a_rewritten_branch_is_never_forced_onto_the_server() {
    let f = ServerFixture::new();
    let p = &f.info.name;
    let a = agent("dev-1");
    let info = f.wt.provision(p, &a, &task("t1"), None).unwrap();
    let pushed = commit_file(&f, "dev-1", "one.txt", "act-1");
    f.wt.push(p, &a, "agent/dev-1/t1").unwrap();
    // The agent rewrites its pushed commit (as it may, in its own repository).
    git(&info.path, &["commit", "-q", "--amend", "-m", "rewritten"]);

    let e = f.wt.push(p, &a, "agent/dev-1/t1").unwrap_err();
    assert!(matches!(e, Error::NonFastForward { .. }), "{e}");
    let refname = "refs/heads/agent/dev-1/t1";
    assert_eq!(f.server_ref(refname).as_deref(), Some(pushed.as_str()));
    assert_eq!(f.mirror_ref(refname).as_deref(), Some(pushed.as_str()));
}

#[test]
fn someone_elses_update_on_the_server_makes_berths_push_fail_not_overwrite() {
    let f = ServerFixture::new();
    let p = &f.info.name;
    let a = agent("dev-1");
    let refname = "refs/heads/agent/dev-1/t1";
    f.wt.provision(p, &a, &task("t1"), None).unwrap();
    let first = commit_file(&f, "dev-1", "one.txt", "act-1");
    f.wt.push(p, &a, "agent/dev-1/t1").unwrap();
    let second = commit_file(&f, "dev-1", "two.txt", "act-2");

    // 1. Before berth's push: berth's refresh learns the new value, and the
    //    agent's commit does not contain it.
    let theirs = f.commit_elsewhere(&first, refname, "theirs-1.txt");
    let e = f.wt.push(p, &a, "agent/dev-1/t1").unwrap_err();
    assert!(matches!(e, Error::NonFastForward { .. }), "{e}");
    assert_eq!(f.server_ref(refname).as_deref(), Some(theirs.as_str()));

    // Put the server back where berth last pushed (as an operator would).
    let server = f.server_repo();
    git(&server, &["update-ref", refname, &first]);

    // 2. Between berth's refresh and its push: the value the server
    //    advertises for the push is not the one berth expects — berth's own
    //    check refuses before any object is sent.
    let (srv, base) = (server.clone(), second.clone());
    let other = f.commit_elsewhere(&first, "refs/heads/side", "theirs-2.txt");
    let moved = other.clone();
    f.server.before_next(Moment::PushAdvertisement, move || {
        git(&srv, &["update-ref", "refs/heads/agent/dev-1/t1", &moved]);
    });
    let e = f.wt.push(p, &a, "agent/dev-1/t1").unwrap_err();
    match &e {
        Error::ForgeRefStale {
            refname: r,
            expected,
            found,
            ..
        } => {
            assert_eq!(r, refname);
            assert_eq!(expected.map(|o| o.to_string()), Some(first.clone()));
            assert_eq!(found.map(|o| o.to_string()), Some(other.clone()));
        }
        e => panic!("expected a stale compare-and-swap, got {e}"),
    }
    assert!(e.to_string().contains("someone else updated it"), "{e}");
    assert_eq!(f.server_ref(refname).as_deref(), Some(other.as_str()));
    assert_ne!(f.server_ref(refname), Some(base));

    // 3. Between the advertisement berth checked and the push: the server's
    //    receive-pack checks the old value under the ref's lock and refuses.
    git(&server, &["update-ref", refname, &first]);
    let srv = server.clone();
    let moved = other.clone();
    f.server.before_next(Moment::Receive, move || {
        git(&srv, &["update-ref", "refs/heads/agent/dev-1/t1", &moved]);
    });
    let e = f.wt.push(p, &a, "agent/dev-1/t1").unwrap_err();
    assert!(matches!(e, Error::ForgeRefused { .. }), "{e}");
    assert_eq!(f.server_ref(refname).as_deref(), Some(other.as_str()));
    // The mirror did not move either: it still holds what berth last pushed.
    assert_eq!(f.mirror_ref(refname).as_deref(), Some(first.as_str()));

    // With the server left alone, the same push goes through.
    git(&server, &["update-ref", refname, &first]);
    let out = f.wt.push(p, &a, "agent/dev-1/t1").unwrap();
    assert_eq!(out.oid.to_string(), second);
    assert_eq!(f.server_ref(refname).as_deref(), Some(second.as_str()));
}

#[test]
fn a_new_commit_on_the_servers_base_reaches_a_reprovisioned_agent() {
    let f = ServerFixture::new();
    let p = &f.info.name;
    let a = agent("dev-1");
    f.wt.provision(p, &a, &task("t1"), None).unwrap();
    let upstream = f.commit_elsewhere("refs/heads/main", "refs/heads/main", "upstream.txt");

    f.wt.recycle(
        p,
        &a,
        berth_worktrees::RecycleOptions {
            force: true,
            delete_branch: true,
            remove_repository: false,
        },
    )
    .unwrap();
    let info = f.wt.provision(p, &a, &task("t2"), None).unwrap();
    assert_eq!(info.head.to_string(), upstream);
    assert_eq!(
        std::fs::read_to_string(info.path.join("upstream.txt")).unwrap(),
        "someone else\n"
    );
    assert_eq!(
        f.mirror_ref("refs/heads/main").as_deref(),
        Some(upstream.as_str())
    );
}

#[test]
fn a_server_that_went_away_fails_clearly_and_loses_nothing() {
    let mut f = ServerFixture::new();
    let p = f.info.name.clone();
    let a = agent("dev-1");
    let info = f.wt.provision(&p, &a, &task("t1"), None).unwrap();
    let oid = commit_file(&f, "dev-1", "work.txt", "act-1");
    let addr = f.server.addr();
    f.server.stop();

    let e = f.wt.push(&p, &a, "agent/dev-1/t1").unwrap_err();
    assert!(matches!(e, Error::ForgeUnreachable { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.contains(&f.info.location.url().unwrap().to_owned()),
        "{text}"
    );
    assert!(text.contains("Start the server again"), "{text}");
    assert!(text.contains("stays in its own repository"), "{text}");
    // Provisioning another agent fails the same way.
    let e =
        f.wt.provision(&p, &agent("dev-2"), &task("t1"), None)
            .unwrap_err();
    assert!(matches!(e, Error::ForgeUnreachable { .. }), "{e}");
    // The agent's work is where it was.
    assert_eq!(
        git(
            &info.agent_repo,
            &["rev-parse", "refs/heads/agent/dev-1/t1"]
        )
        .trim(),
        oid
    );
    assert_eq!(f.mirror_ref("refs/heads/agent/dev-1/t1"), None);

    // The server back at its address: the same push goes through.
    let root = f.server_repo().parent().unwrap().to_path_buf();
    f.server = SmartHttpServer::start_at(&root, addr);
    let out = f.wt.push(&p, &a, "agent/dev-1/t1").unwrap();
    assert_eq!(out.oid.to_string(), oid);
    assert_eq!(
        f.server_ref("refs/heads/agent/dev-1/t1").as_deref(),
        Some(oid.as_str())
    );
}

#[test]
fn importing_from_a_server_refuses_what_it_cannot_reach_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let wt = Worktrees::open(tmp.path().join("state")).unwrap();
    let p = project("web");
    let e = wt
        .import_project_from_server(&p, "ftp://example.com/r.git", None, &GitLimits::default())
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidInput {
                field: "forge URL",
                ..
            }
        ),
        "{e}"
    );
    // A port nothing listens on (bound, then dropped).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for scheme in ["http", "https"] {
        let url = format!("{scheme}://127.0.0.1:{port}/web.git");
        let e = wt
            .import_project_from_server(&p, &url, None, &GitLimits::default())
            .unwrap_err();
        assert!(matches!(e, Error::ForgeUnreachable { .. }), "{url}: {e}");
    }
    // A server that speaks plain HTTP where https:// was asked for: no TLS
    // handshake, so unreachable (not a certificate this host refused).
    let root = tmp.path().join("srv");
    std::fs::create_dir_all(root.join("web.git")).unwrap();
    let plain = SmartHttpServer::start(&root);
    let url = format!("https://{}/web.git", plain.addr());
    let e = wt
        .import_project_from_server(&p, &url, None, &GitLimits::default())
        .unwrap_err();
    assert!(matches!(e, Error::ForgeUnreachable { .. }), "{url}: {e}");
    assert_eq!(
        std::fs::read_dir(wt.layout().forge_dir()).unwrap().count(),
        0,
        "nothing left in the forge directory"
    );
    assert!(wt.projects().unwrap().is_empty());
}

#[test]
fn a_merge_on_a_server_forge_moves_the_servers_base() {
    let f = ServerFixture::new();
    let p = &f.info.name;
    let a = agent("dev-1");
    f.wt.provision(p, &a, &task("t1"), None).unwrap();
    let oid = commit_file(&f, "dev-1", "feature.txt", "act-1");
    f.wt.push(p, &a, "agent/dev-1/t1").unwrap();
    let out =
        f.wt.merge(
            p,
            &berth_worktrees::MergeRequest {
                source: "agent/dev-1/t1".to_owned(),
                target: "main".to_owned(),
                identity: berth_worktrees::Identity::new("Berth", "berth@example.com").unwrap(),
                message: None,
            },
        )
        .unwrap();
    assert_eq!(out.oid.to_string(), oid);
    assert_eq!(
        f.server_ref("refs/heads/main").as_deref(),
        Some(oid.as_str())
    );
    assert_eq!(
        f.mirror_ref("refs/heads/main").as_deref(),
        Some(oid.as_str())
    );
}

/// A directory forge says so, and records no server.
#[test]
fn a_directory_forge_is_its_own_forge() {
    let f = Fixture::new();
    let info = f.wt.project(&f.project).unwrap();
    assert_eq!(info.location, Forge::Directory);
    assert_eq!(info.location.url(), None);
    assert!(
        !git(&f.forge(), &["config", "--local", "--list"]).contains("berth.forgeurl"),
        "no server recorded"
    );
}

#[test]
fn saved_work_goes_to_the_server_and_is_dropped_there() {
    let f = ServerFixture::new();
    let p = &f.info.name;
    let a = agent("dev-1");
    let info = f.wt.provision(p, &a, &task("t1"), None).unwrap();
    commit_file(&f, "dev-1", "kept.txt", "act-1");
    std::fs::write(info.path.join("draft.txt"), "uncommitted\n").unwrap();

    let saved = f.wt.save_unpushed(p, &a, "s1").unwrap().unwrap();
    assert!(saved.committed_changes);
    let refname = "refs/berth/saved/dev-1/s1";
    assert_eq!(saved.refname, refname);
    let oid = saved.oid.to_string();
    assert_eq!(f.server_ref(refname).as_deref(), Some(oid.as_str()));
    assert_eq!(
        git(&f.server_repo(), &["show", &format!("{oid}:draft.txt")]),
        "uncommitted\n"
    );
    assert_eq!(
        f.wt.saved(p).unwrap(),
        vec![(refname.to_owned(), saved.oid)]
    );

    assert!(f.wt.drop_saved(p, "dev-1/s1").unwrap());
    assert_eq!(f.server_ref(refname), None);
    assert!(f.wt.saved(p).unwrap().is_empty());
    assert!(!f.wt.drop_saved(p, "dev-1/s1").unwrap());
}

/// A second host (a worker with its own state directory) mirroring the same
/// server: what the first saved reaches its mirror with the next refresh,
/// as its own provisioning makes, so a takeover finds it.
#[test]
fn saved_work_reaches_another_hosts_mirror_with_its_refresh() {
    let f = ServerFixture::new();
    let p = &f.info.name;
    let a = agent("dev-1");
    let info = f.wt.provision(p, &a, &task("t1"), None).unwrap();
    std::fs::write(info.path.join("draft.txt"), "uncommitted\n").unwrap();
    let saved = f.wt.save_unpushed(p, &a, "s1").unwrap().unwrap();

    let other = Worktrees::open(f.tmp.path().join("state-2")).unwrap();
    other
        .import_project_from_server(p, &f.server.url("web.git"), None, &GitLimits::default())
        .unwrap();
    // The import mirrors it already; a later save arrives by refresh.
    assert_eq!(
        other.saved(p).unwrap(),
        vec![(saved.refname.clone(), saved.oid)]
    );
    std::fs::write(info.path.join("draft.txt"), "more\n").unwrap();
    let later = f.wt.save_unpushed(p, &a, "s2").unwrap().unwrap();
    assert_eq!(other.saved(p).unwrap().len(), 1, "no refresh yet");
    other
        .provision(p, &agent("dev-2"), &task("t2"), None)
        .unwrap();
    assert_eq!(
        other.saved(p).unwrap(),
        vec![(saved.refname, saved.oid), (later.refname, later.oid)]
    );
}

#[test]
fn a_sync_of_a_server_project_follows_the_server() {
    use berth_worktrees::SyncStatus;
    let f = ServerFixture::new();
    let p = &f.info.name;
    let start = f.info.base_head;
    let synced = f.wt.sync_from_server(p).unwrap().unwrap();
    assert_eq!((synced.status, synced.after), (SyncStatus::UpToDate, start));

    let ahead = f.commit_elsewhere("refs/heads/main", "refs/heads/main", "a.txt");
    let synced = f.wt.sync_from_server(p).unwrap().unwrap();
    assert_eq!(synced.status, SyncStatus::FastForwarded);
    assert_eq!(synced.after.to_string(), ahead);

    // Rewritten on the server (a force-push by its owner): the mirror follows.
    let rewritten = f.commit_elsewhere(&start.to_string(), "refs/heads/main", "b.txt");
    let synced = f.wt.sync_from_server(p).unwrap().unwrap();
    assert_eq!(synced.status, SyncStatus::RewrittenOnServer);
    assert_eq!(synced.before.to_string(), ahead);
    assert_eq!(f.mirror_ref("refs/heads/main"), Some(rewritten));

    // A directory forge syncs from its source instead.
    let d = Fixture::new();
    assert_eq!(d.wt.sync_from_server(&d.project).unwrap(), None);
}

/// After a crash between the server taking a push and the mirror's ref
/// moving, the server itself says the push happened.
#[test]
fn whether_the_forge_has_a_push_is_asked_of_the_server() {
    let f = ServerFixture::new();
    let p = &f.info.name;
    let a = agent("dev-1");
    f.wt.provision(p, &a, &task("t1"), None).unwrap();
    let oid = commit_file(&f, "dev-1", "one.txt", "act-1");
    f.wt.push(p, &a, "agent/dev-1/t1").unwrap();
    // The mirror as a crash right after the server's answer leaves it.
    git(
        &f.info.forge,
        &["update-ref", "-d", "refs/heads/agent/dev-1/t1"],
    );
    let oid = berth_worktrees::Oid::from_str(&oid).unwrap();
    assert!(f.wt.forge_has(p, "agent/dev-1/t1", oid).unwrap());
    assert_eq!(
        f.mirror_ref("refs/heads/agent/dev-1/t1"),
        Some(oid.to_string())
    );
    assert!(!f.wt.forge_has(p, "agent/dev-1/t2", oid).unwrap());
}

/// A server that does not take pushes over HTTP fails the push with the
/// server's answer, and nothing moves.
#[test]
fn a_server_that_refuses_pushes_is_named_and_nothing_moves() {
    let f = ServerFixture::new();
    let p = &f.info.name;
    let a = agent("dev-1");
    f.wt.provision(p, &a, &task("t1"), None).unwrap();
    commit_file(&f, "dev-1", "one.txt", "act-1");
    git(&f.server_repo(), &["config", "http.receivepack", "false"]);
    let e = f.wt.push(p, &a, "agent/dev-1/t1").unwrap_err();
    assert!(matches!(e, Error::ForgeUnreachable { .. }), "{e}");
    assert!(e.to_string().contains("403"), "{e}");
    assert_eq!(f.server_ref("refs/heads/agent/dev-1/t1"), None);
    assert_eq!(f.mirror_ref("refs/heads/agent/dev-1/t1"), None);
}

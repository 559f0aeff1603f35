//! Removal keeps the promise `down` makes: `remove_agent` saves what the
//! agent left in its worktree into the forge (unless `discard`) before its
//! berth, repositories and records go; it refuses while the agent works;
//! a removed agent is made again with a fresh berth. `remove_project`
//! refuses while its forge holds saved work, and with `discard` leaves no
//! forge, state directory, container or disk — and the source repository
//! as it was. `archive_task` and `remove_task` keep history. Real git, a
//! real store, real processes; the mounted case against the Docker engine.

use crate::common;

use std::path::{Path, PathBuf};

use berth_engine::{AgentImpl, AgentStatus, BerthMode, EngineError, NewProject, TaskStatus};
use berth_policy::autonomy::Approval;
use common::{Fixture, named, terminal, terminal_proposal, user};

/// Every file under `dir` (its `.git` included), with its bytes and mode.
fn tree(dir: &Path) -> Vec<(PathBuf, u32, Vec<u8>)> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let meta = std::fs::symlink_metadata(e.path()).unwrap();
            if meta.is_dir() {
                stack.push(e.path());
            } else {
                let bytes = std::fs::read(e.path()).unwrap_or_default();
                out.push((e.path(), meta.mode(), bytes));
            }
        }
    }
    out.sort();
    out
}

/// What a refused call said.
fn refusal<T: std::fmt::Debug>(r: berth_engine::Result<T>) -> String {
    r.unwrap_err().to_string()
}

/// Sets dev-1's autonomy for `kind` as the person.
async fn autonomy(f: &Fixture, kind: &str, mode: Approval) {
    f.engine
        .set_autonomy("dev-1", kind, mode, &user())
        .await
        .unwrap();
}

fn state(f: &Fixture) -> PathBuf {
    f.dir.path().join("state")
}

/// Brings `agent` of project `demo` up in runner mode; its worktree.
pub(crate) async fn up_runner(f: &Fixture, agent: &str) -> PathBuf {
    f.engine
        .up(
            &named(agent),
            &named("demo"),
            Some(BerthMode::Runner),
            &user(),
        )
        .await
        .unwrap()
        .worktree
        .unwrap()
}

async fn status_of(f: &Fixture, agent: &str) -> String {
    sqlx::query_scalar("SELECT status FROM agents WHERE name = $1")
        .bind(agent)
        .fetch_one(f.engine.store().pool())
        .await
        .unwrap()
}

/// dev-1 is removed: its row says so, and nothing acts as it.
async fn assert_removed(f: &Fixture) {
    assert_eq!(status_of(f, "dev-1").await, "removed");
    let gone = f.engine.agent("dev-1").await.unwrap_err();
    assert!(matches!(gone, EngineError::AgentRemoved { .. }), "{gone}");
    assert!(gone.to_string().contains("berth agent activate dev-1"));
    assert!(f.engine.agents().await.unwrap().is_empty());
    let up = f
        .engine
        .up(
            &named("dev-1"),
            &named("demo"),
            Some(BerthMode::Runner),
            &user(),
        )
        .await
        .unwrap_err();
    assert!(matches!(up, EngineError::AgentRemoved { .. }), "{up}");
}

#[tokio::test]
async fn agent_rm_saves_dirty_work_then_leaves_nothing_and_the_name_comes_back_fresh() {
    let f = Fixture::new().await;
    f.agent("dev-1", AgentImpl::Real).await;
    let wt = up_runner(&f, "dev-1").await;
    let (code, _, err) = terminal(&f.engine, "dev-1", "echo mine > dirty.txt").await;
    assert_eq!(code, 0, "{err}");
    autonomy(&f, "terminal", Approval::RequireApproval).await;
    let pending = f
        .engine
        .propose(terminal_proposal("dev-1", "echo later"), None)
        .await
        .unwrap();
    autonomy(&f, "file_write", Approval::AutoApprove).await;

    let r = f
        .engine
        .remove_agent("dev-1", Some("demo"), false, &user())
        .await
        .unwrap();
    let saved = r.saved.expect("the dirty worktree was saved");
    assert!(saved.refname.starts_with("refs/berth/saved/dev-1/"));
    assert!(saved.committed_changes);
    assert_eq!(
        f.forge_git(&["show", &format!("{}:dirty.txt", saved.refname)]),
        "mine\n"
    );
    let listed = f.engine.saved_work(Some("demo")).await.unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].refname, saved.refname);
    assert_eq!(r.denied, vec![pending.id.clone()]);
    let action = f.engine.action(&pending.id).await.unwrap();
    assert_eq!(action.status.as_str(), "denied");
    assert_eq!(action.decided_by.as_deref(), Some("berth"));

    // Nothing of the berth is left: worktree, repository, record, home.
    let s = state(&f);
    assert!(!wt.exists());
    assert!(!s.join("berths/demo/dev-1").exists());
    assert!(!s.join("agents/demo/dev-1.worktree").exists());
    assert!(!s.join("identities/demo/dev-1").exists());
    assert!(!s.join("disks/demo/dev-1.img").exists());
    assert!(!s.join("locks/agents/demo/dev-1.lock").exists());
    assert_removed(&f).await;
    let again = f
        .engine
        .remove_agent("dev-1", None, false, &user())
        .await
        .unwrap_err();
    assert!(matches!(again, EngineError::AgentRemoved { .. }), "{again}");
    // Its history stays: the action row, and the events naming it.
    let types = f.event_types().await;
    for want in ["agent.removed", "berth.down", "worktree.recycled"] {
        assert!(types.iter().any(|t| t == want), "no {want}: {types:?}");
    }

    // Activated again: idle, reseeded, and a fresh berth without the old work.
    let a = f
        .engine
        .activate_agent(&named("dev-1"), &named("demo"), AgentImpl::Noop, &user())
        .await
        .unwrap();
    assert_eq!(a.status, AgentStatus::Idle);
    assert!(a.worktree.is_none() && a.task.is_none());
    let modes = f.engine.autonomy("dev-1").await.unwrap();
    assert_ne!(
        modes.resolve("file_write").mode,
        Approval::AutoApprove,
        "the old autonomy went with it"
    );
    assert_eq!(
        modes.resolve("git_commit").mode,
        Approval::AutoApprove,
        "reseeded"
    );
    let wt = up_runner(&f, "dev-1").await;
    assert!(wt.join("README.md").is_file());
    assert!(!wt.join("dirty.txt").exists(), "a fresh berth");
    let activated = f
        .engine
        .events(&berth_engine::EventFilter::default())
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "agent.activated")
        .map(|e| e.payload["revived"].clone())
        .collect::<Vec<_>>();
    assert_eq!(
        activated,
        [serde_json::json!(false), serde_json::json!(true)]
    );
}

#[tokio::test]
async fn agent_rm_with_discard_saves_nothing() {
    let f = Fixture::new().await;
    f.agent("dev-1", AgentImpl::Real).await;
    up_runner(&f, "dev-1").await;
    let (code, _, _) = terminal(&f.engine, "dev-1", "echo mine > dirty.txt").await;
    assert_eq!(code, 0);
    let r = f
        .engine
        .remove_agent("dev-1", None, true, &user())
        .await
        .unwrap();
    assert!(r.saved.is_none() && r.discarded);
    assert!(f.engine.saved_work(None).await.unwrap().is_empty());
    assert!(!state(&f).join("berths/demo/dev-1").exists());
}

#[tokio::test]
async fn a_proposal_of_an_agent_whose_project_is_removed_is_refused_and_recorded_nowhere() {
    let f = Fixture::new().await;
    f.agent("dev-1", AgentImpl::Real).await;
    up_runner(&f, "dev-1").await;
    autonomy(&f, "terminal", Approval::AutoApprove).await;
    assert_eq!(terminal(&f.engine, "dev-1", "echo live").await.1, "live\n");
    // The project's row removed under a live agent (`berth project rm`
    // removes its agents first; a store left half-way must still refuse).
    let pool = f.engine.store().pool().clone();
    sqlx::query("UPDATE projects SET removed_at = 1 WHERE name = 'demo'")
        .execute(&pool)
        .await
        .unwrap();
    let count = || async {
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM proposed_actions")
            .fetch_one(&pool)
            .await
            .unwrap()
    };
    let before = count().await;
    let proposed = f
        .engine
        .propose(terminal_proposal("dev-1", "echo never"), None)
        .await;
    match proposed {
        Err(EngineError::UnknownProject(p)) => assert_eq!(p, "demo"),
        other => panic!(
            "not refused as an unknown project: {:?}",
            other.map(|p| p.id)
        ),
    }
    assert_eq!(count().await, before, "nothing recorded");
}

#[tokio::test]
async fn agent_rm_refuses_while_the_agent_works_and_says_what_to_do() {
    let f = Fixture::new().await;
    f.agent("dev-1", AgentImpl::Real).await;
    up_runner(&f, "dev-1").await;
    autonomy(&f, "terminal", Approval::AutoApprove).await;

    // An action executing in its berth: a real process, running.
    let pool = f.engine.store().pool().clone();
    let (ran, refused) = tokio::join!(terminal(&f.engine, "dev-1", "sleep 3; echo done"), async {
        for _ in 0..200 {
            let n: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM proposed_actions WHERE status = 'executing'",
            )
            .fetch_one(&pool)
            .await
            .unwrap();
            if n == 1 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        f.engine.remove_agent("dev-1", None, false, &user()).await
    });
    assert_eq!(ran.1, "done\n", "the command ran to its end");
    let refused = refused.unwrap_err().to_string();
    assert!(refused.contains("executing"), "{refused}");
    assert!(refused.contains("berth actions --agent dev-1"), "{refused}");
    assert_eq!(status_of(&f, "dev-1").await, "idle");
    assert!(state(&f).join("berths/demo/dev-1/dev-1").is_dir());

    // A task it holds: resolve it first.
    let t = f.engine.create_task("demo", "work", &user()).await.unwrap();
    f.engine.claim_task("dev-1").await.unwrap().unwrap();
    let refused = refusal(f.engine.remove_agent("dev-1", None, false, &user()).await);
    assert!(
        refused.contains(&t.id[..8]) && refused.contains("resolve it first"),
        "{refused}"
    );
    assert_eq!(status_of(&f, "dev-1").await, "working");
    let wrong = f
        .engine
        .remove_agent("dev-1", Some("other"), false, &user())
        .await
        .unwrap_err();
    assert!(matches!(wrong, EngineError::WrongProject { .. }), "{wrong}");
}

#[tokio::test]
async fn project_rm_refuses_with_saved_work_and_with_discard_leaves_nothing_but_the_source() {
    let f = Fixture::new().await;
    let src = f.dir.path().join("src");
    let before = tree(&src);
    f.agent("dev-1", AgentImpl::Real).await;
    f.agent("dev-2", AgentImpl::Real).await;
    up_runner(&f, "dev-1").await;
    up_runner(&f, "dev-2").await;
    let (code, _, _) = terminal(&f.engine, "dev-1", "echo one > one.txt").await;
    assert_eq!(code, 0);
    // A link to the source repository: removed as the link it is.
    let link = format!("ln -s {} escape && echo x > escape/x", src.display());
    let (code, _, _) = terminal(&f.engine, "dev-2", &link).await;
    assert_ne!(code, 0, "the source is out of the berth's reach");
    let (code, _, err) = terminal(
        &f.engine,
        "dev-2",
        &format!("ln -sfn {} escape", src.display()),
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let todo = f
        .engine
        .create_task("demo", "later", &user())
        .await
        .unwrap();

    // dev-1's work is saved by its removal; then the forge holds it and the
    // project stays, saying how to keep or drop it.
    let refused = refusal(f.engine.remove_project("demo", false, &user()).await);
    assert!(refused.contains("refs/berth/saved/dev-1/"), "{refused}");
    assert!(refused.contains("its agents were removed"), "{refused}");
    assert!(refused.contains("berth saved drop demo") && refused.contains("--discard"));
    assert!(f.forge().is_dir());
    assert_eq!(f.engine.projects().await.unwrap().len(), 1);
    assert!(f.engine.agents().await.unwrap().is_empty());
    let saved = f.engine.saved_work(Some("demo")).await.unwrap();
    assert_eq!(saved.len(), 2, "each agent's work: {saved:?}");
    let of_dev2 = saved
        .iter()
        .find(|s| s.refname.starts_with("refs/berth/saved/dev-2/"))
        .unwrap();
    let listing = f.forge_git(&["ls-tree", &of_dev2.refname, "escape"]);
    assert!(
        listing.starts_with("120000 "),
        "saved as the link it is: {listing}"
    );

    // Asked again: refused before anything, the saved work named.
    let refused = refusal(f.engine.remove_project("demo", false, &user()).await);
    assert!(refused.contains("nothing was removed"), "{refused}");

    let r = f
        .engine
        .remove_project("demo", true, &user())
        .await
        .unwrap();
    assert!(r.discarded && r.agents.is_empty());
    assert_eq!(r.archived, vec![todo.id.clone()]);
    let s = state(&f);
    for gone in [
        "forge/demo.git",
        "projects/demo",
        "berths/demo",
        "agents/demo",
        "identities/demo",
        "disks/demo",
        "locks/agents/demo",
        "locks/forge/demo.lock",
    ] {
        assert!(!s.join(gone).exists(), "{gone} is left");
    }
    assert!(f.engine.projects().await.unwrap().is_empty());
    assert!(matches!(
        f.engine.project("demo").await.unwrap_err(),
        EngineError::UnknownProject(_)
    ));
    assert!(f.engine.task(&todo.id).await.unwrap().archived_at.is_some());
    assert_eq!(
        tree(&src),
        before,
        "the source repository is byte-identical"
    );
    assert!(f.event_types().await.iter().any(|t| t == "project.removed"));

    // Added again: a project anew, from its source.
    f.engine
        .add_project(
            NewProject {
                name: named("demo"),
                from: src.clone(),
                base: None,
                forge_url: None,
            },
            &user(),
        )
        .await
        .unwrap();
    assert!(f.forge().is_dir());
    f.agent("dev-1", AgentImpl::Real).await;
    assert!(up_runner(&f, "dev-1").await.join("README.md").is_file());
    assert!(
        f.engine.claim_task("dev-1").await.unwrap().is_none(),
        "an archived task is never claimed"
    );
}

#[tokio::test]
async fn project_rm_refuses_while_an_agent_works_and_removes_nothing() {
    let f = Fixture::new().await;
    f.agent("dev-1", AgentImpl::Real).await;
    f.agent("dev-2", AgentImpl::Real).await;
    f.engine.create_task("demo", "work", &user()).await.unwrap();
    f.engine.claim_task("dev-2").await.unwrap().unwrap();
    let refused = refusal(f.engine.remove_project("demo", true, &user()).await);
    assert!(
        refused.contains("nothing was") && refused.contains("dev-2"),
        "{refused}"
    );
    assert_eq!(f.engine.agents().await.unwrap().len(), 2);
    assert!(f.forge().is_dir());
}

#[tokio::test]
async fn a_todo_task_is_removed_an_ended_one_archived_and_history_stays() {
    let f = Fixture::new().await;
    f.agent("dev-1", AgentImpl::Real).await;
    up_runner(&f, "dev-1").await;
    let todo = f
        .engine
        .create_task("demo", "never", &user())
        .await
        .unwrap();
    let refused = refusal(f.engine.archive_task(&todo.id, &user()).await);
    assert!(
        refused.contains(&format!("berth task rm {}", &todo.id[..8])),
        "{refused}"
    );
    let removed = f.engine.remove_task(&todo.id[..8], &user()).await.unwrap();
    assert_eq!(removed.title, "never");
    assert!(f.engine.task(&todo.id).await.is_err());
    let events = f
        .engine
        .events(&berth_engine::EventFilter::default())
        .await
        .unwrap();
    let of_it: Vec<&str> = events
        .iter()
        .filter(|e| e.task.as_deref() == Some(todo.id.as_str()))
        .map(|e| e.kind.as_str())
        .collect();
    assert_eq!(of_it, ["task.created", "task.removed"]);

    // A pipeline task run to its end in auto mode: done, with history.
    autonomy(&f, "terminal", Approval::AutoApprove).await;
    let pipe = f.done_task("dev-1", "pipe").await;
    let refused = refusal(f.engine.remove_task(&pipe, &user()).await);
    assert!(
        refused.contains(&format!("berth task archive {}", &pipe[..8])),
        "{refused}"
    );
    let archived = f.engine.archive_task(&pipe, &user()).await.unwrap();
    let at = archived.archived_at.expect("archived");
    let again = f.engine.archive_task(&pipe, &user()).await.unwrap();
    assert_eq!(
        again.archived_at,
        Some(at),
        "archiving twice changes nothing"
    );
    assert_eq!(archived.status, TaskStatus::Done);
    let types = f.event_types().await;
    assert_eq!(types.iter().filter(|t| *t == "task.archived").count(), 1);
    assert!(types.iter().any(|t| t == "task.done"), "its history stays");
}

#[tokio::test]
async fn a_mounted_agent_and_its_project_go_without_a_trace_but_their_saved_work() {
    use berth_sandbox::disk;
    let Some(m) = crate::mounted::mounted("rm", "").await else {
        return;
    };
    let src = m.dir.path().join("src");
    let before = tree(&src);
    let wt = m.up("dev-1").await;
    assert!(m.container_exists("dev-1").await);
    m.ok("dev-1", "echo inside > /work/made.txt").await;
    // Links to the host's paths: removed as links, never followed.
    m.ok(
        "dev-1",
        &format!(
            "ln -s {} /work/srclink && ln -s {} /work/.git-link",
            src.display(),
            src.join(".git").display()
        ),
    )
    .await;
    let s = m.state();
    let berth_dir = s.join("berths").join(&m.project).join("dev-1");
    let image = s.join("disks").join(&m.project).join("dev-1.img");
    let had_disk = disk::mounted_at(&berth_dir).unwrap().is_some();
    assert_eq!(had_disk, disk::unavailable().is_none(), "a disk of its own");

    let r = m
        .engine
        .remove_agent("dev-1", None, false, &user())
        .await
        .unwrap();
    let saved = r.saved.expect("saved");
    assert!(r.container.is_some());
    assert!(!m.container_exists("dev-1").await);
    let left = m.backend.list_berths(Some(&m.project)).await.unwrap();
    assert!(left.is_empty(), "{left:?}");
    assert!(!wt.exists() && !berth_dir.exists());
    assert!(disk::mounted_at(&berth_dir).unwrap().is_none());
    assert_eq!(disk::loops_backed_by(&image), Vec::<PathBuf>::new());
    assert!(!image.exists(), "disk image (had one: {had_disk})");
    assert!(!s.join("identities").join(&m.project).join("dev-1").exists());
    let listed = m.engine.saved_work(Some(&m.project)).await.unwrap();
    assert_eq!(listed[0].refname, saved.refname);
    let types = m.event_types().await;
    for want in ["container.removed", "agent.removed"] {
        assert!(types.iter().any(|t| t == want), "no {want}: {types:?}");
    }

    // The project: refused with the saved work, gone with --discard.
    let refused = refusal(m.engine.remove_project(&m.project, false, &user()).await);
    assert!(refused.contains(&saved.refname), "{refused}");
    m.up("dev-2").await;
    assert!(m.container_exists("dev-2").await);
    let r = m
        .engine
        .remove_project(&m.project, true, &user())
        .await
        .unwrap();
    assert_eq!(r.agents.len(), 1);
    assert!(!m.container_exists("dev-2").await);
    let left = m.backend.list_berths(Some(&m.project)).await.unwrap();
    assert!(left.is_empty(), "{left:?}");
    for dir in [
        "forge",
        "berths",
        "agents",
        "projects",
        "identities",
        "disks",
    ] {
        let left: Vec<_> = std::fs::read_dir(s.join(dir))
            .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "{dir}: {left:?}");
    }
    assert_eq!(
        tree(&src),
        before,
        "the source repository is byte-identical"
    );
}

#[tokio::test]
async fn a_removal_that_cannot_save_keeps_the_worktree_and_is_taken_up_again() {
    if !crate::berth_disk::loop_devices() {
        return;
    }
    let f = Fixture::new().await;
    crate::berth_disk::set_sandbox(&state(&f), "disk", "\"32MiB\"");
    crate::berth_disk::set_sandbox(&state(&f), "disk_inodes", "2048");
    f.agent("dev-1", AgentImpl::Real).await;
    let wt = up_runner(&f, "dev-1").await;
    // A disk out of inodes holds no save commit.
    terminal(
        &f.engine,
        "dev-1",
        "echo mine > mine.txt; mkdir many && cd many && i=0; while true > f$i 2>/dev/null; do i=$((i+1)); [ $i -gt 10000 ] && break; done",
    )
    .await;
    let refused = refusal(f.engine.remove_agent("dev-1", None, false, &user()).await);
    assert!(
        refused.contains("berth agent rm dev-1 --discard"),
        "{refused}"
    );
    assert!(wt.join("mine.txt").is_file(), "its worktree is kept");
    assert_removed(&f).await;

    // Asked again with --discard: the cleanup goes on where it stopped.
    let r = f
        .engine
        .remove_agent("dev-1", None, true, &user())
        .await
        .unwrap();
    assert!(r.saved.is_none());
    let s = state(&f);
    assert!(!s.join("berths/demo/dev-1").exists());
    assert!(!s.join("disks/demo/dev-1.img").exists());
    let uid: Option<i64> = sqlx::query_scalar("SELECT uid FROM agents WHERE name = 'dev-1'")
        .fetch_one(f.engine.store().pool())
        .await
        .unwrap();
    assert_eq!(uid, None, "its uid is free again");
    let done = refusal(f.engine.remove_agent("dev-1", None, true, &user()).await);
    assert!(done.contains("was removed"), "{done}");
}

//! A PR's checks: the project's `[[checks]]` run against each new head of
//! an open PR, as berth's own effect (events `check.queued`,
//! `check.started`, `check.passed`, `check.failed` — never
//! `proposed_action.*`: no decision is made, so the approval metric does
//! not count them).
//!
//! A check runs in a throwaway checkout of the head under
//! `<state>/checks/<id>/` — a directory berth makes empty, never an agent's
//! berth — confined like a runner exec (the exec shim's mount tree,
//! Landlock, seccomp, no capabilities, a private `/tmp`, the project's
//! process and memory limits), with only loopback unless the check names
//! the network — and in an `allowlist` project then only what the
//! allow-list permits, through berth's proxy (`egress_check.rs`) — and a
//! deadline that kills its whole tree. The code it runs
//! is the agent's; the command is the person's (`berth.toml`, which agents
//! cannot write).
//!
//! One row per (PR, head, check): a head is checked once however often it
//! is looked at. A row is claimed (`queued → in_progress`) by one
//! conditional update, so two watchers never run the same check. A row
//! whose claiming process is gone (berth killed mid-check, on this host)
//! is queued again at the next look and runs then; a row left
//! `in_progress` past its deadline by a process berth cannot see (another
//! host) is ended as failed ("interrupted").
//!
//! The PR's feedback view ([`PrFeedback`]) also carries the review side
//! (`pr_review.rs`: unresolved threads, approvals against `[review]
//! required_approvals`, the review-requested flag) and `ready`, the
//! readiness auto-merge waits for.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::Engine;
use crate::config::CheckConfig;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::ids::{new_id, now_ms};
use crate::prs::{PrStatus, PullRequest};

/// The bytes of a check's output kept in its row (the tail).
const TAIL_BYTES: usize = 4096;
/// The output a check may produce before the rest is dropped, per stream.
const OUTPUT_CAP: usize = 256 * 1024;
/// Past its deadline by this much, an `in_progress` row was left by a
/// crash.
const STALE_AFTER: Duration = Duration::from_secs(120);

/// Where one check stands on one head.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    Queued,
    InProgress,
    Success,
    Failure,
}

impl CheckStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckStatus::Queued => "queued",
            CheckStatus::InProgress => "in_progress",
            CheckStatus::Success => "success",
            CheckStatus::Failure => "failure",
        }
    }

    fn parse(s: &str) -> Result<CheckStatus> {
        Ok(match s {
            "queued" => CheckStatus::Queued,
            "in_progress" => CheckStatus::InProgress,
            "success" => CheckStatus::Success,
            "failure" => CheckStatus::Failure,
            other => {
                return Err(EngineError::corrupt(
                    "reading a check",
                    format!("status `{other}`"),
                ));
            }
        })
    }
}

/// One check on one head of a PR.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRun {
    pub id: String,
    pub name: String,
    pub head: String,
    pub status: CheckStatus,
    pub exit_code: Option<i64>,
    /// The last bytes of its output (stdout, then stderr).
    pub output_tail: String,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub ended_at: Option<i64>,
}

/// What a PR's head looks like to a reviewer: its checks and whether it
/// merges into its base now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrFeedback {
    pub pr: i64,
    pub status: PrStatus,
    /// The PR branch's tip in the forge now (None: the branch is gone).
    pub head: Option<String>,
    pub base: String,
    /// The project's checks on `head`, in `berth.toml`'s order.
    pub checks: Vec<CheckRun>,
    /// The paths that conflict with the base's tip now; empty: it merges.
    pub conflicts: Vec<String>,
    /// Threads no one resolved yet (berth's own status threads aside).
    pub unresolved_threads: u32,
    /// People whose latest review approves the PR.
    pub approvals: u32,
    /// `[review] required_approvals`.
    pub approvals_required: u32,
    /// A review is asked of the project's reviewer (`[review] login`; of
    /// anyone when none is set) and not given yet.
    pub review_requested: bool,
    /// Open, its branch in the forge, every check green, no conflicts, no
    /// unresolved thread, the approvals the project requires: what
    /// auto-merge waits for.
    pub ready: bool,
}

impl PrFeedback {
    /// Every configured check passed on this head (true with no checks).
    pub fn checks_green(&self) -> bool {
        self.checks.iter().all(|c| c.status == CheckStatus::Success)
    }
}

const CHECK_COLUMNS: &str =
    "id, name, head, status, exit_code, output_tail, created_at, started_at, ended_at";

fn from_row(r: &sqlx::any::AnyRow) -> Result<CheckRun> {
    let op = "reading a check";
    let status: String = r.try_get("status").map_err(EngineError::store(op))?;
    Ok(CheckRun {
        id: r.try_get("id").map_err(EngineError::store(op))?,
        name: r.try_get("name").map_err(EngineError::store(op))?,
        head: r.try_get("head").map_err(EngineError::store(op))?,
        status: CheckStatus::parse(&status)?,
        exit_code: r.try_get("exit_code").map_err(EngineError::store(op))?,
        output_tail: r.try_get("output_tail").map_err(EngineError::store(op))?,
        created_at: r.try_get("created_at").map_err(EngineError::store(op))?,
        started_at: r.try_get("started_at").map_err(EngineError::store(op))?,
        ended_at: r.try_get("ended_at").map_err(EngineError::store(op))?,
    })
}

/// The last `TAIL_BYTES` of a check's output, on a character boundary.
fn tail_of(stdout: &[u8], stderr: &[u8]) -> String {
    let mut all = Vec::with_capacity(stdout.len() + stderr.len());
    all.extend_from_slice(stdout);
    all.extend_from_slice(stderr);
    let text = String::from_utf8_lossy(&all);
    let mut start = text.len().saturating_sub(TAIL_BYTES);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].to_string()
}

impl Engine {
    /// The PR's feedback now: its checks on the branch's current head in
    /// the forge (queued where none ran yet) and its conflicts with the
    /// base. Runs nothing.
    pub async fn pr_feedback(&self, pr: &str) -> Result<PrFeedback> {
        let pr = self.pr(pr).await?;
        self.feedback_of(&pr, false).await
    }

    /// Runs the PR's checks due on its current head (each once), then
    /// answers as [`pr_feedback`](Engine::pr_feedback). A closed or merged
    /// PR runs nothing.
    pub async fn run_pr_checks(&self, pr: &str) -> Result<PrFeedback> {
        let pr = self.pr(pr).await?;
        self.feedback_of(&pr, true).await
    }

    /// One pass of the watcher (`berth pr watch`, and `berth serve` in the
    /// background): every open PR's checks run on its current head, then
    /// every PR with automation on is evaluated (`pr_automation`; what it
    /// did is in the events).
    pub async fn watch_prs(&self) -> Result<Vec<PrFeedback>> {
        let mut out = Vec::new();
        for pr in self.prs(None).await? {
            if pr.status == PrStatus::Open {
                out.push(self.feedback_of(&pr, true).await?);
            }
        }
        self.automate_prs_with(&out).await?;
        Ok(out)
    }

    pub(crate) async fn feedback_of(&self, pr: &PullRequest, run: bool) -> Result<PrFeedback> {
        let loaded = self.load_project(&pr.project).await?;
        let head = self.git().forge_head(&loaded.project, &pr.branch).await?;
        let conflicts = match &head {
            Some(_) => {
                self.git()
                    .merge_conflicts(&pr.project, &pr.branch, &pr.base)
                    .await?
            }
            None => Vec::new(),
        };
        let mut checks = Vec::new();
        if let Some(head) = &head {
            if run && pr.status == PrStatus::Open {
                self.queue_checks(pr, head, &loaded.config.checks).await?;
                for check in &loaded.config.checks {
                    self.run_check(pr, head, check, &loaded.config).await?;
                }
            }
            let rows = sqlx::query(&format!(
                "SELECT {CHECK_COLUMNS} FROM pr_checks WHERE pr_id = $1 AND head = $2"
            ))
            .bind(&pr.id)
            .bind(head)
            .fetch_all(self.store.pool())
            .await
            .map_err(EngineError::store("reading a PR's checks"))?;
            let mut found: Vec<CheckRun> = rows.iter().map(from_row).collect::<Result<_>>()?;
            // In berth.toml's order; a configured check not queued yet
            // shows as queued (it is due).
            for check in &loaded.config.checks {
                match found.iter().position(|c| c.name == check.name) {
                    Some(i) => checks.push(found.swap_remove(i)),
                    None => checks.push(CheckRun {
                        id: String::new(),
                        name: check.name.clone(),
                        head: head.clone(),
                        status: CheckStatus::Queued,
                        exit_code: None,
                        output_tail: String::new(),
                        created_at: now_ms(),
                        started_at: None,
                        ended_at: None,
                    }),
                }
            }
        }
        let review = self.review_summary(pr, &loaded.config.review).await?;
        let ready = pr.status == PrStatus::Open
            && head.is_some()
            && checks.iter().all(|c| c.status == CheckStatus::Success)
            && conflicts.is_empty()
            && review.unresolved_threads == 0
            && review.approvals >= review.approvals_required;
        Ok(PrFeedback {
            pr: pr.number,
            status: pr.status,
            head,
            base: pr.base.clone(),
            checks,
            conflicts,
            unresolved_threads: review.unresolved_threads,
            approvals: review.approvals,
            approvals_required: review.approvals_required,
            review_requested: review.review_requested,
            ready,
        })
    }

    /// A row per configured check not yet on `head`, with `check.queued`.
    async fn queue_checks(
        &self,
        pr: &PullRequest,
        head: &str,
        checks: &[CheckConfig],
    ) -> Result<()> {
        if checks.is_empty() {
            return Ok(());
        }
        let op = "queueing a PR's checks";
        let system = Actor::system();
        let mut tx = self.store.write(op).await?;
        for check in checks {
            let queued = sqlx::query(
                "INSERT INTO pr_checks (id, pr_id, head, name, status, created_at) \
                 VALUES ($1, $2, $3, $4, 'queued', $5) ON CONFLICT (pr_id, head, name) DO NOTHING",
            )
            .bind(new_id())
            .bind(&pr.id)
            .bind(head)
            .bind(&check.name)
            .bind(now_ms())
            .execute(&mut *tx)
            .await
            .map_err(EngineError::store(op))?
            .rows_affected();
            if queued == 1 {
                emit(
                    &mut tx,
                    NewEvent::new(kind::CHECK_QUEUED, &system)
                        .project(&pr.project)
                        .agent(&pr.agent)
                        .task(pr.task.as_deref())
                        .payload(serde_json::json!({
                            "pr": pr.number, "head": head, "check": check.name,
                        })),
                )
                .await?;
            }
        }
        tx.commit().await.map_err(EngineError::store(op))
    }

    /// Claims `check`'s queued row on `head` and runs it; a row another
    /// process holds is left alone, unless a crash left it past its
    /// deadline (then it ends as failed).
    async fn run_check(
        &self,
        pr: &PullRequest,
        head: &str,
        check: &CheckConfig,
        config: &crate::config::ProjectConfig,
    ) -> Result<()> {
        let op = "running a check";
        let now = now_ms();
        let deadline = Duration::from_secs(check.timeout_secs) + STALE_AFTER;
        let stale_before = now - i64::try_from(deadline.as_millis()).unwrap_or(i64::MAX);
        let system = Actor::system();
        let me = crate::recovery::executor_id();
        let event = |k: &'static str, extra: serde_json::Value| {
            let mut payload = serde_json::json!({
                "pr": pr.number, "head": head, "check": check.name,
            });
            if let (Some(p), Some(extra)) = (payload.as_object_mut(), extra.as_object()) {
                p.extend(extra.clone());
            }
            NewEvent::new(k, &system)
                .project(&pr.project)
                .agent(&pr.agent)
                .task(pr.task.as_deref())
                .payload(payload)
        };
        let mut tx = self.store.write(op).await?;
        // Claimed by a process that is gone (killed mid-check): queued
        // again, to run now; the check is berth's own, in a throwaway
        // checkout, so running it again is safe.
        let claimer: Option<(String, Option<String>)> = sqlx::query_as(
            "SELECT id, claimed_by FROM pr_checks \
             WHERE pr_id = $1 AND head = $2 AND name = $3 AND status = 'in_progress'",
        )
        .bind(&pr.id)
        .bind(head)
        .bind(&check.name)
        .fetch_optional(&mut *tx)
        .await
        .map_err(EngineError::store(op))?;
        // Every row is written before the first event: the event log's lock
        // is taken last, as by every write (on PostgreSQL's narrow locks,
        // the other order could meet another writer's in a deadlock).
        let mut requeued = false;
        if let Some((row, Some(by))) = claimer
            && crate::recovery::executor_is_dead(&by)
        {
            requeued = sqlx::query(
                "UPDATE pr_checks SET status = 'queued', started_at = NULL, claimed_by = NULL \
                 WHERE id = $1 AND status = 'in_progress' AND claimed_by = $2",
            )
            .bind(&row)
            .bind(&by)
            .execute(&mut *tx)
            .await
            .map_err(EngineError::store(op))?
            .rows_affected()
                == 1;
        }
        let stale = sqlx::query(
            "UPDATE pr_checks SET status = 'failure', ended_at = $1, \
               output_tail = 'interrupted: berth stopped while this check ran' \
             WHERE pr_id = $2 AND head = $3 AND name = $4 AND status = 'in_progress' AND started_at < $5",
        )
        .bind(now)
        .bind(&pr.id)
        .bind(head)
        .bind(&check.name)
        .bind(stale_before)
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store(op))?
        .rows_affected();
        let claimed: Option<String> = sqlx::query_scalar(
            "UPDATE pr_checks SET status = 'in_progress', started_at = $1, claimed_by = $5 \
             WHERE pr_id = $2 AND head = $3 AND name = $4 AND status = 'queued' RETURNING id",
        )
        .bind(now)
        .bind(&pr.id)
        .bind(head)
        .bind(&check.name)
        .bind(&me)
        .fetch_optional(&mut *tx)
        .await
        .map_err(EngineError::store(op))?;
        if requeued {
            emit(
                &mut tx,
                event(
                    kind::CHECK_QUEUED,
                    serde_json::json!({ "interrupted": true }),
                ),
            )
            .await?;
        }
        if stale == 1 {
            emit(
                &mut tx,
                event(
                    kind::CHECK_FAILED,
                    serde_json::json!({ "interrupted": true }),
                ),
            )
            .await?;
        }
        if claimed.is_some() {
            emit(&mut tx, event(kind::CHECK_STARTED, serde_json::json!({}))).await?;
        }
        tx.commit().await.map_err(EngineError::store(op))?;
        let Some(id) = claimed else {
            return Ok(());
        };

        let started = std::time::Instant::now();
        let ran = self.exec_check(&id, pr, head, check, config).await;
        let (status, exit_code, tail) = match ran {
            Ok(out) => {
                let code = match out.status {
                    berth_sandbox::ExitStatus::Exited(c) => Some(i64::from(c)),
                    _ => None,
                };
                let mut tail = tail_of(&out.stdout.bytes, &out.stderr.bytes);
                if out.timed_out {
                    tail.push_str(&format!(
                        "\nberth: the check ran past its timeout ({} s) and was killed",
                        check.timeout_secs
                    ));
                }
                let passed = code == Some(0) && !out.timed_out;
                (
                    if passed {
                        CheckStatus::Success
                    } else {
                        CheckStatus::Failure
                    },
                    code,
                    tail,
                )
            }
            // berth could not run it: a failure that says why.
            Err(e) => (
                CheckStatus::Failure,
                None,
                format!("berth could not run the check: {e}"),
            ),
        };
        let mut tx = self.store.write(op).await?;
        sqlx::query(
            "UPDATE pr_checks SET status = $1, exit_code = $2, output_tail = $3, ended_at = $4 WHERE id = $5",
        )
        .bind(status.as_str())
        .bind(exit_code)
        .bind(&tail)
        .bind(now_ms())
        .bind(&id)
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store(op))?;
        let k = if status == CheckStatus::Success {
            kind::CHECK_PASSED
        } else {
            kind::CHECK_FAILED
        };
        emit(
            &mut tx,
            event(
                k,
                serde_json::json!({
                    "exit_code": exit_code,
                    "duration_ms": u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                }),
            ),
        )
        .await?;
        tx.commit().await.map_err(EngineError::store(op))
    }

    /// Checks out `head` into a fresh `<state>/checks/<id>/work` and runs
    /// the check there, confined; the directory is removed after.
    async fn exec_check(
        &self,
        id: &str,
        pr: &PullRequest,
        head: &str,
        check: &CheckConfig,
        config: &crate::config::ProjectConfig,
    ) -> Result<berth_sandbox::ExecOutcome> {
        use std::os::unix::fs::DirBuilderExt;
        let dir = self.state.root().join("checks").join(id);
        // A stale directory of this id (a crash) is berth's own: start over.
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(EngineError::io("removing", &dir))?;
        }
        let (work, home, tmp) = (dir.join("work"), dir.join("home"), dir.join("tmp"));
        for d in [&work, &home, &tmp] {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(d)
                .map_err(EngineError::io("creating", d))?;
        }
        let result = async {
            self.git()
                .check_out_commit(
                    &pr.project,
                    head,
                    work.clone(),
                    config.git.max_checkout_bytes,
                )
                .await?;
            let mut runner = berth_sandbox::RunnerConfig::new(&work, &home);
            let confinement = &mut runner.confinement;
            confinement.private_tmp = Some(tmp.clone());
            // `network`: in an allow-list project only through berth's
            // proxy on the check's own loopback (egress_check.rs), else
            // the host's network; without it, loopback alone.
            let proxied = check.network
                && config.sandbox.network.mode == crate::config::NetworkMode::Allowlist;
            confinement.network = if check.network && !proxied {
                berth_sandbox::runner::Network::Open
            } else {
                berth_sandbox::runner::Network::None
            };
            if proxied {
                confinement.egress =
                    Some(self.check_egress_hook(&pr.project, &pr.agent, &check.name));
            }
            confinement.limits = berth_sandbox::runner::CgroupLimits {
                processes: Some(config.sandbox.pids),
                memory: Some(config.sandbox.memory_mb << 20),
            };
            runner.rlimits.nproc = Some(config.sandbox.pids);
            if proxied {
                runner.env.extend(berth_sandbox::egress_port::proxy_env());
            }
            let runner = berth_sandbox::Runner::new(runner)?;
            let mut req = berth_sandbox::ExecRequest::shell(check.command.clone());
            req.cwd = berth_policy::frame::WORK.to_string();
            req.timeout = Duration::from_secs(check.timeout_secs);
            req.output_cap = OUTPUT_CAP;
            Ok::<_, EngineError>(berth_sandbox::Sandbox::exec(&runner, req, None).await?)
        }
        .await;
        if let Err(e) = std::fs::remove_dir_all(&dir) {
            tracing::warn!(path = %dir.display(), error = %e, "a check's checkout was not removed");
        }
        result
    }
}

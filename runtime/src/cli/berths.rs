//! `berth up|down|ls|exec|doctor`.

use berth_engine::checkup::CheckStatus;
use berth_engine::{
    ActionParams, Actor, AgentName, BerthMode, Engine, ProjectName, Proposal, UpOptions,
};
use berth_handoff::ExecRequest;
use berth_policy::Action;

use super::print_json;

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum BerthModeArg {
    /// Processes on this host inside the worktree (no container boundary).
    Runner,
    /// A Docker container per agent.
    Mounted,
}

#[derive(Debug, clap::Args)]
pub struct UpArgs {
    agent: String,
    /// The agent's project (default: the project of the agent, when it exists).
    #[arg(long)]
    project: Option<String>,
    /// Default: the project's sandbox.mode; with `auto`, mounted when the
    /// Docker engine answers, else the runner (said in a note).
    #[arg(long, value_enum)]
    mode: Option<BerthModeArg>,
    /// Give the berth a new uid of its own from `[host] uid_range` (mounted):
    /// its repository and worktree are re-owned and its container recreated,
    /// ending what runs in it. `berth doctor` says which berths need it.
    #[arg(long)]
    new_uid: bool,
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
pub struct DownArgs {
    agent: String,
    /// Keep the worktree (and its branch) for a later `berth up`.
    #[arg(long)]
    keep_worktree: bool,
    /// Recycle without saving uncommitted changes and unpushed commits
    /// into the forge (`refs/berth/saved/…`).
    #[arg(long, conflicts_with = "keep_worktree")]
    discard: bool,
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
pub struct ReconcileArgs {
    /// Also remove the berth containers whose state directory no longer
    /// exists (any state directory's); without it they are only listed.
    #[arg(long)]
    orphans: bool,
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
pub struct LsArgs {
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
pub struct ExecArgs {
    pub(super) agent: String,
    /// Deadline in seconds (default: the project's sandbox.timeout_secs).
    #[arg(long)]
    timeout: Option<u64>,
    /// Working directory in the berth's frame (default /work).
    #[arg(long)]
    cwd: Option<String>,
    /// Print one JSON object instead of streaming.
    #[arg(long)]
    pub(super) json: bool,
    /// Propose and run it in this process even when a `berth serve` runs
    /// on this state (by default the action is handed to it).
    #[arg(long)]
    pub(super) local: bool,
    /// The command: one argument is a shell line (`-- 'make && make test'`); several are a
    /// program and its arguments, each passed as one word (`-- sh -c 'echo hi'`).
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

impl ExecArgs {
    /// The shell line proposed.
    pub(super) fn command_line(&self) -> String {
        super::command_line(&self.command)
    }

    /// What is proposed, as berth's first reading would hand it to a server
    /// (`berth_handoff::argv` reads the same fields without clap).
    pub(super) fn request(&self) -> ExecRequest {
        ExecRequest {
            agent: self.agent.clone(),
            command: self.command_line(),
            cwd: self.cwd.clone(),
            timeout_secs: self.timeout,
            json: self.json,
        }
    }

    /// Its working directory and deadline.
    pub(super) fn params(&self) -> ActionParams {
        ActionParams {
            cwd: self.cwd.clone(),
            timeout_secs: self.timeout,
            ..ActionParams::default()
        }
    }
}

pub async fn up(engine: &Engine, a: UpArgs) -> anyhow::Result<u8> {
    let mode = a.mode.map(|m| match m {
        BerthModeArg::Runner => BerthMode::Runner,
        BerthModeArg::Mounted => BerthMode::Mounted,
    });
    let options = UpOptions { new_uid: a.new_uid };
    let agent = AgentName::new(a.agent.as_str())?;
    let project = match a.project {
        Some(p) => ProjectName::new(p)?,
        None => engine
            .agent(&a.agent)
            .await
            .map(|x| x.project)
            .map_err(|e| {
                anyhow::anyhow!(
                    "{e}: create it with `berth agent activate {} --project P`, then `berth up {}`",
                    a.agent,
                    a.agent
                )
            })
            .and_then(|p| Ok(ProjectName::new(p)?))?,
    };
    let info = engine
        .up_with(&agent, &project, mode, options, &Actor::current_user())
        .await?;
    // The project's berth.toml parsed (up read it); what should change in it.
    if let Ok((config, _)) = engine.load_project_files(&info.project) {
        for w in &config.warnings {
            eprintln!("berth: warning: {w}");
        }
    }
    if a.json {
        print_json(&info)?;
    } else {
        println!(
            "{} up in {} mode: /work = {} on {}",
            info.agent,
            info.mode.map(BerthMode::as_str).unwrap_or("?"),
            info.worktree
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            info.branch.as_deref().unwrap_or("?")
        );
        if let Some(container) = &info.container {
            println!("container: {container}");
        }
        if let Some(note) = &info.note {
            println!("note: {note}");
        }
        // devcontainer.json's post commands: proposed by the agent, decided
        // by the policy.
        for r in &info.devcontainer {
            let name = r
                .name
                .as_deref()
                .map(|n| format!(" {n}"))
                .unwrap_or_default();
            let short = r.action.get(..8).unwrap_or(&r.action);
            match r.status {
                "executed" => println!(
                    "{}{name}: `{}` ran (exit {})",
                    r.hook,
                    r.command,
                    r.exit_code.map_or("?".to_string(), |c| c.to_string())
                ),
                "pending" => println!(
                    "{}{name}: `{}` waits for a person: approve with `berth approve {short}` or deny with `berth deny {short}`",
                    r.hook, r.command
                ),
                _ => println!(
                    "{}{name}: `{}` refused: {}",
                    r.hook,
                    r.command,
                    r.reason.as_deref().unwrap_or("")
                ),
            }
        }
    }
    Ok(0)
}

pub async fn down(engine: &Engine, a: DownArgs) -> anyhow::Result<u8> {
    let info = engine
        .down_with(
            &AgentName::new(a.agent.as_str())?,
            a.keep_worktree,
            a.discard,
            &Actor::current_user(),
        )
        .await?;
    if a.json {
        print_json(&serde_json::json!({
            "agent": a.agent,
            "worktree": if a.keep_worktree { "kept" } else { "recycled" },
            "saved": info.saved,
            "note": info.note,
        }))?;
        return Ok(0);
    }
    if a.keep_worktree {
        println!("{} down; worktree kept", a.agent);
    } else {
        println!("{} down; worktree recycled", a.agent);
    }
    if let (true, Some(note)) = (a.keep_worktree, &info.note) {
        println!("  {note}");
    }
    if let Some(saved) = &info.saved {
        print_saved(saved, &info.project);
    }
    Ok(0)
}

/// What was saved into the forge before a worktree went, and how to get it
/// back or drop it (`down`, `agent rm`).
pub(super) fn print_saved(saved: &berth_engine::SavedRef, project: &str) {
    let what = if saved.committed_changes {
        "its uncommitted changes and unpushed commits"
    } else {
        "its unpushed commits"
    };
    println!(
        "  saved {what} as {} (commit {})\n  get them back: {}\n  drop them: berth saved drop {project} {}",
        saved.refname,
        saved.commit,
        saved.fetch_command(),
        saved.refname
    );
}

pub async fn reconcile(engine: &Engine, a: ReconcileArgs) -> anyhow::Result<u8> {
    let report = engine.reconcile_berths().await?;
    let disks = engine.reconcile_disks().await?;
    let orphans = engine.orphan_containers(a.orphans).await?;
    if a.json {
        // The containers, the berths' disks, then the orphans.
        let all: Vec<serde_json::Value> = report
            .iter()
            .map(serde_json::to_value)
            .chain(disks.iter().map(serde_json::to_value))
            .chain(orphans.iter().map(serde_json::to_value))
            .collect::<Result<_, _>>()?;
        print_json(&all)?;
        return Ok(0);
    }
    for o in &orphans {
        let verb = if o.removed { "removed" } else { "found" };
        println!(
            "{verb} orphan {} ({}/{}): its state directory is gone (worktree {})",
            o.container,
            o.project,
            o.agent,
            o.worktree.display()
        );
    }
    if !a.orphans && !orphans.is_empty() {
        println!(
            "  {} container(s) of deleted state directories; remove them: berth reconcile --orphans",
            orphans.len()
        );
    }
    for d in &disks {
        match d.outcome {
            "removed" => println!(
                "removed the disk of {}/{} (no worktree recorded): {} unmounted, its image deleted",
                d.project,
                d.agent,
                d.mount_point.display()
            ),
            _ => println!(
                "mounted the disk of {}/{} again at {}",
                d.project,
                d.agent,
                d.mount_point.display()
            ),
        }
    }
    if report.is_empty() {
        println!("no berth containers of this state's projects");
    }
    for r in report {
        if r.adopted {
            println!(
                "adopted {} ({}/{}); {} stale command(s) killed",
                r.container, r.project, r.agent, r.stale_execs_killed
            );
        } else {
            println!(
                "removed {} ({}/{}): {}",
                r.container,
                r.project,
                r.agent,
                r.reason.as_deref().unwrap_or("orphan")
            );
        }
    }
    Ok(0)
}

/// Every part berth depends on, each line with what to do. Exit 0 when all
/// is in place or only warnings, 1 when something berth needs is missing.
pub async fn doctor(engine: &Engine, a: DoctorArgs) -> anyhow::Result<u8> {
    let checkup = engine.checkup().await?;
    let failed = checkup.worst() == CheckStatus::Fail;
    if a.json {
        print_json(&checkup)?;
        return Ok(u8::from(failed));
    }
    for c in &checkup.checks {
        println!("{:<4} {:<8} {}", c.status.as_str(), c.part, c.detail);
        if let Some(fix) = &c.fix {
            println!("              fix: {fix}");
        }
    }
    Ok(u8::from(failed))
}

pub async fn ls(engine: &Engine, a: LsArgs) -> anyhow::Result<u8> {
    let berths = engine.berths().await?;
    if a.json {
        print_json(&berths)?;
        return Ok(0);
    }
    if berths.is_empty() {
        println!("no agents: `berth agent activate AGENT --project P`");
    }
    for b in berths {
        println!(
            "{:<12} {:<10} {:<5} {:<18} {:<8} {}",
            b.agent,
            b.project,
            b.implementation.as_str(),
            b.status.as_str(),
            b.mode.map(BerthMode::as_str).unwrap_or("down"),
            b.branch.as_deref().unwrap_or("-")
        );
    }
    Ok(0)
}

/// `berth exec` in this process: the proposal, its output printed as it
/// arrives, and the report.
pub async fn exec(engine: &Engine, a: ExecArgs) -> anyhow::Result<u8> {
    let proposal = Proposal::by_agent(
        &AgentName::new(a.agent.as_str())?,
        Action::Terminal {
            command: a.command_line(),
        },
    )
    .params(a.params());
    // `--json` prints the recorded output (capped) at the end: nothing streams.
    let (sink, printer) = match a.json {
        true => (None, None),
        false => {
            let (sink, printer) = super::live_output::printer();
            (Some(sink), Some(printer))
        }
    };
    let proposed = engine.propose(proposal, sink).await?;
    if let Some(p) = printer {
        p.finish().await;
    }
    let report = engine.exec_report(&proposed).await?;
    Ok(berth_handoff::report::print(&report, a.json)?)
}

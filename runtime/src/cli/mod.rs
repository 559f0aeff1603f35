//! Command-line parsing and dispatch. Each subcommand lives in its own module
//! and returns the process exit code. Engine commands are thin: they parse,
//! call one engine function, and print (human text, or `--json`).

mod actions;
mod agent;
mod berths;
mod decide;
mod devcontainer;
mod image;
mod live_output;
mod log;
mod net;
mod pr;
mod pr_auto;
mod pr_review;
mod project;
mod prompts;
mod saved;
mod serve;
mod store;
mod task;

pub(crate) use store::use_keeper;

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use berth_engine::{DockerProvider, Engine, StateDir};
use berth_handoff::Handoff;
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "berth",
    version,
    about = "An execution sandbox runtime for AI coding agents"
)]
pub struct Cli {
    /// The state directory (default: $BERTH_HOME, else ~/.local/share/berth).
    #[arg(long, global = true, value_name = "DIR")]
    pub state: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

/// Each subcommand's arguments are built only when that subcommand is the
/// one parsed (`defer`): building the whole tree was a tenth of a one-shot
/// `berth exec`'s instructions.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Decide one action, or a batch of policy cases, without running anything.
    Decide(decide::DecideArgs),
    /// Create the state directory and its store.
    Init {
        #[arg(long)]
        json: bool,
    },
    /// Projects: a forge imported from a repository, and its configuration.
    #[command(subcommand)]
    Project(project::ProjectCommand),
    /// Agents: activation, the auto-mode switch, the noop loop.
    #[command(subcommand)]
    Agent(agent::AgentCommand),
    /// An agent's autonomy per action type.
    #[command(subcommand)]
    Autonomy(agent::AutonomyCommand),
    /// Tasks.
    #[command(subcommand)]
    Task(task::TaskCommand),
    /// Bring an agent's berth up: its worktree and sandbox.
    Up(berths::UpArgs),
    /// Take an agent's berth down.
    Down(berths::DownArgs),
    /// Adopt the running containers of berths that are up, remove the rest.
    Reconcile(berths::ReconcileArgs),
    /// Work saved into the forge before a worktree was recycled.
    #[command(subcommand)]
    Saved(saved::SavedCommand),
    /// Check this host's berths: those whose uid is also a host account.
    Doctor(berths::DoctorArgs),
    /// Agent images, built locally.
    #[command(subcommand)]
    Image(image::ImageCommand),
    /// List agents and their berths.
    Ls(berths::LsArgs),
    /// Propose a terminal command in an agent's berth; run it if approved.
    Exec(berths::ExecArgs),
    /// List proposed actions.
    Actions(actions::ActionsArgs),
    /// Approve a pending action and execute it.
    Approve(actions::ApproveArgs),
    /// Deny a pending action.
    Deny(actions::DenyArgs),
    /// Stop an executing command (its whole process tree); the berth stays
    /// up and the action ends `cancelled` with its output so far.
    Cancel(actions::CancelArgs),
    /// Resolve a choice berth left to a person (a followup blocked by permissions).
    Resolve(actions::ResolveArgs),
    /// Re-execute an action that a crash interrupted (never done on its own).
    Retry(actions::RetryArgs),
    /// Send a message to an agent's session: delivered at once when the
    /// session is idle or waiting for input, queued (durably) while it is busy.
    Prompt(prompts::PromptArgs),
    /// Agents' sessions (one per task); `--open TASK` opens one.
    Sessions(prompts::SessionsArgs),
    /// The pending prompts of the agents' queues, with why each waits.
    Queue(prompts::QueueArgs),
    /// The event log.
    Events(log::EventsArgs),
    /// Counts over the event log (human approvals, auto approvals, …).
    Metrics(log::MetricsArgs),
    /// The outbox.
    #[command(subcommand)]
    Outbox(log::OutboxCommand),
    /// Connections out of berths through berth's egress proxy.
    #[command(subcommand)]
    Net(net::NetCommand),
    /// Pull requests in the local forge.
    #[command(subcommand)]
    Pr(pr::PrCommand),
    /// The store itself: `berth store migrate`.
    #[command(subcommand)]
    Store(store::StoreCommand),
    /// Serve an agent's berth as Model Context Protocol tools over stdio.
    Mcp(crate::mcp::McpArgs),
    /// Hooks of other tools that ask berth to decide (Claude Code's PreToolUse).
    #[command(subcommand)]
    Hook(crate::hook::HookCommand),
    /// Serve the HTTP/JSON API and the approvals page; drive agents in the background.
    Serve(serve::ServeArgs),
    /// Print the shell completion script (`source <(berth completions bash)`).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

impl Command {
    /// Whether the command does one thing and exits, so its store needs one
    /// connection (`berth_engine::Store::open_one_shot`). The loops and
    /// servers (`serve`, `mcp`, `agent run`, `pr watch`) run many things at
    /// once and keep the pool, and so do the other `agent` and `pr`
    /// commands, which share their code.
    pub fn runs_once(&self) -> bool {
        !matches!(
            self,
            Command::Serve(_)
                | Command::Mcp(_)
                | Command::Hook(_)
                | Command::Agent(_)
                | Command::Pr(_)
                | Command::Image(_)
        )
    }

    /// Whether the command's output is a listing or a report that may be
    /// piped into `head`: such a command dies quietly on a closed pipe.
    /// The long-running ones (serve, mcp, the hook, the agent loop) do not.
    pub fn prints_to_a_pipe(&self) -> bool {
        !matches!(
            self,
            Command::Serve(_) | Command::Mcp(_) | Command::Hook(_) | Command::Agent(_)
        )
    }
}

/// Runs `cli`; `handoff_tried`: the exec it holds was already offered to
/// the state's server, which did not take it (`early_handoff.rs`).
pub fn run(cli: Cli, handoff_tried: bool) -> anyhow::Result<u8> {
    let state = cli.state;
    let command = match cli.command {
        Command::Decide(args) => return decide::run(args),
        // Before every tool call: no runtime unless it needs the store.
        Command::Hook(cmd) => return crate::hook::run(state, cmd),
        Command::Mcp(args) => return crate::mcp::run(state, args),
        Command::Completions { shell } => {
            use clap::CommandFactory as _;
            let mut cli = Cli::command();
            clap_complete::generate(shell, &mut cli, "berth", &mut std::io::stdout());
            return Ok(0);
        }
        other => other,
    };
    // A running `berth serve` on this state takes a `berth exec` whole: no
    // runtime to start, no store to open here. (`main` offers the forms
    // `berth_handoff::argv` reads before clap; here the ones clap alone
    // reads.)
    if let Command::Exec(a) = &command
        && !a.local
        && !handoff_tried
        && let Some(dir) = StateDir::locate(state.as_deref())
        && let Handoff::Ended(code) = berth_handoff::exec_through_server(dir.root(), &a.request())?
    {
        // The server ran it: its code stands, whatever the warning finds.
        crate::early_handoff::warn_exposed(dir.root());
        return Ok(code);
    }
    // A one-shot command runs on this thread, and so does its short
    // blocking work (`berth_sandbox::blocking_work`): no threads to start,
    // and no wake-up crossing threads for each step, in a process that
    // lives a few milliseconds.
    let rt = match command.runs_once() {
        true => {
            berth_sandbox::blocking_work::run_inline();
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
        }
        false => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build(),
    }
    .context("starting the async runtime")?;
    if let Command::Image(cmd) = command {
        // Needs the Docker engine, not a state directory.
        return rt.block_on(image::run(state, cmd));
    }
    rt.block_on(dispatch(state, command))
}

/// Opens the engine with the Docker provider: mounted berths connect to the
/// Docker engine when they first need it. `BERTH_EGRESS_HOSTS`
/// (`name=address,…`) names what the egress proxy resolves without DNS.
pub(crate) async fn open_engine(dir: StateDir) -> berth_engine::Result<Engine> {
    open_engine_for(dir, false).await
}

/// [`open_engine`]; with `one_shot`, the store on one connection
/// ([`Command::runs_once`]).
async fn open_engine_for(dir: StateDir, one_shot: bool) -> berth_engine::Result<Engine> {
    let provider = Arc::new(DockerProvider::new());
    let engine = match one_shot {
        true => Engine::open_one_shot_with(dir, provider).await?,
        false => Engine::open_with(dir, provider).await?,
    };
    if let Ok(text) = std::env::var("BERTH_EGRESS_HOSTS") {
        engine.set_egress_hosts(berth_engine::egress_serving::parse_egress_hosts(&text)?);
    }
    Ok(engine)
}

/// Says on stderr which parts of the state other users can read, and the
/// `chmod` that fixes each.
fn warn_exposed(dir: &StateDir) -> anyhow::Result<()> {
    for exposed in berth_engine::private_state::exposure(dir)? {
        eprintln!("warning: {exposed}");
    }
    Ok(())
}

async fn dispatch(state: Option<PathBuf>, command: Command) -> anyhow::Result<u8> {
    let dir = StateDir::locate(state.as_deref())
        .context("no state directory: pass --state DIR or set BERTH_HOME")?;
    if let Command::Init { json } = command {
        let engine = Engine::init(dir.clone()).await?;
        warn_exposed(&dir)?;
        if json {
            print_json(&serde_json::json!({ "state": dir.root() }))?;
        } else {
            println!("berth state ready at {}", dir.root().display());
        }
        engine.close().await;
        return Ok(0);
    }
    if let Command::Store(c) = command {
        // Before opening the engine, which would migrate on its own.
        return store::run(&dir, c).await;
    }
    // The first project on a new machine creates the state: `berth init`
    // stays for those who want it explicit, but is not a step to remember.
    if matches!(
        command,
        Command::Project(project::ProjectCommand::Add { .. })
    ) && !dir.db().is_file()
    {
        Engine::init(dir.clone()).await?.close().await;
        eprintln!(
            "berth: created the state directory {}",
            dir.root().display()
        );
    }
    let engine = Arc::new(open_engine_for(dir.clone(), command.runs_once()).await?);
    if command.runs_once() {
        // The next one-shot command finds the store's WAL index whole, and
        // this one leaves its checkpoints to the keeper.
        store::use_keeper(&dir, engine.store());
    }
    // A `command` agent's turn run here serves its MCP tools from here.
    crate::mcp::http::HttpEndpoints::register(&engine);
    warn_exposed(&dir)?;
    if let Command::Serve(a) = command {
        // A request never waits for the WAL's checkpoint.
        engine.store().checkpoint_in_background();
        return serve::run(engine, a).await;
    }
    let code = match command {
        Command::Decide(_)
        | Command::Init { .. }
        | Command::Hook(_)
        | Command::Mcp(_)
        | Command::Serve(_)
        | Command::Completions { .. }
        | Command::Store(_)
        | Command::Image(_) => 0,
        Command::Reconcile(a) => berths::reconcile(&engine, a).await?,
        Command::Saved(c) => saved::run(&engine, c).await?,
        Command::Doctor(a) => berths::doctor(&engine, a).await?,
        Command::Project(c) => project::run(&engine, c).await?,
        Command::Agent(c) => agent::run(&engine, c).await?,
        Command::Autonomy(c) => agent::run_autonomy(&engine, c).await?,
        Command::Task(c) => task::run(&engine, c).await?,
        Command::Up(a) => berths::up(&engine, a).await?,
        Command::Down(a) => berths::down(&engine, a).await?,
        Command::Ls(a) => berths::ls(&engine, a).await?,
        Command::Exec(a) => berths::exec(&engine, a).await?,
        Command::Actions(a) => actions::list(&engine, a).await?,
        Command::Approve(a) => actions::approve(&engine, a).await?,
        Command::Deny(a) => actions::deny(&engine, a).await?,
        Command::Cancel(a) => actions::cancel(&engine, a).await?,
        Command::Retry(a) => actions::retry(&engine, a).await?,
        Command::Resolve(a) => actions::resolve(&engine, a).await?,
        Command::Prompt(a) => prompts::prompt(&engine, a).await?,
        Command::Sessions(a) => prompts::sessions(&engine, a).await?,
        Command::Queue(a) => prompts::queue(&engine, a).await?,
        Command::Events(a) => log::events(&engine, a).await?,
        Command::Metrics(a) => log::metrics(&engine, a).await?,
        Command::Outbox(c) => log::outbox(&engine, c).await?,
        Command::Net(c) => net::run(&engine, c).await?,
        Command::Pr(c) => pr::run(&engine, c).await?,
    };
    engine.close().await;
    Ok(code)
}

// The shell line `berth exec|decide -- …` proposes (the early hand-off
// builds it too, so it lives in berth-handoff).
use berth_handoff::client::command_line;

/// Prints a value as one line of JSON.
fn print_json<T: serde::Serialize>(v: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string(v)?);
    Ok(())
}

/// Exit codes of commands that propose: executed → the action's own result,
/// pending and refused → these (`berth exec`'s, wherever it runs).
pub use berth_handoff::report::{EXIT_PENDING, EXIT_REFUSED};

#[cfg(test)]
mod tests {
    use super::command_line;

    fn line(words: &[&str]) -> String {
        command_line(&words.iter().map(|w| (*w).to_string()).collect::<Vec<_>>())
    }

    /// The subcommands are built only when parsed (`defer`): clap's own
    /// consistency checks still see every one of them.
    #[test]
    fn every_deferred_subcommand_is_consistent() {
        use clap::{CommandFactory as _, Parser as _};
        super::Cli::command().debug_assert();
        let exec =
            super::Cli::try_parse_from(["berth", "--state", "/s", "exec", "dev-1", "--", "true"]);
        assert!(
            matches!(
                exec,
                Ok(super::Cli {
                    command: super::Command::Exec(_),
                    ..
                })
            ),
            "{exec:?}"
        );
        let bad = super::Cli::try_parse_from(["berth", "exec", "--no-such-flag", "dev-1"]);
        assert!(
            bad.is_err(),
            "an unknown flag of a deferred subcommand is refused"
        );
    }

    /// berth reads an exec's command line without clap first
    /// (`berth_handoff::argv`, for the early hand-off); whatever it takes
    /// must be what clap makes of the same words, or a handed-off exec
    /// would propose something a run here would not. Over the forms agents
    /// and scripts use, the odd ones, and each of them with every flag moved
    /// around the agent.
    #[test]
    fn the_first_reading_of_an_exec_is_claps() {
        use clap::Parser as _;
        let bases: &[&[&str]] = &[
            &["exec", "dev-1", "--", "true"],
            &["exec", "dev-1", "--", "make && make test"],
            &["exec", "dev-1", "--", "sh", "-c", "echo 'hi'"],
            &["exec", "dev-1", "--", "printf", ""],
            &["exec", "dev-1", "--", ""],
            &["exec", "dev-1", "--", "ls", "--json", "--", "-h"],
            &["exec", "dev-1", "--json", "--", "true"],
            &["exec", "--json", "dev-1", "--", "true"],
            &["exec", "dev-1", "--cwd", "/work/a b", "--", "pwd"],
            &["exec", "dev-1", "--cwd=/work", "--timeout=0", "--", "pwd"],
            &["exec", "--timeout", "30", "dev-1", "--json", "--", "pwd"],
            &[
                "exec",
                "--timeout",
                "18446744073709551615",
                "dev-1",
                "--",
                "pwd",
            ],
            &[
                "exec",
                "--timeout",
                "18446744073709551616",
                "dev-1",
                "--",
                "pwd",
            ],
            &["exec", "--timeout", "007", "dev-1", "--", "pwd"],
            &["exec", "--timeout", " 7", "dev-1", "--", "pwd"],
            &["exec", "dev-1", "--state", "/s", "--", "true"],
            &["exec", "dev-1", "--state=/s", "--", "true"],
            &["--state=/s", "exec", "dev-1", "--", "true"],
            &["--state", "/s", "exec", "dev-1", "--", "true"],
            &[
                "--state", "/s", "exec", "dev-1", "--state", "/t", "--", "true",
            ],
            &["exec", "dev-1", "--local", "--", "true"],
            &["exec", "dev-1", "--json", "--json", "--", "true"],
            &["exec", "dev-1", "--cwd", "--json", "--", "true"],
            &["exec", "dev-1", "--cwd", "-", "--", "true"],
            &["exec", "dev-1", "--cwd=", "--", "true"],
            &["exec", "dev-1", "dev-2", "--", "true"],
            &["exec", "dev-1", "true"],
            &["exec", "dev-1", "--"],
            &["exec", "-", "--", "true"],
            &["exec", "dev-1", "--timeout", "-1", "--", "true"],
            &["exec", "dev-1", "--time", "5", "--", "true"],
            &["exec", "dev-1", "--js", "--", "true"],
            &["exec", "dev-1", "-j", "--", "true"],
            &["exec", "dev-1", "--help"],
            &["exec", "dev-1", "--version", "--", "true"],
            &["exec", "dev-1", "---", "true"],
            &["exe", "dev-1", "--", "true"],
            &["exec", "dev-1", "--", "--", "true"],
        ];
        let mut taken = 0;
        for base in bases {
            // The base, and the agent moved to each other place before `--`.
            let end = base.iter().position(|w| *w == "--").unwrap_or(base.len());
            let exec_at = base.iter().position(|w| *w == "exec").unwrap_or(0);
            let mut forms = vec![base.to_vec()];
            if let Some(agent_at) = (exec_at + 1..end).find(|&i| base[i] == "dev-1") {
                for to in exec_at + 1..end {
                    let mut moved = base.to_vec();
                    let agent = moved.remove(agent_at);
                    moved.insert(to, agent);
                    forms.push(moved);
                }
            }
            for words in forms {
                let args: Vec<std::ffi::OsString> = std::iter::once("berth")
                    .chain(words.iter().copied())
                    .map(Into::into)
                    .collect();
                let Some(first) = berth_handoff::argv::exec_request(&args) else {
                    continue;
                };
                taken += 1;
                let cli = super::Cli::try_parse_from(&args).unwrap_or_else(|e| {
                    panic!("the first reading took {words:?}, clap refuses it: {e}")
                });
                let super::Command::Exec(exec) = cli.command else {
                    panic!("the first reading took {words:?}, clap reads another command");
                };
                assert!(!exec.local, "{words:?}");
                assert_eq!(first.state, cli.state, "{words:?}");
                assert_eq!(first.request, exec.request(), "{words:?}");
            }
        }
        // The first reading takes the ordinary forms: a reader that took
        // nothing would pass the comparison and save nothing.
        assert!(taken >= 40, "the first reading took {taken} forms");
    }

    #[test]
    fn one_word_is_a_line_and_several_are_an_argv() {
        assert_eq!(line(&["make && make test"]), "make && make test");
        assert_eq!(line(&["ls", "-la"]), "ls -la");
        assert_eq!(line(&["sh", "-c", "echo hi"]), "sh -c 'echo hi'");
        assert_eq!(
            line(&["echo", "$HOME", "a'b", ""]),
            "echo '$HOME' 'a'\\''b' ''"
        );
        assert_eq!(
            line(&["git", "commit", "-m", "x; rm -rf /"]),
            "git commit -m 'x; rm -rf /'"
        );
    }
}

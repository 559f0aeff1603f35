//! `berth-helper`: the process berth runs to act on what an agent controls.
//!
//! berth never touches an agent-writable path with its own privileges
//! (ENFORCEMENT.md). Its git work on an agent's repository — staging and
//! committing, packing a push, the refs and checkout of provisioning — runs
//! here instead: each subcommand reads one
//! JSON request on stdin, confines itself (`confine.rs`: the berth's uid, no
//! new privileges, a Landlock ruleset of the worktree, the agent repository
//! and the forge's objects) before it opens anything, does the libgit2 work
//! (`berth_worktrees::run_*_job`) and answers one JSON line on stdout.
//!
//! The entry stays a small dispatcher; inside a berth's container the same
//! binary is the exec agent (`exec-agent`, `exec-run`: the
//! `berth-exec-agent` crate).

mod confine;

use std::io::{Read, Write};
use std::process::ExitCode;

use anyhow::{Context, Result};
use berth_exec_agent::listen;
use berth_worktrees::{
    Answer, CommitJob, Confinement, PackJob, RefsJob, WireError, run_commit_job, run_pack_job,
    run_refs_job, skip_rehash_for_checkout, write_answer,
};
use serde::de::DeserializeOwned;

/// The largest request read from stdin.
const MAX_REQUEST_BYTES: u64 = 4 * 1024 * 1024;

const USAGE: &str = "usage: berth-helper <git-commit|git-pack|git-refs|probe> < request.json
  git-commit     stage an agent's worktree and commit it, as the agent, confined
  git-pack       pack what the forge lacks of an agent's branch, as the agent, confined
  git-refs       write, check or delete an agent's refs, check its branch out, as the agent, confined
  probe       confine as asked, then report which paths can be read and written
Each reads one JSON request on stdin and answers one JSON line on stdout.
Inside a berth's container:
  exec-agent DIR   serve the execs berth publishes as sockets in DIR
  exec-agent-idle DIR  the container's main process: start exec-agent, then idle
  exec-run …       one exec, its connection at fd 3 (started by exec-agent)
berth runs these, people do not need to.";

fn main() -> ExitCode {
    let sub = std::env::args().nth(1).unwrap_or_default();
    let result = match sub.as_str() {
        "git-commit" => git_commit(),
        "git-pack" => git_pack(),
        "git-refs" => git_refs(),
        "probe" => probe(),
        // Inside a berth's container: the exec agent and one exec of it.
        listen::LISTEN_SUBCOMMAND => exec_agent(),
        listen::IDLE_SUBCOMMAND => exec_agent_idle(),
        listen::RUN_SUBCOMMAND => berth_exec_agent::run::run_on_connection_fd()
            .context("running an exec of the exec agent"),
        "-h" | "--help" => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => {
            eprintln!("berth-helper: unknown subcommand {sub:?}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("berth-helper {sub}: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn exec_agent() -> Result<()> {
    let dir = std::env::args_os()
        .nth(2)
        .context("exec-agent needs the socket directory")?;
    listen::listen(std::path::Path::new(&dir)).context("serving execs")
}

fn exec_agent_idle() -> Result<()> {
    let dir = std::env::args_os()
        .nth(2)
        .context("exec-agent-idle needs the socket directory")?;
    listen::idle_with_agent(std::path::Path::new(&dir))
}

fn read_request<T: DeserializeOwned>() -> Result<T> {
    let mut body = Vec::new();
    std::io::stdin()
        .take(MAX_REQUEST_BYTES + 1)
        .read_to_end(&mut body)
        .context("reading the request")?;
    anyhow::ensure!(
        body.len() as u64 <= MAX_REQUEST_BYTES,
        "the request is over {MAX_REQUEST_BYTES} bytes"
    );
    serde_json::from_slice(&body).context("parsing the request")
}

/// Confines; a failure is answered as an error line too, so berth shows it.
fn confine_or_answer<T: serde::Serialize>(c: &Confinement, out: &mut dyn Write) -> Result<()> {
    if let Err(e) = confine::confine(c) {
        let message = format!("{e:#}");
        write_answer::<T>(out, &Answer::Error(WireError::Other { message }))?;
        return Err(e);
    }
    Ok(())
}

fn git_commit() -> Result<()> {
    answer_job(|j: &CommitJob| &j.confinement, run_commit_job)
}

/// Reads a request, confines as it says, runs it and writes its answer.
fn answer_job<J: DeserializeOwned, T: serde::Serialize>(
    confinement: impl Fn(&J) -> &Confinement,
    run: impl Fn(&J) -> Answer<T>,
) -> Result<()> {
    let job: J = read_request()?;
    let mut out = std::io::stdout().lock();
    confine_or_answer::<T>(confinement(&job), &mut out)?;
    let answer = run(&job);
    write_answer(&mut out, &answer).context("writing the answer")
}

fn git_pack() -> Result<()> {
    let job: PackJob = read_request()?;
    let mut out = std::io::stdout().lock();
    confine_or_answer::<berth_worktrees::PackReady>(&job.confinement, &mut out)?;
    run_pack_job(&job, &mut out).context("streaming the pack")
}

fn git_refs() -> Result<()> {
    let job: RefsJob = read_request()?;
    let mut out = std::io::stdout().lock();
    confine_or_answer::<berth_worktrees::RefsDone>(&job.confinement, &mut out)?;
    // Only here, confined, in a process that reads nothing but the forge's
    // objects and this agent's repository: why that is safe is argued at
    // `skip_rehash_for_checkout`.
    skip_rehash_for_checkout(&job);
    let answer = run_refs_job(&job);
    write_answer(&mut out, &answer).context("writing the answer")
}

/// A request of `probe`: confine, then try each path.
#[derive(serde::Deserialize)]
struct Probe {
    confinement: Confinement,
    /// Files to read (the first bytes).
    read: Vec<std::path::PathBuf>,
    /// Files to create or append to.
    write: Vec<std::path::PathBuf>,
}

/// What `probe` could do: per path, `"ok"` or the OS error.
#[derive(serde::Serialize)]
struct ProbeResult {
    uid: u32,
    gid: u32,
    read: Vec<String>,
    write: Vec<String>,
}

fn probe() -> Result<()> {
    let probe: Probe = read_request()?;
    let mut out = std::io::stdout().lock();
    confine_or_answer::<ProbeResult>(&probe.confinement, &mut out)?;
    let outcome = |r: std::io::Result<()>| match r {
        Ok(()) => "ok".to_owned(),
        Err(e) => e.to_string(),
    };
    let read = probe
        .read
        .iter()
        .map(|p| {
            outcome(std::fs::File::open(p).and_then(|f| {
                let mut buf = [0u8; 16];
                f.take(16).read(&mut buf).map(|_| ())
            }))
        })
        .collect();
    let write = probe
        .write
        .iter()
        .map(|p| {
            outcome(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .and_then(|mut f| f.write_all(b"probe\n")),
            )
        })
        .collect();
    // SAFETY: getuid and getgid cannot fail and touch no memory.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    write_answer(
        &mut out,
        &Answer::Ok(ProbeResult {
            uid,
            gid,
            read,
            write,
        }),
    )?;
    Ok(())
}

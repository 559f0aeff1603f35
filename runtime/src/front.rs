//! `berth`, the command users type: a small front for the whole program.
//!
//! A `berth exec` handed to a running `berth serve` needs one request and
//! its answer printed; starting the whole program for it (`berth-full`,
//! tens of megabytes of code whose tens of thousands of relocations the
//! loader writes at every start, an allocator and an async runtime set up)
//! cost most of the exec's time. So this binary links only
//! `berth-handoff`: when its command line is an exec it can read
//! (`berth_handoff::argv`) and a server on the state takes it
//! (`berth_handoff::client`), it runs the exec through that server and
//! exits with its code; for everything else — any other command, `--help`,
//! an exec no server takes — it replaces itself with `berth-full`, found
//! beside its own executable, with the same arguments (the same `argv[0]`,
//! so `ps` and error messages read as before). Nothing is proposed before
//! that point, so nothing runs twice.

use std::ffi::OsString;
use std::os::unix::process::CommandExt as _;
use std::process::ExitCode;

use berth_handoff::Handoff;

/// The whole program's file name, beside this one.
const FULL: &str = "berth-full";

fn main() -> ExitCode {
    // First, as in the full program: what berth runs must not read its
    // environment or memory through /proc (ENFORCEMENT.md, "berth itself").
    if let Err(err) = berth_confine::make_non_dumpable() {
        eprintln!("berth: {err}");
        return ExitCode::from(2);
    }
    let args: Vec<OsString> = std::env::args_os().collect();
    if let Some(exec) = berth_handoff::argv::exec_request(&args)
        && let Some(root) = berth_handoff::state::locate(exec.state.as_deref())
    {
        // `berth exec | head` ends quietly, as in the full program.
        if let Err(err) = berth_confine::default_sigpipe() {
            eprintln!("berth: {err}");
            return ExitCode::from(2);
        }
        match berth_handoff::exec_through_server(&root, &exec.request) {
            Ok(Handoff::Ended(code)) => {
                warn_exposed(&root);
                return ExitCode::from(code);
            }
            Ok(Handoff::NotTaken) => {}
            Err(err) => {
                eprintln!("berth: {err}");
                return ExitCode::from(2);
            }
        }
    }
    run_full(&args)
}

/// Says on stderr which parts of the state other users can read, and the
/// `chmod` that fixes each (what the full program says after every command).
fn warn_exposed(root: &std::path::Path) {
    match berth_handoff::state::exposure(root) {
        Ok(found) => {
            for exposed in found {
                eprintln!("warning: {exposed}");
            }
        }
        Err(err) => eprintln!("warning: {err}"),
    }
}

/// Replaces this process with `berth-full` and `args`; returns only when
/// that fails, saying what to do.
fn run_full(args: &[OsString]) -> ExitCode {
    let full = match std::env::current_exe() {
        Ok(me) => me.with_file_name(FULL),
        Err(err) => {
            eprintln!("berth: cannot find its own executable to run {FULL} beside it: {err}");
            return ExitCode::from(2);
        }
    };
    let mut command = std::process::Command::new(&full);
    if let Some((name, rest)) = args.split_first() {
        command.arg0(name).args(rest);
    }
    let err = command.exec();
    eprintln!(
        "berth: cannot run {}: {err}: berth needs {FULL} beside it (install both: \
         `cargo build --release --bin berth --bin {FULL}` builds them into one directory)",
        full.display()
    );
    ExitCode::from(2)
}

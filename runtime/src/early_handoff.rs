//! A `berth exec` that a running `berth serve` on the state takes, handed
//! to it before anything else starts.
//!
//! The hand-off needs one request and its answer printed, so it runs first
//! in `main`: before clap builds the command tree, before the async runtime
//! starts and before the store opens. Its command line is read by
//! `berth_handoff::argv`, a strict part of clap's grammar for `exec` (a
//! test holds the two equal); anything it does not take goes on to clap,
//! and `cli::run` tries the hand-off again for an exec clap reads that this
//! reader left alone.
//!
//! berth was two binaries for this until stop 51: a small front that handed
//! an exec off and replaced itself with the whole program for everything
//! else. The front saved a handed-off exec about 0.6 ms (2.75 against
//! 3.34 ms here) and cost every other command a second program start: a
//! one-shot exec with no server (6.26 against 5.42 ms), and the Claude Code
//! hook before every tool call. One binary is the better trade (the
//! figures: README, `berth serve`).

use std::ffi::OsString;
use std::path::Path;
use std::process::ExitCode;

use berth_handoff::Handoff;

/// What the early hand-off did.
pub enum Early {
    /// The server ran the exec; berth exits with this.
    Ended(ExitCode),
    /// An exec this reader takes, on a state with no server that takes it:
    /// berth runs it itself, without asking again.
    NotTaken,
    /// Not an exec this reader takes (or no state to look in): the rest of
    /// berth decides.
    NotRead,
}

/// Hands `args` (the program's name first) to the state's server when they
/// are an exec it takes.
pub fn hand_off(args: &[OsString]) -> Early {
    let Some(exec) = berth_handoff::argv::exec_request(args) else {
        return Early::NotRead;
    };
    let Some(root) = berth_handoff::state::locate(exec.state.as_deref()) else {
        return Early::NotRead;
    };
    // `berth exec | head` ends quietly, as it does when run here.
    if let Err(err) = berth_confine::default_sigpipe() {
        eprintln!("berth: {err}");
        return Early::Ended(ExitCode::from(2));
    }
    match berth_handoff::exec_through_server(&root, &exec.request) {
        Ok(Handoff::Ended(code)) => {
            warn_exposed(&root);
            Early::Ended(ExitCode::from(code))
        }
        Ok(Handoff::NotTaken) => Early::NotTaken,
        Err(err) => {
            eprintln!("berth: {err}");
            Early::Ended(ExitCode::from(2))
        }
    }
}

/// Says on stderr which parts of the state other users can read, and the
/// `chmod` that fixes each (what berth says after every command it runs),
/// after an exec a server ran, early or late (`cli::run`): a mode it
/// cannot read is a warning too, never an error that would replace the
/// command's exit code.
pub(crate) fn warn_exposed(root: &Path) {
    match berth_handoff::state::exposure(root) {
        Ok(found) => {
            for exposed in found {
                eprintln!("warning: {exposed}");
            }
        }
        Err(err) => eprintln!("warning: {err}"),
    }
}

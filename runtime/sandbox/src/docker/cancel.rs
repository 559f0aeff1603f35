//! Cancelling one command in a berth's container by the action it runs,
//! from any berth process.
//!
//! An exec that runs an action carries `a<action>.` at the end of its
//! wrapper's token ([`super::exec`]). Docker has no "kill this exec", so a
//! second exec (the commands' own uid, inside the container) looks for the
//! wrapper whose token (the word after `berth-exec`, read exactly, not
//! anywhere on the command line) ends with it, and kills its child's process
//! group: the wrapper then reports the command's end as for any other exec,
//! with the output so far. A wrapper with no child yet is killed itself.

use std::time::Duration;

use bollard::exec::CreateExecOptions;

use super::exec::{Target, run_plain};
use crate::SandboxError;

/// `$1`: the action id. Prints `killed N`, the wrappers it found.
const KILL_ACTION_SCRIPT: &str = r#"n=0; for d in /proc/[0-9]*; do p=${d#/proc/}; [ "$p" = "$$" ] && continue; l=" $(tr '\0' ' ' < "$d/cmdline" 2>/dev/null) "; case "$l" in *" berth-exec bx."*) ;; *) continue;; esac; t=${l#* berth-exec }; t=${t%% *}; case "$t" in *".a$1.") n=$((n+1)); c=; read -r c < "$d/task/$p/children" 2>/dev/null; for g in $c; do kill -KILL -"$g" "$g" 2>/dev/null; done; [ -n "$c" ] || kill -KILL "$p" 2>/dev/null;; esac; done; echo "killed $n"; exit 0"#;

/// Bound on the kill exec.
const KILL_BUDGET: Duration = Duration::from_secs(10);

/// Kills the command of the exec that runs `action`; whether one was found.
pub(crate) async fn kill_by_action(
    target: &Target<'_>,
    action: &str,
) -> Result<bool, SandboxError> {
    if !crate::valid_action_id(action) {
        return Err(SandboxError::InvalidRequest(format!(
            "action id {action:?} names no exec"
        )));
    }
    let options = CreateExecOptions {
        cmd: Some(vec![
            target.shell.to_string(),
            "-c".to_string(),
            KILL_ACTION_SCRIPT.to_string(),
            "berth-cancel".to_string(),
            action.to_string(),
        ]),
        user: Some(target.user.to_string()),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        tty: Some(false),
        ..Default::default()
    };
    let (code, output) = run_plain(target, options, KILL_BUDGET).await?;
    let output = String::from_utf8_lossy(&output);
    let found = output
        .lines()
        .find_map(|l| l.trim().strip_prefix("killed "))
        .and_then(|n| n.trim().parse::<u32>().ok());
    match (code, found) {
        (Some(0), Some(n)) => Ok(n > 0),
        _ => Err(SandboxError::Backend {
            op: "cancel a command in",
            message: format!(
                "the kill exec in {} did not report (exit {code:?}): {}",
                target.container,
                output.trim()
            ),
        }),
    }
}

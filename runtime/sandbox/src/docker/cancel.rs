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

/// `$1`: the action id; `$2`, where the processes are (`/proc`; a test
/// gives a directory of its own). Prints `killed N`, the wrappers it found.
/// A process may end between the listing and the reads of its files: each
/// read's `2>/dev/null` comes before its `<`, so the shell's own "can't
/// open" goes there too (a shell performs redirections in order) and
/// never lands beside the count.
const KILL_ACTION_SCRIPT: &str = r#"n=0; for d in "${2:-/proc}"/[0-9]*; do p=${d##*/}; [ "$p" = "$$" ] && continue; l=" $(tr '\0' ' ' 2>/dev/null < "$d/cmdline") "; case "$l" in *" berth-exec bx."*) ;; *) continue;; esac; t=${l#* berth-exec }; t=${t%% *}; case "$t" in *".a$1.") n=$((n+1)); c=; read -r c 2>/dev/null < "$d/task/$p/children"; for g in $c; do kill -KILL -"$g" "$g" 2>/dev/null; done; [ -n "$c" ] || kill -KILL "$p" 2>/dev/null;; esac; done; echo "killed $n"; exit 0"#;

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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::KILL_ACTION_SCRIPT;

    /// The script over a directory laid out as `/proc`: a process that
    /// ended after the listing (its directory, no files), one running
    /// another action's wrapper, and the action's wrapper whose child is
    /// a process group that no longer exists. Run by the shells a
    /// container may have: only the count is printed.
    #[test]
    fn a_process_gone_mid_scan_leaves_only_the_count() {
        let procs = tempfile::tempdir().unwrap();
        let wrapper = |pid: u32, token: &str, child: Option<u32>| {
            let d = procs.path().join(pid.to_string());
            std::fs::create_dir_all(d.join(format!("task/{pid}"))).unwrap();
            let line = format!("/opt/berth/bin/berth-helper\0berth-exec\0{token}\0sh\0-c\0x\0");
            std::fs::write(d.join("cmdline"), line).unwrap();
            if let Some(c) = child {
                std::fs::write(d.join(format!("task/{pid}/children")), format!("{c} ")).unwrap();
            }
        };
        std::fs::create_dir(procs.path().join("4000000")).unwrap();
        wrapper(4000001, "bx.0123.aother.", Some(4000003));
        // No such process group or process: the kills fail quietly.
        wrapper(4000002, "bx.0123.ac0ffee.", Some(4000004));
        for shell in ["sh", "busybox"] {
            let mut cmd = std::process::Command::new(shell);
            if shell == "busybox" {
                cmd.arg("sh");
            }
            let Ok(out) = cmd
                .args(["-c", KILL_ACTION_SCRIPT, "berth-cancel", "c0ffee"])
                .arg(procs.path())
                .output()
            else {
                continue;
            };
            assert_eq!(
                (
                    String::from_utf8_lossy(&out.stdout).as_ref(),
                    String::from_utf8_lossy(&out.stderr).as_ref()
                ),
                ("killed 1\n", ""),
                "{shell}"
            );
        }
    }
}

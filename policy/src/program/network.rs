//! Network tools whose options name a program to run for the transport:
//! `ssh`/`scp`/`sftp` (`-o ProxyCommand=…`, `-S`) and `rsync` (`-e`).

use super::{Facts, opt_runs};
use crate::arg::Arg;

/// ssh config keys (given with `-o`, compared lowercased) that run a command.
const SSH_RUNS_CONFIG: &[&str] = &[
    "proxycommand",       // connects through any command
    "localcommand",       // runs a command locally after connecting
    "permitlocalcommand", // turns LocalCommand on
    "knownhostscommand",  // runs a command to list host keys
    "match",              // `Match exec CMD` runs a command to decide
];
// `scp -S` and `sftp -S` name the program used in place of ssh.

pub(super) fn ssh(name: &str, args: &[Arg]) -> Facts {
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let t = a.text.to_ascii_lowercase();
        let opt = if t == "-o" {
            args.get(i + 1).map(|v| v.text.to_ascii_lowercase())
        } else {
            t.strip_prefix("-o").map(str::to_string)
        };
        if let Some(o) = opt {
            let key = o.split(['=', ' ']).next().unwrap_or("");
            if SSH_RUNS_CONFIG.contains(&key) {
                return Facts::opaque(format!("`{name} -o {key}` runs a command"));
            }
        }
        if name != "ssh" && (a.is("-S") || a.text.starts_with("-S") && a.text.len() > 2) {
            return Facts::opaque(format!("`{name} -S` runs a program"));
        }
        i += 1;
    }
    Facts::default()
}

/// `rsync` long options that run a program.
const RSYNC_RUNS_LONG: &[&str] = &[
    "--rsh",        // the remote shell: any program
    "--rsync-path", // the program run on the other side
];

/// `rsync` short options that run a program.
const RSYNC_RUNS_SHORT: &[u8] = b"e"; // -e: short for --rsh

pub(super) fn rsync(args: &[Arg]) -> Facts {
    opt_runs(
        args,
        RSYNC_RUNS_LONG,
        RSYNC_RUNS_SHORT,
        "`rsync -e/--rsh/--rsync-path` runs a program",
    )
}

//! Network tools whose options name a program to run for the transport:
//! `ssh`/`scp`/`sftp` (`-F config`, `-o ProxyCommand=…`, `-S`), `rsync`
//! (`-e`), `wget` (`--use-askpass`, `-e`) and `curl` (`--engine`).

use super::{Facts, opt_runs};
use crate::arg::Arg;

/// ssh config keys (given with `-o`, compared lowercased) that run a command.
const SSH_RUNS_CONFIG: &[&str] = &[
    "proxycommand",        // connects through any command
    "localcommand",        // runs a command locally after connecting
    "permitlocalcommand",  // turns LocalCommand on
    "knownhostscommand",   // runs a command to list host keys
    "match",               // `Match exec CMD` runs a command to decide
    "include",             // reads another config file
    "securitykeyprovider", // loads a library
    "pkcs11provider",      // loads a library
    "xauthlocation",       // the xauth program to run
];
// `scp -S` and `sftp -S` name the program used in place of ssh.

/// ssh's short options that take a value (getopt: attached or the next
/// word, anywhere in a cluster such as `-vF cfg`).
const SSH_VALUE_SHORT: &[u8] = b"BbcDEeFIiJLlmOoPpQRSWw";

pub(super) fn ssh(name: &str, args: &[Arg]) -> Facts {
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let t = a.text.as_str();
        if a.dynamic {
            if t.is_empty() || t.starts_with('-') {
                return Facts::opaque(format!("`{name}` with an option computed at run time"));
            }
            i += 1;
            continue;
        }
        if t == "--" {
            break;
        }
        if t.len() > 1 && t.starts_with('-') {
            let bytes = t.as_bytes();
            let mut step = 1;
            for (k, c) in bytes.iter().enumerate().skip(1) {
                if !SSH_VALUE_SHORT.contains(c) {
                    continue;
                }
                let value = if k + 1 < bytes.len() {
                    Some(Arg::lit(&t[k + 1..]))
                } else {
                    step = 2;
                    args.get(i + 1).cloned()
                };
                match c {
                    b'F' => {
                        return Facts::opaque(format!(
                            "`{name} -F` reads a config file (ProxyCommand, LocalCommand, Match exec)"
                        ));
                    }
                    b'o' => {
                        let Some(v) = value else { break };
                        if v.dynamic {
                            return Facts::opaque(format!(
                                "`{name} -o` with an option computed at run time"
                            ));
                        }
                        let o = v.text.to_ascii_lowercase();
                        let key = o.trim_start().split(['=', ' ', '\t']).next().unwrap_or("");
                        if SSH_RUNS_CONFIG.contains(&key) {
                            return Facts::opaque(format!("`{name} -o {key}` runs a command"));
                        }
                    }
                    b'S' if name != "ssh" => {
                        return Facts::opaque(format!("`{name} -S` runs a program"));
                    }
                    _ => {}
                }
                break;
            }
            i += step;
            continue;
        }
        // The destination: what follows is the remote command (ssh) or
        // operands, which getopt (no permutation) does not read.
        if name == "ssh" {
            break;
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

/// `wget` runs a program for `--use-askpass=CMD`, and for the wgetrc
/// command `use_askpass = CMD` given with `-e`/`--execute`.
pub(super) fn wget(args: &[Arg]) -> Facts {
    for (i, a) in args.iter().enumerate() {
        let t = a.text.as_str();
        if a.dynamic {
            if t.is_empty() || t.starts_with('-') {
                return Facts::opaque("`wget` with an option computed at run time");
            }
            continue;
        }
        if t.starts_with("--use-a") {
            return Facts::opaque("`wget --use-askpass` runs a program");
        }
        let attached = t
            .strip_prefix("--execute=")
            .or_else(|| t.strip_prefix("-e").filter(|v| !v.is_empty()));
        let command = if t == "-e" || t == "--execute" {
            args.get(i + 1).cloned()
        } else {
            attached.map(Arg::lit)
        };
        if let Some(c) = command {
            let key: String = c
                .text
                .to_ascii_lowercase()
                .chars()
                .filter(|ch| ch.is_ascii_alphanumeric())
                .collect();
            if c.dynamic || key.starts_with("useaskpass") {
                return Facts::opaque("`wget -e use_askpass=…` runs a program");
            }
        }
    }
    Facts::default()
}

/// `curl` options that load code.
const CURL_RUNS_LONG: &[&str] = &[
    "--engine", // loads an OpenSSL engine (a shared library)
];

pub(super) fn curl(args: &[Arg]) -> Facts {
    opt_runs(
        args,
        CURL_RUNS_LONG,
        &[],
        "`curl --engine` loads a crypto engine library",
    )
}

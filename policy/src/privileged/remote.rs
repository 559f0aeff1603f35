//! Copies to another machine: `scp x host:dir`, `rsync -a dist/
//! host:/var/www`, `rclone sync . remote:bucket`. Putting files on another
//! host deploys or publishes them; the other direction is a download, which
//! the berth's network mode governs like any client's.

use super::Hit;
use crate::arg::Arg;

/// scp's options that take a value.
const SCP_VALUES: &[&str] = &["-i", "-P", "-o", "-F", "-c", "-l", "-S", "-J", "-D", "-X"];

/// rsync's options that take a value (as a separate word).
const RSYNC_VALUES: &[&str] = &[
    "-e",
    "--rsh",
    "--rsync-path",
    "--exclude",
    "--include",
    "-f",
    "--filter",
    "--files-from",
    "--exclude-from",
    "--include-from",
    "--password-file",
    "--port",
    "-T",
    "--temp-dir",
    "--backup-dir",
    "--log-file",
    "--chmod",
    "--chown",
    "-B",
    "--block-size",
    "--bwlimit",
    "--timeout",
    "--contimeout",
    "--max-size",
    "--min-size",
    "--compare-dest",
    "--copy-dest",
    "--link-dest",
    "--partial-dir",
    "--suffix",
    "--out-format",
    "-M",
    "--remote-option",
];

/// rclone's verbs that write their (last) operand's remote.
const RCLONE_WRITES: &[&str] = &[
    "copy",
    "sync",
    "move",
    "copyto",
    "moveto",
    "delete",
    "deletefile",
    "purge",
    "mkdir",
    "rmdir",
    "rmdirs",
    "rcat",
    "touch",
    "copyurl",
    "bisync",
    "dedupe",
    "settier",
    "cleanup",
];

/// rclone's verbs that publish whatever they name.
const RCLONE_PUBLISHES: &[&str] = &["link", "serve"];

/// The operands of an invocation: words that are neither options nor an
/// option's value.
fn operands<'a>(inv: &'a [Arg], values: &[&str]) -> Vec<&'a Arg> {
    let mut out = Vec::new();
    let mut i = 1;
    let mut options = true;
    while i < inv.len() {
        let a = &inv[i];
        if options && !a.dynamic {
            let t = a.text.as_str();
            if t == "--" {
                options = false;
                i += 1;
                continue;
            }
            if t.starts_with('-') && t.len() > 1 {
                i += if values.contains(&t) { 2 } else { 1 };
                continue;
            }
        }
        out.push(a);
        i += 1;
    }
    out
}

/// `host:path`, `user@host:path`, `host::module`, `rsync://…`, `scp://…`:
/// a path on another machine. A colon after a slash is a local file's name
/// (`./a:b`).
fn is_remote(word: &str) -> bool {
    if word.starts_with("rsync://") || word.starts_with("scp://") || word.starts_with("sftp://") {
        return true;
    }
    match (word.find(':'), word.find('/')) {
        (Some(c), Some(s)) => c > 0 && c < s,
        (Some(c), None) => c > 0,
        _ => false,
    }
}

/// The limit's verdict on `scp`, `rsync` and `rclone`.
pub(super) fn remote_copy(tool: &str, inv: &[Arg]) -> Option<Hit> {
    match tool {
        "scp" | "rsync" => {
            let values = if tool == "scp" {
                SCP_VALUES
            } else {
                RSYNC_VALUES
            };
            let ops = operands(inv, values);
            // One operand lists it (rsync); the destination is the last.
            let dest = ops.last().filter(|_| ops.len() > 1)?;
            if dest.dynamic {
                return Some(Hit::Maybe(format!(
                    "a dynamic word where `{tool}`'s destination would be"
                )));
            }
            is_remote(&dest.text).then(|| {
                Hit::Yes(format!(
                    "`{tool} … {}` copies files to another machine",
                    dest.text
                ))
            })
        }
        "rclone" => {
            let ops = operands(inv, &[]);
            let (verb, rest) = ops.split_first()?;
            if verb.dynamic {
                return Some(Hit::Maybe(
                    "a dynamic word where `rclone`'s verb would be".into(),
                ));
            }
            if RCLONE_PUBLISHES.iter().any(|v| verb.is(v)) {
                return Some(Hit::Yes(format!("`rclone {}` publishes files", verb.text)));
            }
            if !RCLONE_WRITES.iter().any(|v| verb.is(v)) {
                return None;
            }
            let dest = rest.last()?;
            if dest.dynamic {
                return Some(Hit::Maybe(
                    "a dynamic word where `rclone`'s destination would be".into(),
                ));
            }
            is_remote(&dest.text).then(|| {
                Hit::Yes(format!(
                    "`rclone {} … {}` writes to a remote",
                    verb.text, dest.text
                ))
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(s: &str) -> Option<Hit> {
        let words: Vec<Arg> = s.split_whitespace().map(Arg::lit).collect();
        remote_copy(words[0].text.as_str(), &words)
    }

    #[test]
    fn uploads_are_privileged() {
        for c in [
            "scp x host:/tmp/",
            "scp -i key -P 2222 a b deploy@host:",
            "scp x scp://host/dir",
            "rsync -a dist/ host:/var/www/",
            "rsync -e ssh -a dist/ deploy@host:/srv",
            "rsync -a --exclude .git . host::module",
            "rsync -a . rsync://host/module",
            "rclone copy dist remote:bucket",
            "rclone sync . gdrive:backup",
            "rclone delete s3:bucket/x",
            "rclone link remote:file",
            "rclone serve http remote:",
        ] {
            assert!(matches!(verdict(c), Some(Hit::Yes(_))), "{c}");
        }
    }

    #[test]
    fn downloads_and_local_copies_are_not() {
        for c in [
            "scp host:/etc/hosts .",
            "rsync -a host:/var/www/ dist/",
            "rsync -a src/ ./a:b/",
            "rsync -a src/ dst/",
            "rsync host:/x",
            "rclone copy remote:bucket ./local",
            "rclone ls remote:",
            "rclone config",
        ] {
            assert_eq!(verdict(c), None, "{c}");
        }
    }
}

//! Signals to every process: `kill -1` (every process the user may signal)
//! and `pkill`/`killall -u USER` with no pattern, its other name — in
//! runner mode, berth's own processes among them.

use super::*;

/// `kill -9 -1`: every process the user may signal.
pub(super) fn kill_all(inv: &[Arg]) -> Option<Hit> {
    let name = inv[0].basename();
    if matches!(name, "pkill" | "killall") {
        return every_process_of_a_user(name, inv);
    }
    if name != "kill" {
        return None;
    }
    // `-1` is a signal number in `kill -1 PID`, and the pid of every process
    // after another option or `--` (`kill -9 -1`, `kill -- -1`).
    let options = inv
        .iter()
        .skip(1)
        .filter(|x| !x.dynamic && x.text.starts_with('-'))
        .count();
    let mut options_done = false;
    for a in inv.iter().skip(1) {
        if a.is("--") {
            options_done = true;
            continue;
        }
        if a.is("-1") && (options_done || options > 1 || inv.len() == 2) {
            return Some(Hit::Deny("`kill -1`: signals every process".to_string()));
        }
    }
    None
}

/// `pkill -u USER`, `killall -u USER` with no pattern or name: every
/// process of the user — `kill -1` by another name (berth's own among
/// them, in runner mode).
pub(super) fn every_process_of_a_user(name: &str, inv: &[Arg]) -> Option<Hit> {
    // Short options that take a value; long ones that do.
    let values: &[u8] = if name == "pkill" {
        b"gGPstuUF"
    } else {
        b"usoyZ"
    };
    const LONG_VALUES: &[&str] = &[
        "user",
        "euid",
        "uid",
        "signal",
        "group",
        "parent",
        "session",
        "terminal",
        "pidfile",
        "older-than",
        "younger-than",
        "context",
        "ns",
        "nslist",
    ];
    let mut by_user = false;
    let mut operands = 0;
    let mut dynamic = false;
    let mut words = inv.iter().skip(1);
    while let Some(a) = words.next() {
        let t = a.text.as_str();
        if a.dynamic {
            // A dynamic option may be `-u`; a dynamic operand a pattern
            // that matches everything.
            dynamic = true;
            if !t.starts_with('-') {
                operands += 1;
            }
            continue;
        }
        if let Some(long) = t.strip_prefix("--") {
            let (n, v) = long.split_once('=').unwrap_or((long, ""));
            by_user |= matches!(n, "user" | "euid" | "uid");
            if v.is_empty() && LONG_VALUES.contains(&n) {
                words.next();
            }
            continue;
        }
        if let Some(opts) = t.strip_prefix('-').filter(|o| !o.is_empty()) {
            // `-9`, `-KILL`: a signal.
            if opts
                .bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
            {
                continue;
            }
            if let Some(k) = opts.bytes().position(|b| values.contains(&b)) {
                by_user |= matches!(opts.as_bytes()[k], b'u' | b'U');
                if k + 1 == opts.len() {
                    words.next();
                }
            }
            continue;
        }
        operands += 1;
    }
    if !by_user {
        return None;
    }
    match (operands, dynamic) {
        (0, false) => Some(Hit::Deny(format!(
            "`{name} -u` with no pattern: signals every process of the user"
        ))),
        (_, true) => Some(Hit::Maybe(format!(
            "`{name} -u` with a word known only at run time: it may signal every process of the user"
        ))),
        _ => None,
    }
}

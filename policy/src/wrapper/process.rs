//! Process wrappers: programs that run the rest of their line with another
//! priority, limit, lock, tracer or namespace (`timeout`, `nice`, `nohup`,
//! `flock`, `strace`, …), and the ones that build the command from their
//! input or rerun it (`xargs`, `watch`). A table per program gives its
//! options' arity and which ones mean it runs nothing else.

use super::{NONE, Spec, Unwrap, WrapInfo, join_script, long_name};
use crate::arg::Arg;

/// Process wrappers with no options of their own that matter: they run the rest of the line as it is (`nohup`, `setsid`, `builtin`, …).
const PLAIN: Spec = Spec {
    itself_short: b"",
    ..NONE
};

/// `command cmd…` runs `cmd` bypassing functions; `-v`/`-V` only print what a name is, running nothing.
const COMMAND: Spec = Spec {
    itself_short: b"vV", // prints what a name is: no command follows
    ..NONE
};

/// `exec cmd…` replaces the shell with `cmd`; `-a NAME` sets its argv[0].
const EXEC: Spec = Spec {
    short_val: b"a",
    ..NONE
};

/// `timeout DURATION cmd…` (and GNU `gtimeout` on macOS): runs the command with a time limit.
const TIMEOUT: Spec = Spec {
    short_val: b"sk",
    long_val: &["--signal", "--kill-after"],
    positional: 1,
    ..NONE
};

/// `nice [-n N] cmd…` (and `gnice`): runs the command at another priority.
const NICE: Spec = Spec {
    short_val: b"n",
    long_val: &["--adjustment"],
    ..NONE
};

/// `ionice [-c C] cmd…`: runs the command at another I/O priority; `-p` acts on running processes instead, running nothing.
const IONICE: Spec = Spec {
    short_val: b"cnpPu",
    long_val: &["--class", "--classdata", "--pid", "--pgid", "--uid"],
    itself_short: b"p", // acts on a running process: no command follows
    ..NONE
};

/// `stdbuf -oL cmd…` (and `gstdbuf`): runs the command with other stdio buffering.
const STDBUF: Spec = Spec {
    short_val: b"ioe",
    long_val: &["--input", "--output", "--error"],
    ..NONE
};

/// `time [-p] cmd…`: the `time` program runs the command and reports how long it took.
const TIME: Spec = Spec {
    short_val: b"fo",
    long_val: &["--format", "--output"],
    ..NONE
};

/// `taskset MASK cmd…`: runs the command on some CPUs; `-p` acts on a running process instead.
const TASKSET: Spec = Spec {
    positional: 1,
    itself_short: b"p", // acts on a running process: no command follows
    ..NONE
};

/// `chrt PRIO cmd…`: runs the command with a real-time policy; `-p` acts on a running process, `-m` only lists.
const CHRT: Spec = Spec {
    short_val: b"T",
    positional: 1,
    itself_short: b"pm", // a running process, or lists: no command follows
    ..NONE
};

/// `prlimit --nofile=N cmd…`: runs the command with resource limits.
const PRLIMIT: Spec = Spec {
    short_val: b"p",
    long_val: &["--pid"],
    ..NONE
};

/// `faketime TIME cmd…`: runs the command with a faked clock.
const FAKETIME: Spec = Spec {
    short_val: b"f",
    positional: 1,
    ..NONE
};

/// `fakeroot cmd…`: runs the command believing it is root (no real privilege).
const FAKEROOT: Spec = Spec {
    short_val: b"ls",
    long_val: &["--lib", "--faked", "-s", "-i"],
    ..NONE
};

/// `systemd-run cmd…`: runs the command as a systemd unit, outside the caller.
const SYSTEMD_RUN: Spec = Spec {
    short_val: b"pEMH",
    long_val: &[
        "--unit",
        "--property",
        "--setenv",
        "--uid",
        "--gid",
        "--working-directory",
        "--machine",
        "--host",
        "--slice",
        "--description",
        "--nice",
        "--service-type",
    ],
    ..NONE
};

/// `strace [opts] cmd…`: runs the command under the tracer.
const STRACE: Spec = Spec {
    short_val: b"eoOpPsSuUXabI",
    long_val: &["--output", "--trace", "--signal"],
    ..NONE
};

/// `ltrace [opts] cmd…`: runs the command under the library tracer.
const LTRACE: Spec = Spec {
    short_val: b"eoOpPsSuUXaAbDFlnx",
    long_val: &["--output"],
    ..NONE
};

/// `valgrind cmd…`, `caffeinate cmd…`: run the command as it is.
const VALGRIND: Spec = NONE;

/// `firejail cmd…` is named a wrapper here (for `--always`); `unwrap` treats it as opaque before this table is read.
const FIREJAIL: Spec = NONE;

/// Less common process wrappers with no options that matter (deny rules must see through them too).
const PLAIN_LESS_COMMON: Spec = NONE;

/// `setarch ARCH cmd…`: runs the command with another personality.
const SETARCH: Spec = Spec {
    positional: 1,
    ..NONE
};

/// `proxychains [-f CONF] cmd…`: runs the command through proxies.
const PROXYCHAINS: Spec = Spec {
    short_val: b"f",
    ..NONE
};

/// `trickle -d N cmd…`: runs the command with limited bandwidth.
const TRICKLE: Spec = Spec {
    short_val: b"dulwtn",
    ..NONE
};

/// `cpulimit -l N cmd…`: runs the command with limited CPU; `-p`/`-P`/`-e` act on a running process instead.
const CPULIMIT: Spec = Spec {
    short_val: b"lpei",
    long_val: &["--limit", "--pid", "--exe", "--path"],
    itself_short: b"pPe", // a running process: no command follows
    ..NONE
};

/// `timelimit -t N cmd…`: runs the command with a time limit.
const TIMELIMIT: Spec = Spec {
    short_val: b"tTsSpP",
    ..NONE
};

/// `lckdo LOCKFILE cmd…`: runs the command holding a lock.
const LCKDO: Spec = Spec {
    short_val: b"W",
    positional: 1,
    ..NONE
};

/// `with-lock-ex LOCKFILE cmd…`: runs the command holding a lock.
const WITH_LOCK_EX: Spec = Spec {
    positional: 1,
    ..NONE
};

/// `chpst [opts] cmd…`: runit's process-state changer.
const CHPST: Spec = Spec {
    short_val: b"uUbeglmdosctfp",
    ..NONE
};

/// `cgexec -g CG cmd…`: runs the command in a control group.
const CGEXEC: Spec = Spec {
    short_val: b"g",
    ..NONE
};

/// `numactl [opts] cmd…`: runs the command with a NUMA policy.
const NUMACTL: Spec = Spec {
    short_val: b"NCmpiP",
    long_val: &[
        "--cpunodebind",
        "--physcpubind",
        "--membind",
        "--preferred",
        "--interleave",
    ],
    ..NONE
};

/// `flatpak-spawn [opts] cmd…`: runs the command outside or inside a sandbox.
const FLATPAK_SPAWN: Spec = Spec {
    long_val: &["--directory", "--env", "--forward-fd"],
    ..NONE
};

/// `schroot -c CHROOT cmd…`: runs the command in a configured chroot.
const SCHROOT: Spec = Spec {
    short_val: b"cud",
    long_val: &["--chroot", "--user", "--directory"],
    ..NONE
};

/// `arch cmd…`: runs the command (macOS: under another architecture).
const ARCH: Spec = NONE;

/// `sandbox-exec -f PROFILE cmd…`: macOS's sandbox runs the command.
const SANDBOX_EXEC: Spec = Spec {
    short_val: b"fpD",
    ..NONE
};

/// `xvfb-run [opts] cmd…`: runs the command with a virtual X display.
const XVFB_RUN: Spec = Spec {
    short_val: b"nsfpe",
    long_val: &[
        "--server-num",
        "--server-args",
        "--auth-file",
        "--xauth-protocol",
        "--error-file",
    ],
    ..NONE
};

pub(super) fn spec(name: &str) -> Option<Spec> {
    Some(match name {
        "nohup" | "builtin" | "setsid" | "catchsegv" | "dbus-run-session" | "entr"
        | "with-contenv" | "chronic" | "unbuffer" | "pv-wrap" => PLAIN,
        "command" => COMMAND,
        "exec" => EXEC,
        "timeout" | "gtimeout" => TIMEOUT,
        "nice" | "gnice" => NICE,
        "ionice" => IONICE,
        "stdbuf" | "gstdbuf" => STDBUF,
        "time" => TIME,
        "taskset" => TASKSET,
        "chrt" => CHRT,
        "prlimit" => PRLIMIT,
        "faketime" => FAKETIME,
        "fakeroot" => FAKEROOT,
        "systemd-run" => SYSTEMD_RUN,
        "strace" => STRACE,
        "ltrace" => LTRACE,
        "valgrind" | "caffeinate" => VALGRIND,
        "firejail" => FIREJAIL,
        "eatmydata" | "nocache" | "torsocks" | "tsocks" | "rlwrap" | "run-one" | "ifne"
        | "daemonize" | "gnohup" | "fakechroot" | "linux32" | "linux64" | "ccache" | "sccache"
        | "distcc" | "icecc" => PLAIN_LESS_COMMON,
        "setarch" => SETARCH,
        "proxychains" | "proxychains4" => PROXYCHAINS,
        "trickle" => TRICKLE,
        "cpulimit" => CPULIMIT,
        "timelimit" => TIMELIMIT,
        "lckdo" => LCKDO,
        "with-lock-ex" => WITH_LOCK_EX,
        "chpst" => CHPST,
        "cgexec" => CGEXEC,
        "numactl" => NUMACTL,
        "flatpak-spawn" => FLATPAK_SPAWN,
        "schroot" => SCHROOT,
        "arch" => ARCH,
        "sandbox-exec" => SANDBOX_EXEC,
        "xvfb-run" => XVFB_RUN,
        _ => return None,
    })
}

pub(super) fn unwrap_xargs(argv: &[Arg]) -> Unwrap {
    let mut info = WrapInfo {
        trailing_dynamic: true,
        ..WrapInfo::default()
    };
    let mut i = 1;
    // Options that take a value in the next word when not attached.
    const SHORT_VAL: &[u8] = b"aEdILnPs";
    const LONG_VAL: &[&str] = &[
        "--arg-file",
        "--delimiter",
        "--max-lines",
        "--max-args",
        "--max-procs",
        "--max-chars",
        "--process-slot-var",
        "--eof",
        "--replace",
    ];
    while i < argv.len() {
        let a = &argv[i];
        if a.dynamic {
            break;
        }
        let t = a.text.as_str();
        if t == "--" {
            i += 1;
            break;
        }
        if t.starts_with("--") {
            let name = long_name(t);
            if name == "--replace" {
                info.replace = Some(t.split_once('=').map_or("{}", |(_, v)| v).to_string());
                info.trailing_dynamic = false;
                i += 1;
                continue;
            }
            if LONG_VAL.contains(&name) && !t.contains('=') {
                i += 2;
            } else {
                i += 1;
            }
            continue;
        }
        if t.len() > 1 && t.starts_with('-') {
            let bytes = t.as_bytes();
            let c = bytes[1];
            if c == b'I' {
                let r = if t.len() > 2 {
                    Some(t[2..].to_string())
                } else {
                    argv.get(i + 1).map(|x| x.text.clone())
                };
                info.replace = r;
                info.trailing_dynamic = false;
                i += if t.len() > 2 { 1 } else { 2 };
                continue;
            }
            if c == b'i' {
                info.replace = Some(if t.len() > 2 {
                    t[2..].to_string()
                } else {
                    "{}".to_string()
                });
                info.trailing_dynamic = false;
                i += 1;
                continue;
            }
            // A cluster: the first value-taking option takes the rest or the next word.
            let mut next = false;
            for (j, &ch) in bytes.iter().enumerate().skip(1) {
                if SHORT_VAL.contains(&ch) {
                    next = j + 1 == bytes.len();
                    break;
                }
            }
            i += if next { 2 } else { 1 };
            continue;
        }
        break;
    }
    if i >= argv.len() {
        // xargs with no command runs `echo`.
        return Unwrap::Itself;
    }
    Unwrap::Command { start: i, info }
}

pub(super) fn unwrap_watch(argv: &[Arg]) -> Unwrap {
    let mut i = 1;
    let mut exec = false;
    while i < argv.len() {
        let a = &argv[i];
        if a.dynamic {
            break;
        }
        let t = a.text.as_str();
        if t == "--" {
            i += 1;
            break;
        }
        if t == "-x" || t == "--exec" {
            exec = true;
            i += 1;
            continue;
        }
        if t == "-n" || t == "--interval" || t == "-q" || t == "--equexit" {
            i += 2;
            continue;
        }
        if t.starts_with('-') && t.len() > 1 {
            if t.starts_with("-n") || t.starts_with("--") {
                i += 1;
                continue;
            }
            if t.contains('x') {
                exec = true;
            }
            i += 1;
            continue;
        }
        break;
    }
    if i >= argv.len() {
        return Unwrap::Itself;
    }
    if exec {
        return Unwrap::Command {
            start: i,
            info: WrapInfo::default(),
        };
    }
    join_script(&argv[i..], true)
}

pub(super) fn unwrap_flock(argv: &[Arg]) -> Unwrap {
    let mut i = 1;
    let mut have_file = false;
    while i < argv.len() {
        let a = &argv[i];
        let t = a.text.as_str();
        if !a.dynamic && (t == "-c" || t == "--command") {
            return match argv.get(i + 1) {
                Some(s) => Unwrap::Script {
                    script: s.clone(),
                    new_process: true,
                    info: WrapInfo::default(),
                },
                None => Unwrap::Itself,
            };
        }
        if !a.dynamic && t.starts_with("--command=") {
            return Unwrap::Script {
                script: Arg {
                    text: t["--command=".len()..].to_string(),
                    ..a.clone()
                },
                new_process: true,
                info: WrapInfo::default(),
            };
        }
        if !a.dynamic && !have_file && t.starts_with('-') && t.len() > 1 {
            i += if matches!(
                t,
                "-w" | "--wait" | "--timeout" | "-E" | "--conflict-exit-code"
            ) {
                2
            } else {
                1
            };
            continue;
        }
        if !have_file {
            have_file = true;
            i += 1;
            continue;
        }
        if a.is("--") {
            i += 1;
            continue;
        }
        return Unwrap::Command {
            start: i,
            info: WrapInfo::default(),
        };
    }
    Unwrap::Itself
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{args, assert_starts, script};
    use super::super::{Unwrap, unwrap};

    #[test]
    fn finds_the_wrapped_command() {
        let cases: &[(&str, Option<usize>)] = &[
            ("timeout 30 npm test", Some(2)),
            ("timeout -s KILL 30 npm test", Some(4)),
            ("timeout --signal=KILL 1m make check", Some(3)),
            ("nice -n 10 make", Some(3)),
            ("nice -10 make", Some(2)),
            ("nohup rm -rf x", Some(1)),
            ("xargs -0 -n 1 rm -f", Some(4)),
            ("xargs rm", Some(1)),
            ("stdbuf -oL cmd", Some(2)),
            ("ionice -c 3 cmd", Some(3)),
            ("flock /tmp/l make", Some(2)),
            ("flock -n /tmp/l make", Some(3)),
            ("command ls", Some(1)),
            ("builtin cd x", Some(1)),
            ("exec -a name ls", Some(3)),
            ("time -p ls", Some(2)),
            ("strace -f -o out.txt ls", Some(4)),
            ("watch -x ls", Some(2)),
            ("setarch x86_64 rm x", Some(2)),
            ("eatmydata rm x", Some(1)),
        ];
        assert_starts(cases);
    }

    #[test]
    fn scripts_and_opaque() {
        assert_eq!(script("watch -n 1 ls -l"), Some("ls -l".into()));
        assert_eq!(script("flock /tmp/l -c ls"), Some("ls".into()));
        assert_eq!(unwrap(&args("command -v ls")), Unwrap::Itself);
    }
}

//! Process wrappers: programs that run the rest of their line with another
//! priority, limit, lock, tracer or namespace (`timeout`, `nice`, `nohup`,
//! `strace`, …). A table per program gives its options' arity and which
//! ones mean it runs nothing else. (`xargs`, `watch` and `flock` are in
//! `rerun.rs`.)

use super::{NONE, Spec};
use crate::options::{HELP_VERSION, Opt, Role, flag, optional, value};

const HELP: Opt = HELP_VERSION[0];
const VERSION: Opt = HELP_VERSION[1];

/// `nohup cmd…`: runs the command ignoring hangups.
const NOHUP: Spec = Spec {
    opts: &[HELP, VERSION],
    ..NONE
};

/// `setsid cmd…`: runs the command in a new session.
const SETSID: Spec = Spec {
    opts: &[
        flag(b'c', "ctty"),
        flag(b'f', "fork"),
        flag(b'w', "wait"),
        flag(b'h', "help").role(Role::Itself),
        flag(b'V', "version").role(Role::Itself),
    ],
    ..NONE
};

/// `command cmd…` runs `cmd` bypassing functions; `-v`/`-V` only print what a name is, running nothing.
const COMMAND: Spec = Spec {
    opts: &[
        flag(b'p', ""),
        flag(b'v', "").role(Role::Itself), // prints what a name is: no command follows
        flag(b'V', "").role(Role::Itself), // the same, verbosely
    ],
    ..NONE
};

/// `exec cmd…` replaces the shell with `cmd`; `-a NAME` sets its argv[0].
const EXEC: Spec = Spec {
    opts: &[value(b'a', ""), flag(b'c', ""), flag(b'l', "")],
    ..NONE
};

/// `timeout DURATION cmd…` (and GNU `gtimeout` on macOS): runs the command with a time limit.
const TIMEOUT: Spec = Spec {
    opts: &[
        value(b's', "signal"),
        value(b'k', "kill-after"),
        flag(b'f', "foreground"),
        flag(b'p', "preserve-status"),
        flag(b'v', "verbose"),
        HELP,
        VERSION,
    ],
    positional: 1,
    ..NONE
};

/// `nice [-n N] cmd…` (and `gnice`): runs the command at another priority.
const NICE: Spec = Spec {
    opts: &[value(b'n', "adjustment"), HELP, VERSION],
    numeric: true,
    ..NONE
};

/// `ionice [-c C] cmd…`: runs the command at another I/O priority; `-p` acts on running processes instead, running nothing.
const IONICE: Spec = Spec {
    opts: &[
        value(b'c', "class"),
        value(b'n', "classdata"),
        flag(b't', "ignore"),
        value(b'p', "pid").role(Role::Itself), // acts on a running process: no command follows
        value(b'P', "pgid").role(Role::Itself), // the same for a process group
        value(b'u', "uid").role(Role::Itself), // the same for a user's processes
        flag(b'h', "help").role(Role::Itself),
        flag(b'V', "version").role(Role::Itself),
    ],
    ..NONE
};

/// `stdbuf -oL cmd…` (and `gstdbuf`): runs the command with other stdio buffering.
const STDBUF: Spec = Spec {
    opts: &[
        value(b'i', "input"),
        value(b'o', "output"),
        value(b'e', "error"),
        HELP,
        VERSION,
    ],
    ..NONE
};

/// `time [-p] cmd…`: the `time` program runs the command and reports how long it took.
const TIME: Spec = Spec {
    opts: &[
        flag(b'a', "append"),
        value(b'f', "format"),
        value(b'o', "output").role(Role::Writes), // the report file
        flag(b'p', "portability"),
        flag(b'q', "quiet"),
        flag(b'v', "verbose"),
        HELP,
        flag(b'V', "version").role(Role::Itself),
    ],
    ..NONE
};

/// `taskset MASK cmd…`: runs the command on some CPUs; `-p` acts on a running process instead.
const TASKSET: Spec = Spec {
    opts: &[
        flag(b'a', "all-tasks"),
        flag(b'c', "cpu-list"),
        flag(b'p', "pid").role(Role::Itself), // acts on a running process: no command follows
        flag(b'h', "help").role(Role::Itself),
        flag(b'V', "version").role(Role::Itself),
    ],
    positional: 1,
    ..NONE
};

/// `chrt PRIO cmd…`: runs the command with a real-time policy; `-p` acts on a running process, `-m` only lists.
const CHRT: Spec = Spec {
    opts: &[
        flag(b'b', "batch"),
        flag(b'd', "deadline"),
        flag(b'f', "fifo"),
        flag(b'i', "idle"),
        flag(b'o', "other"),
        flag(b'r', "rr"),
        flag(b'e', "ext"),
        flag(b'R', "reset-on-fork"),
        value(b'T', "sched-runtime"),
        value(b'P', "sched-period"),
        value(b'D', "sched-deadline"),
        flag(b'a', "all-tasks"),
        flag(b'v', "verbose"),
        flag(b'm', "max").role(Role::Itself), // lists priorities: no command follows
        flag(b'p', "pid").role(Role::Itself), // acts on a running process: no command follows
        flag(b'h', "help").role(Role::Itself),
        flag(b'V', "version").role(Role::Itself),
    ],
    positional: 1,
    ..NONE
};

/// `prlimit --nofile=N cmd…`: runs the command with resource limits.
const PRLIMIT: Spec = Spec {
    opts: &[
        value(b'p', "pid").role(Role::Itself), // acts on a running process: no command follows
        value(b'o', "output"),
        flag(0, "noheadings"),
        flag(0, "raw"),
        flag(0, "verbose"),
        optional(b'c', "core"),
        optional(b'd', "data"),
        optional(b'e', "nice"),
        optional(b'f', "fsize"),
        optional(b'i', "sigpending"),
        optional(b'l', "memlock"),
        optional(b'm', "rss"),
        optional(b'n', "nofile"),
        optional(b'q', "msgqueue"),
        optional(b'r', "rtprio"),
        optional(b's', "stack"),
        optional(b't', "cpu"),
        optional(b'u', "nproc"),
        optional(b'v', "as"),
        optional(b'x', "locks"),
        optional(b'y', "rttime"),
        flag(b'h', "help").role(Role::Itself),
        flag(b'V', "version").role(Role::Itself),
    ],
    ..NONE
};

/// `faketime TIME cmd…`: runs the command with a faked clock.
const FAKETIME: Spec = Spec {
    opts: &[value(b'f', ""), flag(b'm', ""), HELP, VERSION],
    positional: 1,
    ..NONE
};

/// `fakeroot cmd…`: runs the command believing it is root (no real privilege).
const FAKEROOT: Spec = Spec {
    opts: &[
        value(b'l', "lib"),
        value(0, "faked").role(Role::Runs), // the daemon program fakeroot starts
        value(b's', ""),
        value(b'i', ""),
        flag(b'u', "unknown-is-real"),
        value(b'b', ""),
        flag(b'h', "help").role(Role::Itself),
        flag(b'v', "version").role(Role::Itself),
    ],
    ..NONE
};

/// `systemd-run cmd…`: runs the command as a systemd unit, outside the caller.
const SYSTEMD_RUN: Spec = Spec {
    opts: &[
        value(b'u', "unit"),
        value(b'p', "property"),
        value(b'E', "setenv"),
        value(0, "uid"),
        value(0, "gid"),
        value(0, "working-directory"),
        value(b'M', "machine"),
        value(b'H', "host"),
        value(0, "slice"),
        value(0, "description"),
        value(0, "nice"),
        value(0, "service-type"),
        flag(0, "user"),
        flag(0, "system"),
        flag(0, "scope"),
        flag(b'r', "remain-after-exit"),
        flag(b't', "pty"),
        flag(b'P', "pipe"),
        flag(b'q', "quiet"),
        flag(b'G', "collect"),
        flag(0, "wait"),
        flag(0, "no-block"),
        flag(0, "no-ask-password"),
        flag(b'S', "shell"),
        flag(b'h', "help").role(Role::Itself),
        flag(0, "version").role(Role::Itself),
    ],
    ..NONE
};

/// `strace [opts] cmd…`: runs the command under the tracer.
const STRACE: Spec = Spec {
    opts: &[
        value(b'o', "output").role(Role::Writes), // the trace file, or `|cmd` / `!cmd` it pipes into
        value(b'e', ""),
        value(b'E', "env"),
        value(b'p', "attach"),
        value(b'P', "trace-path"),
        value(b's', "string-limit"),
        value(b'S', "summary-sort-by"),
        value(b'u', "user"),
        value(b'X', "const-print-style"),
        value(b'a', "columns"),
        value(b'b', "detach-on"),
        value(b'I', "interruptible"),
        value(b'O', "summary-syscall-overhead"),
        optional(0, "trace"),
        optional(0, "signal"),
        flag(b'f', "follow-forks"),
        flag(b'F', ""),
        flag(b'c', "summary-only"),
        flag(b'C', "summary"),
        flag(b'd', "debug"),
        flag(b'D', "daemonize"),
        flag(b'i', "instruction-pointer"),
        flag(b'k', "stack-trace"),
        flag(b'n', "syscall-number"),
        flag(b'q', "quiet"),
        flag(b'r', "relative-timestamps"),
        flag(b't', "absolute-timestamps"),
        flag(b'T', "syscall-times"),
        flag(b'v', "no-abbrev"),
        flag(b'w', "summary-wall-clock"),
        flag(b'x', ""),
        flag(b'y', "decode-fds"),
        flag(b'z', "successful-only"),
        flag(b'Z', "failed-only"),
        flag(b'A', "output-append-mode"),
        flag(b'h', "help").role(Role::Itself),
        flag(b'V', "version").role(Role::Itself),
    ],
    ..NONE
};

/// `ltrace [opts] cmd…`: runs the command under the library tracer.
const LTRACE: Spec = Spec {
    opts: &[
        value(b'o', "output").role(Role::Writes), // the trace file
        value(b'e', ""),
        value(b'a', "align"),
        value(b'A', ""),
        value(b'D', "debug"),
        value(b'F', "config"),
        value(b'l', "library"),
        value(b'n', "indent"),
        value(b'p', ""),
        value(b's', ""),
        value(b'u', ""),
        value(b'x', ""),
        value(b'L', ""),
        flag(b'b', "no-signals"),
        flag(b'c', ""),
        flag(b'C', "demangle"),
        flag(b'f', ""),
        flag(b'i', ""),
        flag(b'r', ""),
        flag(b'S', ""),
        flag(b't', ""),
        flag(b'T', ""),
        flag(b'w', "where"),
        flag(b'h', "help").role(Role::Itself),
        flag(b'V', "version").role(Role::Itself),
    ],
    ..NONE
};

/// `valgrind cmd…`: runs the command under a checker. Its `--tool=…` and
/// the many `--x=y` settings are read; any other option is unknown.
const VALGRIND: Spec = Spec {
    opts: &[
        value(0, "tool"),
        value(0, "leak-check"),
        value(0, "show-leak-kinds"),
        value(0, "track-origins"),
        value(0, "log-file").role(Role::Writes), // the report file
        value(0, "error-exitcode"),
        value(0, "suppressions"),
        value(0, "gen-suppressions"),
        value(0, "trace-children"),
        flag(b'q', "quiet"),
        flag(b'v', "verbose"),
        HELP,
        VERSION,
    ],
    ..NONE
};

/// `caffeinate [-dimsu] cmd…`: macOS keeps the machine awake while the command runs.
const CAFFEINATE: Spec = Spec {
    opts: &[
        flag(b'd', ""),
        flag(b'i', ""),
        flag(b'm', ""),
        flag(b's', ""),
        flag(b'u', ""),
        value(b't', ""),
        value(b'w', "").role(Role::Itself), // waits for a running process: no command follows
    ],
    ..NONE
};

/// `firejail cmd…` is named a wrapper here (for `--always`); `unwrap` treats it as opaque before this table is read.
const FIREJAIL: Spec = NONE;

/// Less common process wrappers: run the rest of the line; berth knows no
/// options of theirs, so any option makes the segment opaque.
const PLAIN_LESS_COMMON: Spec = NONE;

/// `setarch ARCH cmd…`: runs the command with another personality.
const SETARCH: Spec = Spec {
    opts: &[
        flag(b'v', "verbose"),
        flag(b'R', "addr-no-randomize"),
        flag(b'3', "3gb"),
        flag(b'L', "addr-compat-layout"),
        flag(b'B', "32bit"),
        flag(b'F', "fdpic-funcptrs"),
        flag(b'I', "short-inode"),
        flag(b'S', "whole-seconds"),
        flag(b'T', "sticky-timeouts"),
        flag(b'X', "read-implies-exec"),
        flag(b'Z', "mmap-page-zero"),
        flag(0, "uname-2.6"),
        flag(b'h', "help").role(Role::Itself),
        flag(b'V', "version").role(Role::Itself),
    ],
    positional: 1,
    ..NONE
};

/// `proxychains [-f CONF] cmd…`: runs the command through proxies.
const PROXYCHAINS: Spec = Spec {
    opts: &[value(b'f', ""), flag(b'q', "")],
    ..NONE
};

/// `trickle -d N cmd…`: runs the command with limited bandwidth.
const TRICKLE: Spec = Spec {
    opts: &[
        value(b'd', ""),
        value(b'u', ""),
        value(b'l', ""),
        value(b'w', ""),
        value(b't', ""),
        value(b'n', ""),
        flag(b's', ""),
        flag(b'v', ""),
        flag(b'V', ""),
    ],
    ..NONE
};

/// `cpulimit -l N cmd…`: runs the command with limited CPU; `-p`/`-P`/`-e` act on a running process instead.
const CPULIMIT: Spec = Spec {
    opts: &[
        value(b'l', "limit"),
        value(b'p', "pid").role(Role::Itself), // a running process: no command follows
        value(b'e', "exe").role(Role::Itself), // the same, by name
        value(b'P', "path").role(Role::Itself), // the same, by path
        value(b'i', ""),
        flag(b'z', "lazy"),
        flag(b'k', "kill"),
        flag(b'r', "restore"),
        flag(b'v', "verbose"),
        flag(b'b', "background"),
        flag(b'f', "foreground"),
        flag(b'q', "quiet"),
        flag(b'h', "help").role(Role::Itself),
    ],
    ..NONE
};

/// `timelimit -t N cmd…`: runs the command with a time limit.
const TIMELIMIT: Spec = Spec {
    opts: &[
        value(b't', ""),
        value(b'T', ""),
        value(b's', ""),
        value(b'S', ""),
        flag(b'p', ""),
        flag(b'q', ""),
    ],
    ..NONE
};

/// `lckdo LOCKFILE cmd…`: runs the command holding a lock.
const LCKDO: Spec = Spec {
    opts: &[flag(b'w', ""), value(b'W', ""), flag(b'q', "")],
    positional: 1,
    ..NONE
};

/// `with-lock-ex LOCKFILE cmd…`: runs the command holding a lock.
const WITH_LOCK_EX: Spec = Spec {
    opts: &[flag(b'q', ""), flag(b'w', "")],
    positional: 1,
    ..NONE
};

/// `chpst [opts] cmd…`: runit's process-state changer.
const CHPST: Spec = Spec {
    opts: &[
        value(b'u', ""),
        value(b'U', ""),
        value(b'b', ""),
        value(b'e', ""),
        value(b'n', ""),
        value(b'l', ""),
        value(b'L', ""),
        value(b'm', ""),
        value(b'd', ""),
        value(b'o', ""),
        value(b'p', ""),
        value(b'f', ""),
        value(b'c', ""),
        value(b'r', ""),
        value(b't', ""),
        value(b'/', ""),
        flag(b'v', ""),
        flag(b'P', ""),
        flag(b'0', ""),
        flag(b'1', ""),
        flag(b'2', ""),
    ],
    ..NONE
};

/// `cgexec -g CG cmd…`: runs the command in a control group.
const CGEXEC: Spec = Spec {
    opts: &[value(b'g', ""), flag(0, "sticky")],
    ..NONE
};

/// `numactl [opts] cmd…`: runs the command with a NUMA policy.
const NUMACTL: Spec = Spec {
    opts: &[
        value(b'N', "cpunodebind"),
        value(b'C', "physcpubind"),
        value(b'm', "membind"),
        value(b'p', "preferred"),
        value(b'i', "interleave"),
        flag(b'l', "localalloc"),
        flag(b'a', "all"),
        flag(b'H', "hardware").role(Role::Itself), // prints the hardware: no command follows
        flag(b's', "show").role(Role::Itself),     // prints the policy: no command follows
        flag(b'h', "help").role(Role::Itself),
    ],
    ..NONE
};

/// `flatpak-spawn [opts] cmd…`: runs the command outside or inside a sandbox.
const FLATPAK_SPAWN: Spec = Spec {
    opts: &[
        value(0, "directory"),
        value(0, "env"),
        value(0, "forward-fd"),
        flag(0, "host"),
        flag(0, "clear-env"),
        flag(0, "watch-bus"),
        flag(0, "sandbox"),
        flag(0, "no-network"),
        flag(0, "latest-version"),
        flag(b'v', "verbose"),
        flag(b'h', "help").role(Role::Itself),
    ],
    ..NONE
};

/// `schroot -c CHROOT cmd…`: runs the command in a configured chroot.
const SCHROOT: Spec = Spec {
    opts: &[
        value(b'c', "chroot"),
        value(b'u', "user"),
        value(b'd', "directory"),
        flag(b'p', "preserve-environment"),
        flag(b'q', "quiet"),
        flag(b'v', "verbose"),
        flag(b'l', "list").role(Role::Itself), // lists chroots: no command follows
        flag(b'i', "info").role(Role::Itself), // prints chroot info: no command follows
        flag(b'h', "help").role(Role::Itself),
        flag(b'V', "version").role(Role::Itself),
    ],
    ..NONE
};

/// `arch cmd…`: runs the command (macOS: under another architecture).
const ARCH: Spec = Spec {
    opts: &[
        flag(0, "x86_64"),
        flag(0, "arm64"),
        flag(0, "arm64e"),
        flag(0, "i386"),
        flag(b'c', ""),
        value(b'e', ""),
        value(b'd', ""),
    ],
    ..NONE
};

/// `sandbox-exec -f PROFILE cmd…`: macOS's sandbox runs the command.
const SANDBOX_EXEC: Spec = Spec {
    opts: &[
        value(b'f', ""),
        value(b'n', ""),
        value(b'p', ""),
        value(b'D', ""),
    ],
    ..NONE
};

/// `xvfb-run [opts] cmd…`: runs the command with a virtual X display.
const XVFB_RUN: Spec = Spec {
    opts: &[
        value(b'n', "server-num"),
        value(b's', "server-args"),
        value(b'f', "auth-file"),
        value(b'p', "xauth-protocol"),
        value(b'e', "error-file"),
        flag(b'a', "auto-servernum"),
        value(b'l', "listen-tcp"),
        flag(b'h', "help").role(Role::Itself),
    ],
    ..NONE
};

/// `ssh-agent [opts] cmd…`: starts an agent, then runs the command with
/// it (without a command it only prints the agent's variables).
const SSH_AGENT: Spec = Spec {
    opts: &[
        value(b'a', ""),
        flag(b'c', ""),
        flag(b's', ""),
        flag(b'D', ""),
        flag(b'd', ""),
        flag(b'k', "").role(Role::Itself), // kills the running agent: no command follows
        value(b'E', ""),
        value(b'P', ""),
        value(b'O', ""),
        value(b't', ""),
    ],
    ..NONE
};

/// `sshpass [-p PW|-f F|-d FD|-e] cmd…`: runs the command, typing the
/// password into it.
const SSHPASS: Spec = Spec {
    opts: &[
        value(b'p', ""),
        value(b'f', ""),
        value(b'd', ""),
        flag(b'e', ""),
        value(b'P', ""),
        flag(b'v', ""),
        flag(b'h', "").role(Role::Itself),
        flag(b'V', "").role(Role::Itself),
    ],
    ..NONE
};

/// `lockf [-kns] [-t SECONDS] FILE cmd…` (BSD): runs the command holding
/// a lock on FILE.
const LOCKF: Spec = Spec {
    opts: &[
        flag(b'k', ""),
        flag(b'n', ""),
        flag(b's', ""),
        value(b't', ""),
    ],
    positional: 1,
    ..NONE
};

/// The dynamic loader run as a program (`/lib64/ld-linux-x86-64.so.2
/// prog…`, `ld.so`, musl's `ld-musl-x86_64.so.1`): it runs the program it
/// is given. Its options (`--preload`, `--audit`, `--library-path`) load
/// code: not modelled, so opaque.
pub(super) const LOADER: Spec = PLAIN_LESS_COMMON;

pub(super) fn is_dynamic_loader(name: &str) -> bool {
    name == "ld.so"
        || (["ld-linux", "ld-musl-", "ld64.so"]
            .iter()
            .any(|p| name.starts_with(p))
            && name.contains(".so"))
}

pub(super) fn spec(name: &str) -> Option<Spec> {
    Some(match name {
        "nohup" | "gnohup" => NOHUP,
        "setsid" => SETSID,
        "builtin" | "catchsegv" | "dbus-run-session" | "entr" | "with-contenv" | "chronic"
        | "unbuffer" | "pv-wrap" => PLAIN_LESS_COMMON,
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
        "valgrind" => VALGRIND,
        "caffeinate" => CAFFEINATE,
        "firejail" => FIREJAIL,
        "eatmydata" | "nocache" | "torsocks" | "tsocks" | "rlwrap" | "run-one" | "ifne"
        | "daemonize" | "fakechroot" | "linux32" | "linux64" | "ccache" | "sccache" | "distcc"
        | "icecc" => PLAIN_LESS_COMMON,
        // `dbus-launch [--exit-with-session] cmd…` starts a session bus,
        // then runs the command; `torify` is torsocks; `systemd-inhibit
        // [--what=…] cmd…` holds a lock while the command runs.
        "dbus-launch" | "torify" | "systemd-inhibit" => PLAIN_LESS_COMMON,
        // Container init processes and a Windows console shim: they run the
        // command as it is.
        "tini" | "tini-static" | "dumb-init" | "catatonit" | "winpty" => PLAIN_LESS_COMMON,
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
        "ssh-agent" => SSH_AGENT,
        "sshpass" => SSHPASS,
        "lockf" => LOCKF,
        // Their options are not modelled: with one, the segment is opaque
        // (task spooler queues the command; heaptrack and retry run it).
        "tsp" | "heaptrack" | "retry" => PLAIN_LESS_COMMON,
        _ => return None,
    })
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

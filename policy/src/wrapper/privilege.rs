//! Privilege wrappers: programs that run a command as another user or with
//! other ids, root, capabilities or namespaces (`sudo`, `doas`, `su`,
//! `chroot`, `setpriv`, …). Their specs say `privileged`, which the
//! privileged limit reads whatever the command they run.

use super::{NONE, Spec, Unwrap, WrapInfo, runs_reason};
use crate::arg::Arg;
use crate::options::{HELP_VERSION, Opt, Role, Syntax, flag, optional, parse, value};

const HELP: Opt = HELP_VERSION[0];
const VERSION: Opt = HELP_VERSION[1];

/// `chroot DIR cmd…`: runs the command under another root; needs privilege.
const CHROOT: Spec = Spec {
    opts: &[
        value(0, "userspec"),
        value(0, "groups"),
        flag(0, "skip-chdir"),
        HELP,
        VERSION,
    ],
    positional: 1,
    privileged: true, // runs the command as another user or with other privileges
    ..NONE
};

/// `unshare [opts] cmd…`: runs the command in new namespaces; a user namespace makes it root there.
const UNSHARE: Spec = Spec {
    opts: &[
        optional(b'm', "mount"),
        optional(b'u', "uts"),
        optional(b'i', "ipc"),
        optional(b'n', "net"),
        optional(b'p', "pid"),
        optional(b'U', "user"),
        optional(b'C', "cgroup"),
        optional(b'T', "time"),
        flag(b'f', "fork"),
        optional(0, "kill-child"),
        optional(0, "mount-proc"),
        optional(0, "map-user"),
        optional(0, "map-group"),
        value(0, "map-users"),
        value(0, "map-groups"),
        flag(0, "map-auto"),
        flag(b'r', "map-root-user"),
        flag(b'c', "map-current-user"),
        value(0, "propagation"),
        value(0, "setgroups"),
        value(b'R', "root"),
        value(b'w', "wd"),
        value(b'S', "setuid"),
        value(b'G', "setgid"),
        value(0, "monotonic"),
        value(0, "boottime"),
        value(b'l', "load-interp").role(Role::Runs), // registers an interpreter program (binfmt_misc)
        flag(b'h', "help").role(Role::Itself),
        flag(b'V', "version").role(Role::Itself),
    ],
    privileged: true, // runs the command as another user or with other privileges
    ..NONE
};

/// `nsenter -t PID cmd…`: runs the command in another process's namespaces; needs privilege.
const NSENTER: Spec = Spec {
    opts: &[
        value(b't', "target"),
        flag(b'a', "all"),
        optional(b'm', "mount"),
        optional(b'u', "uts"),
        optional(b'i', "ipc"),
        optional(b'n', "net"),
        optional(b'N', "net-socket"),
        optional(b'p', "pid"),
        optional(b'C', "cgroup"),
        optional(b'U', "user"),
        optional(b'T', "time"),
        flag(0, "user-parent"),
        value(b'S', "setuid"),
        value(b'G', "setgid"),
        flag(0, "preserve-credentials"),
        flag(0, "keep-caps"),
        optional(b'r', "root"),
        optional(b'w', "wd"),
        value(b'W', "wdns"),
        flag(b'e', "env"),
        flag(b'F', "no-fork"),
        flag(b'Z', "follow-context"),
        flag(b'c', "join-cgroup"),
        flag(b'h', "help").role(Role::Itself),
        flag(b'V', "version").role(Role::Itself),
    ],
    privileged: true, // runs the command as another user or with other privileges
    ..NONE
};

/// `su-exec USER cmd…`, `gosu`, `setuidgid`: run the command as another user.
const SU_EXEC: Spec = Spec {
    positional: 1,
    privileged: true, // runs the command as another user or with other privileges
    ..NONE
};

/// `setpriv --reuid=U cmd…`: runs the command with other ids and capabilities.
const SETPRIV: Spec = Spec {
    opts: &[
        flag(b'd', "dump").role(Role::Itself), // prints the state: no command follows
        flag(0, "nnp"),
        flag(0, "no-new-privs"),
        value(0, "ambient-caps"),
        value(0, "inh-caps"),
        value(0, "bounding-set"),
        value(0, "ruid"),
        value(0, "euid"),
        value(0, "rgid"),
        value(0, "egid"),
        value(0, "reuid"),
        value(0, "regid"),
        flag(0, "clear-groups"),
        flag(0, "keep-groups"),
        flag(0, "init-groups"),
        value(0, "groups"),
        value(0, "securebits"),
        value(0, "pdeathsig"),
        value(0, "selinux-label"),
        value(0, "apparmor-profile"),
        value(0, "landlock-access"),
        value(0, "landlock-rule"),
        flag(0, "reset-env"),
        flag(0, "list-caps").role(Role::Itself),
        flag(b'h', "help").role(Role::Itself),
        flag(b'V', "version").role(Role::Itself),
    ],
    privileged: true, // runs the command as another user or with other privileges
    ..NONE
};

/// `sudo [opts] cmd…`: runs the command as another user, root by default.
const SUDO: Spec = Spec {
    opts: &[
        flag(b'A', "askpass"), // runs the askpass program SUDO_ASKPASS names: still sudo
        value(b'a', "auth-type"),
        flag(b'B', "bell"),
        flag(b'b', "background"),
        value(b'C', "close-from"),
        value(b'c', "login-class"),
        value(b'D', "chdir").role(Role::Chdir), // the command runs in this directory
        flag(b'E', ""), // a flag in its short form, an optional list in its long one
        optional(0, "preserve-env"),
        value(b'g', "group"),
        flag(b'H', "set-home"),
        optional(b'h', "host"),
        flag(b'i', "login"),
        flag(b'k', "reset-timestamp"), // forgets the credentials, then still runs the command
        flag(b'n', "non-interactive"),
        flag(b'N', "no-update"),
        flag(b'P', "preserve-groups"),
        value(b'p', "prompt"),
        value(b'R', "chroot"),
        value(b'r', "role"),
        flag(b'S', "stdin"),
        flag(b's', "shell"),
        value(b'T', "command-timeout"),
        value(b't', "type"),
        value(b'U', "other-user"),
        value(b'u', "user"),
        flag(b'K', "remove-timestamp").role(Role::Itself), // forgets the credentials: no command follows
        flag(b'l', "list").role(Role::Itself),             // lists what may run: no command follows
        flag(b'V', "version").role(Role::Itself),
        flag(b'v', "validate").role(Role::Itself), // refreshes the credentials: no command follows
        flag(b'e', "edit").role(Role::Itself), // edits files (sudoedit): the limit reads `sudo` itself
        flag(0, "help").role(Role::Itself),
    ],
    privileged: true, // runs the command as another user or with other privileges
    ..NONE
};

/// `doas [opts] cmd…`: OpenBSD's sudo.
const DOAS: Spec = Spec {
    opts: &[
        value(b'a', ""),
        value(b'C', "").role(Role::Itself), // checks a config file: no command runs
        flag(b'L', "").role(Role::Itself),  // forgets the credentials: no command follows
        flag(b'n', ""),
        flag(b's', ""),
        value(b'u', ""),
    ],
    privileged: true, // runs the command as another user or with other privileges
    ..NONE
};

/// `pkexec cmd…`: polkit runs the command as another user.
const PKEXEC: Spec = Spec {
    opts: &[
        value(0, "user"),
        flag(0, "keep-cwd"),
        flag(0, "disable-internal-agent"),
        flag(0, "help").role(Role::Itself),
        flag(0, "version").role(Role::Itself),
    ],
    privileged: true, // runs the command as another user or with other privileges
    ..NONE
};

/// `run0 [opts] cmd…`: systemd's sudo.
const RUN0: Spec = Spec {
    opts: &[
        value(b'u', "user"),
        value(b'g', "group"),
        value(b'D', "chdir").role(Role::Chdir), // the command runs in this directory
        value(0, "setenv"),
        value(0, "unit"),
        value(0, "property"),
        value(0, "description"),
        value(0, "slice"),
        value(0, "nice"),
        value(0, "background"),
        value(0, "machine"),
        flag(0, "no-ask-password"),
        flag(b'h', "help").role(Role::Itself),
        flag(0, "version").role(Role::Itself),
    ],
    privileged: true, // runs the command as another user or with other privileges
    ..NONE
};

/// `sudoedit FILE`: edits a file with privilege.
const SUDOEDIT: Spec = Spec {
    privileged: true, // runs the command as another user or with other privileges
    ..NONE
};

/// util-linux `su` and `runuser`'s su-like form.
const SU: &[Opt] = &[
    value(b'c', "command").role(Role::Script), // a command line run by the user's shell
    value(0, "session-command").role(Role::Script), // the same, in the same session
    value(b's', "shell").role(Role::Runs),     // the program that runs the command line
    value(b'g', "group"),
    value(b'G', "supp-group"),
    value(b'w', "whitelist-environment"),
    value(b'u', "user"), // runuser only: the command follows
    flag(b'f', "fast"),
    flag(b'l', "login"),
    flag(b'm', "preserve-environment"),
    flag(b'p', ""),
    flag(b'P', "pty"),
    flag(b'T', "no-pty"),
    flag(b'h', "help").role(Role::Itself),
    flag(b'V', "version").role(Role::Itself),
];

pub(super) fn spec(name: &str) -> Option<Spec> {
    Some(match name {
        "chroot" => CHROOT,
        "unshare" => UNSHARE,
        "nsenter" => NSENTER,
        "su-exec" | "gosu" | "setuidgid" | "s6-setuidgid" => SU_EXEC,
        "setpriv" => SETPRIV,
        "sudo" => SUDO,
        "doas" => DOAS,
        "pkexec" => PKEXEC,
        "run0" => RUN0,
        "sudoedit" => SUDOEDIT,
        _ => return None,
    })
}

/// `su [opts] [-] [user [args…]]` (options anywhere, as GNU getopt
/// permutes them); `runuser -u user [--] cmd…`.
pub(super) fn unwrap_su(argv: &[Arg], runuser: bool) -> Unwrap {
    let name = if runuser { "runuser" } else { "su" };
    let info = WrapInfo {
        privileged: true,
        ..WrapInfo::default()
    };
    if runuser {
        // `runuser -u USER [--] cmd…`: options end at the command.
        let parsed = parse(argv, 1, &Syntax::wrapper(SU));
        if parsed.problem.is_none() && parsed.has("user") {
            if let Some(f) = parsed.first_with(Role::Runs) {
                return Unwrap::Opaque(runs_reason(name, f));
            }
            return if parsed.end < argv.len() {
                Unwrap::Command {
                    start: parsed.end,
                    info,
                }
            } else {
                Unwrap::Itself
            };
        }
    }
    let parsed = parse(argv, 1, &Syntax::gnu(SU));
    if let Some(p) = &parsed.problem {
        return Unwrap::Opaque(p.describe(name));
    }
    if let Some(f) = parsed.first_with(Role::Runs) {
        return Unwrap::Opaque(runs_reason(name, f));
    }
    if parsed.first_with(Role::Itself).is_some() {
        return Unwrap::Itself;
    }
    if let Some(f) = parsed.first_with(Role::Script) {
        return match &f.value {
            Some(s) => Unwrap::Script {
                script: s.clone(),
                new_process: true,
                info,
            },
            None => Unwrap::Itself,
        };
    }
    // `su [-] [user]` starts the user's shell; more operands are its
    // arguments (a script it runs).
    let operands: Vec<&Arg> = parsed
        .operands
        .iter()
        .map(|&i| &argv[i])
        .filter(|a| !a.is("-"))
        .collect();
    if operands.len() > 1 || operands.iter().any(|a| a.dynamic) {
        return Unwrap::Opaque(format!("`{name}` passes arguments to the user's shell"));
    }
    Unwrap::Itself
}

pub(super) fn unwrap_sg(argv: &[Arg]) -> Unwrap {
    let info = WrapInfo {
        privileged: true,
        ..WrapInfo::default()
    };
    // `sg group -c cmd` or `sg group cmd`
    match (argv.get(2), argv.get(3)) {
        (Some(c), Some(s)) if c.is("-c") => Unwrap::Script {
            script: s.clone(),
            new_process: true,
            info,
        },
        (Some(s), _) => Unwrap::Script {
            script: s.clone(),
            new_process: true,
            info,
        },
        _ => Unwrap::Itself,
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{args, assert_starts, script};
    use super::super::{Unwrap, unwrap};

    #[test]
    fn finds_the_wrapped_command() {
        let cases: &[(&str, Option<usize>)] = &[
            ("sudo -u root -E rm x", Some(4)),
            ("sudo rm x", Some(1)),
            ("chroot /mnt ls", Some(2)),
        ];
        assert_starts(cases);
    }

    #[test]
    fn scripts_and_opaque() {
        assert_eq!(script("su -c ls root"), Some("ls".into()));
        assert_eq!(unwrap(&args("sudo -l")), Unwrap::Itself);
    }

    /// Every wrapper these specs mark as granting privilege is in the
    /// privileged limit's own table: the limit reads that table, not this
    /// flag (`gosu`, `su-exec` and `setuidgid` were marked here and
    /// auto-approved there until stop 31).
    #[test]
    fn every_privilege_wrapper_is_in_the_privileged_limit() {
        for line in [
            "sudo ls",
            "sudoedit x",
            "doas ls",
            "pkexec ls",
            "run0 ls",
            "su -c ls root",
            "runuser -u x -- ls",
            "sg docker -c ls",
            "chroot / ls",
            "unshare -r ls",
            "nsenter -t 1 ls",
            "setpriv --reuid 0 ls",
            "su-exec x ls",
            "gosu x ls",
            "setuidgid x ls",
            "s6-setuidgid x ls",
        ] {
            let argv = args(line);
            let marked = match unwrap(&argv) {
                Unwrap::Command { info, .. } | Unwrap::Script { info, .. } => info.privileged,
                _ => false,
            };
            assert!(marked, "{line}: not marked as granting privilege");
            assert!(
                matches!(
                    crate::privileged::check(&argv),
                    Some(crate::privileged::Hit::Yes(_))
                ),
                "{line}: marked as granting privilege, but not in the privileged limit"
            );
        }
    }
}

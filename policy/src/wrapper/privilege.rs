//! Privilege wrappers: programs that run a command as another user or with
//! other ids, root, capabilities or namespaces (`sudo`, `doas`, `su`,
//! `chroot`, `setpriv`, …). Their specs say `privileged`, which the
//! privileged limit reads whatever the command they run.

use super::{NONE, Spec, Unwrap, WrapInfo};
use crate::arg::Arg;

/// `chroot DIR cmd…`: runs the command under another root; needs privilege.
const CHROOT: Spec = Spec {
    long_val: &["--userspec", "--groups"],
    positional: 1,
    privileged: true, // runs the command as another user or with other privileges
    ..NONE
};

/// `unshare [opts] cmd…`: runs the command in new namespaces; a user namespace makes it root there.
const UNSHARE: Spec = Spec {
    short_val: b"S",
    long_val: &["--setuid", "--setgid", "--wd", "--root"],
    privileged: true, // runs the command as another user or with other privileges
    ..NONE
};

/// `nsenter -t PID cmd…`: runs the command in another process's namespaces; needs privilege.
const NSENTER: Spec = Spec {
    short_val: b"tSGwr",
    long_val: &["--target", "--setuid", "--setgid"],
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
    long_val: &[
        "--reuid",
        "--regid",
        "--groups",
        "--inh-caps",
        "--bounding-set",
    ],
    privileged: true, // runs the command as another user or with other privileges
    ..NONE
};

/// `sudo [opts] cmd…`: runs the command as another user, root by default.
const SUDO: Spec = Spec {
    short_val: b"ughpCDrtTUR",
    long_val: &[
        "--user",
        "--group",
        "--host",
        "--prompt",
        "--close-from",
        "--chdir",
        "--role",
        "--type",
        "--command-timeout",
        "--other-user",
        "--chroot",
    ],
    itself_short: b"lvkKVe", // list, validate, forget, version, edit: no command follows
    itself_long: &[
        "--list",
        "--validate",
        "--reset-timestamp",
        "--remove-timestamp",
        "--version",
        "--edit",
    ],
    privileged: true, // runs the command as another user or with other privileges
    ..NONE
};

/// `doas [opts] cmd…`: OpenBSD's sudo.
const DOAS: Spec = Spec {
    short_val: b"uC",
    itself_short: b"L", // forgets the credentials: no command follows
    privileged: true,   // runs the command as another user or with other privileges
    ..NONE
};

/// `pkexec cmd…`: polkit runs the command as another user.
const PKEXEC: Spec = Spec {
    long_val: &["--user"],
    privileged: true, // runs the command as another user or with other privileges
    ..NONE
};

/// `run0 [opts] cmd…`: systemd's sudo.
const RUN0: Spec = Spec {
    short_val: b"ugD",
    long_val: &[
        "--user",
        "--group",
        "--chdir",
        "--setenv",
        "--unit",
        "--property",
        "--description",
        "--slice",
        "--nice",
        "--background",
        "--machine",
    ],
    privileged: true, // runs the command as another user or with other privileges
    ..NONE
};

/// `sudoedit FILE`: edits a file with privilege.
const SUDOEDIT: Spec = Spec {
    privileged: true, // runs the command as another user or with other privileges
    ..NONE
};

pub(super) fn spec(name: &str) -> Option<Spec> {
    Some(match name {
        "chroot" => CHROOT,
        "unshare" => UNSHARE,
        "nsenter" => NSENTER,
        "su-exec" | "gosu" | "setuidgid" => SU_EXEC,
        "setpriv" => SETPRIV,
        "sudo" => SUDO,
        "doas" => DOAS,
        "pkexec" => PKEXEC,
        "run0" => RUN0,
        "sudoedit" => SUDOEDIT,
        _ => return None,
    })
}

pub(super) fn unwrap_su(argv: &[Arg], runuser: bool) -> Unwrap {
    let info = WrapInfo {
        privileged: true,
        ..WrapInfo::default()
    };
    let mut i = 1;
    while i < argv.len() {
        let a = &argv[i];
        let t = a.text.as_str();
        if a.dynamic {
            i += 1;
            continue;
        }
        if t == "-c" || t == "--command" || t == "--session-command" {
            return match argv.get(i + 1) {
                Some(s) => Unwrap::Script {
                    script: s.clone(),
                    new_process: true,
                    info,
                },
                None => Unwrap::Itself,
            };
        }
        if let Some(v) = t
            .strip_prefix("--command=")
            .or_else(|| t.strip_prefix("--session-command="))
        {
            return Unwrap::Script {
                script: Arg {
                    text: v.to_string(),
                    ..a.clone()
                },
                new_process: true,
                info,
            };
        }
        if runuser && (t == "-u" || t == "--user") {
            // `runuser -u user [--] cmd…`
            let mut j = i + 2;
            if argv.get(j).is_some_and(|x| x.is("--")) {
                j += 1;
            }
            return if j < argv.len() {
                Unwrap::Command { start: j, info }
            } else {
                Unwrap::Itself
            };
        }
        if matches!(
            t,
            "-s" | "--shell"
                | "-g"
                | "--group"
                | "-G"
                | "--supp-group"
                | "-w"
                | "--whitelist-environment"
        ) {
            i += 2;
            continue;
        }
        i += 1;
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
}

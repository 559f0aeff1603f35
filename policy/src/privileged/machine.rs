//! Administering the machine: its services, kernel modules and settings,
//! mounts and storage, firewall and network interfaces, users and
//! passwords, clock and host name, the system bus, setuid bits and file
//! capabilities, and the user's scheduled jobs.
//!
//! These commands act on the machine that every berth and the person share,
//! not on the project, and nearly all of them work only with privilege: an
//! agent that runs one is asking for privilege, which is the limit's class
//! (POLICY.md, point 11). A setuid bit or a file capability is privilege
//! gained later, by whoever runs the file. What only reads (`systemctl
//! status`, `ip addr`, `iptables -L`, `sysctl -a`, `mount` alone, `date
//! +%s`) stays ordinary: each program's reading forms are listed, and what
//! is not known to read is held (positive knowledge, point 2).

use super::Hit;
use crate::arg::Arg;

/// The programs this module reads, for the limit's by-name index.
pub(super) const ADMIN: &[&str] = &[
    "systemctl",
    "service",
    "rc-service",
    "rc-update",
    "update-rc.d",
    "chkconfig",
    "sv",
    "initctl",
    "launchctl",
    "init",
    "insmod",
    "rmmod",
    "modprobe",
    "kexec",
    "sysctl",
    "mount",
    "umount",
    "pivot_root",  // moves the root file system
    "switch_root", // the same, at boot
    "swapon",
    "swapoff",
    "iptables",
    "ip6tables",
    "iptables-legacy",
    "iptables-nft",
    "iptables-restore",
    "ip6tables-restore",
    "ebtables",
    "arptables",
    "nft",
    "ufw",
    "firewall-cmd",
    "ip",
    "ifconfig",
    "route",
    "tc",
    "brctl",
    "nmcli",
    "passwd",
    "chpasswd",
    "usermod",
    "useradd",
    "userdel",
    "groupadd",
    "groupdel",
    "groupmod",
    "gpasswd",
    "adduser",
    "deluser",
    "addgroup",
    "delgroup",
    "chsh",
    "chfn",
    "chage",
    "vipw",
    "vigr",
    "visudo",
    "newusers",
    "date",
    "hwclock",
    "timedatectl",
    "hostnamectl",
    "hostname",
    "localectl",
    "chmod",
    "install",
    "setcap",
    "crontab",
    "machinectl",
    "kill",
    "killall5",
    "dmsetup",
    "cryptsetup",
    "mdadm",
    "lvcreate",
    "lvremove",
    "lvresize",
    "lvextend",
    "vgcreate",
    "vgremove",
    "pvcreate",
    "pvremove",
    "zpool",
    "zfs",
    "bpftrace",
    "bpftool",
    "dbus-send",
    "busctl",
    "gdbus",
];

/// The verdict for one of [`ADMIN`]'s programs (`None` for its reading forms).
pub(super) fn administers(name: &str, inv: &[Arg]) -> Option<Hit> {
    let args = &inv[1..];
    // Every word static and known: a dynamic word stands wherever this
    // module would compare, so it may be the writing form.
    if args.iter().any(|a| a.dynamic) && !matches!(name, "kill" | "chmod" | "install" | "date") {
        return Some(Hit::Maybe(format!(
            "a dynamic word where `{name}`'s administering form would be read"
        )));
    }
    let words: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
    let operands: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| !w.starts_with('-'))
        .collect();
    let first = operands.first().copied().unwrap_or("");
    let has = |opts: &[&str]| {
        words.iter().any(|w| {
            opts.iter().any(|o| {
                w.strip_prefix(o)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('='))
            })
        })
    };
    let yes = |what: &str| Some(Hit::Yes(format!("`{name}` {what}")));
    match name {
        // `systemctl status x` reads; `systemctl stop|enable|edit x` and
        // `-H host` (another machine's manager) do not.
        "systemctl" => {
            if has(&["-H", "--host", "-M", "--machine"]) {
                return yes("acts on another machine's system manager");
            }
            (!first.is_empty() && !SYSTEMCTL_READS.contains(&first))
                .then(|| Hit::Yes(format!("`systemctl {first}` changes the machine's services")))
        }
        // `service NAME VERB`; `service --status-all`.
        "service" | "rc-service" | "sv" | "initctl" => {
            let verb = if name == "sv" || name == "initctl" {
                first
            } else {
                operands.get(1).copied().unwrap_or("")
            };
            (!has(&["--status-all", "-l", "--list"])
                && !operands.is_empty()
                && !matches!(verb, "status" | "list" | "show-config" | "version"))
            .then(|| Hit::Yes(format!("`{name}` changes the machine's services")))
        }
        "launchctl" => (!matches!(first, "list" | "print" | "version" | "help" | "blame" | ""))
            .then(|| Hit::Yes(format!("`launchctl {first}` changes the machine's services"))),
        "rc-update" | "update-rc.d" | "chkconfig" => (!(operands.is_empty()
            || matches!(first, "show")
            || has(&["--list"])))
        .then(|| Hit::Yes(format!("`{name}` changes which services start at boot"))),
        // `init 0`, `init 6`, `init s`: the runlevel.
        "init" => (operands.len() == 1 && first.len() == 1)
            .then(|| Hit::Yes(format!("`init {first}` changes the machine's power state or runlevel"))),
        "insmod" | "rmmod" | "kexec" => yes("changes the running kernel"),
        "modprobe" => (!has(&[
            "-n",
            "--dry-run",
            "-c",
            "--showconfig",
            "--show-depends",
            "-D",
            "-R",
            "--resolve-alias",
            "-V",
            "--version",
        ]))
        .then(|| Hit::Yes("`modprobe` changes the running kernel".into())),
        // `sysctl k=v` sets without `-w` too (procps reads `=` as a write).
        "sysctl" => (has(&["-w", "--write", "-p", "--load", "--system"])
            || operands.iter().any(|o| o.contains('=')))
        .then(|| Hit::Yes("`sysctl` changes the kernel's settings".into())),
        // `mount` alone lists.
        "mount" => (!operands.is_empty() || has(&["-a", "--all", "-o", "--bind", "-B", "--move"]))
            .then(|| Hit::Yes("`mount` changes the machine's mounts".into())),
        "umount" | "pivot_root" | "switch_root" => yes("changes the machine's mounts"),
        "swapon" | "swapoff" => (!has(&["-s", "--summary", "--show", "-h", "--help"]))
            .then(|| Hit::Yes(format!("`{name}` changes the machine's swap"))),
        "iptables" | "ip6tables" | "iptables-legacy" | "iptables-nft" | "ebtables"
        | "arptables" => {
            let reads = words.iter().all(|w| {
                !w.starts_with('-')
                    || matches!(
                        *w,
                        "-L" | "--list" | "-S" | "--list-rules" | "-n" | "--numeric" | "-v"
                            | "--verbose" | "-x" | "--exact" | "--line-numbers" | "-t" | "--table"
                            | "-C" | "--check" | "-w" | "--wait"
                    )
                    || w.starts_with("-L")
                        && w[1..].chars().all(|c| matches!(c, 'L' | 'n' | 'v' | 'x'))
            });
            (!reads).then(|| Hit::Yes(format!("`{name}` changes the machine's firewall")))
        }
        "iptables-restore" | "ip6tables-restore" => yes("changes the machine's firewall"),
        "nft" => (!matches!(first, "list" | "describe" | "monitor") && !has(&["-c", "--check"]))
            .then(|| Hit::Yes("`nft` changes the machine's firewall".into())),
        "ufw" => (!matches!(first, "status" | "show" | "version" | "app"))
            .then(|| Hit::Yes("`ufw` changes the machine's firewall".into())),
        "firewall-cmd" => (!words.iter().all(|w| {
            w.starts_with("--list")
                || w.starts_with("--get")
                || w.starts_with("--query")
                || w.starts_with("--info")
                || w.starts_with("--zone")
                || matches!(*w, "--state" | "--permanent")
        }))
        .then(|| Hit::Yes("`firewall-cmd` changes the machine's firewall".into())),
        // `ip addr`, `ip r s`, `ip -j link show`: an object and a reading
        // verb, which ip takes by any prefix. `ip netns exec` runs a command
        // in another network namespace.
        "ip" => {
            let verb = operands.get(1).copied().unwrap_or("");
            // `ip link s` is `ip link set` (link's verbs put `set` first);
            // `ip a s`, `ip r s` are show.
            let set_first = first.starts_with('l') && "set".starts_with(verb) && !verb.is_empty();
            let reads = !set_first
                && (verb.is_empty()
                    || ["show", "list", "lst", "get", "help"]
                        .iter()
                        .any(|r| r.starts_with(verb))
                    || verb == "ls");
            (!reads).then(|| {
                Hit::Yes(format!(
                    "`ip {first} {verb}` changes the machine's network configuration"
                ))
            })
        }
        "ifconfig" => (operands.len() > 1)
            .then(|| Hit::Yes("`ifconfig` changes a network interface".into())),
        "route" => (matches!(first, "add" | "del" | "delete" | "flush" | "change"))
            .then(|| Hit::Yes("`route` changes the machine's routes".into())),
        "tc" | "brctl" | "nmcli" => {
            let writes = operands.iter().any(|o| {
                matches!(
                    *o,
                    "add" | "del" | "delete" | "change" | "replace" | "addbr" | "delbr" | "addif"
                        | "delif" | "up" | "down" | "modify" | "connect" | "disconnect" | "on"
                        | "off" | "reload" | "set"
                )
            });
            writes.then(|| Hit::Yes(format!("`{name}` changes the machine's network configuration")))
        }
        // `passwd -S` and `chage -l` read an account's state.
        "passwd" => (!has(&["-S", "--status"]))
            .then(|| Hit::Yes("`passwd` changes an account's password".into())),
        "chage" => (!has(&["-l", "--list"]))
            .then(|| Hit::Yes("`chage` changes an account's password ageing".into())),
        "visudo" => (!has(&["-c", "--check"]))
            .then(|| Hit::Yes("`visudo` changes who may gain privilege".into())),
        "chpasswd" | "usermod" | "useradd" | "userdel" | "groupadd" | "groupdel" | "groupmod"
        | "gpasswd" | "adduser" | "deluser" | "addgroup" | "delgroup" | "chsh" | "chfn"
        | "vipw" | "vigr" | "newusers" => yes("changes the machine's users or groups"),
        // `date -s …`, and `date MMDDhhmm[[CC]YY][.ss]` (an operand of digits).
        // `-s DATE`, also clustered after the flags that take no value
        // (`-us`, `-Rs`).
        "date" => (has(&["-s", "--set"])
            || words.iter().any(|w| {
                w.len() > 2
                    && w.starts_with('-')
                    && !w.starts_with("--")
                    && w[1..].contains('s')
                    && w[1..].chars().take_while(|c| *c != 's').all(|c| matches!(c, 'u' | 'R'))
            })
            || args.iter().any(|a| {
                !a.dynamic
                    && a.text.len() >= 8
                    && a.text.bytes().all(|b| b.is_ascii_digit() || b == b'.')
            }))
        .then(|| Hit::Yes("`date` sets the machine's clock".into())),
        "hwclock" => (has(&[
            "-w",
            "--systohc",
            "-s",
            "--hctosys",
            "--set",
            "-a",
            "--adjust",
            "--systz",
        ]))
        .then(|| Hit::Yes("`hwclock` sets the machine's clock".into())),
        "timedatectl" | "hostnamectl" | "localectl" => (first.starts_with("set-")
            || name == "hostnamectl" && first == "hostname" && operands.len() > 1)
            .then(|| Hit::Yes(format!("`{name} {first}` changes the machine's settings"))),
        // `hostname NAME` and `hostname -F file` set it; `hostname -f` reads.
        "hostname" => (!operands.is_empty() || has(&["-F", "--file", "-b", "--boot"]))
            .then(|| Hit::Yes("`hostname` sets the machine's name".into())),
        "chmod" => match setuid_mode(args) {
            Some(true) => Some(Hit::Yes(
                "`chmod` sets a setuid or setgid bit: the file then runs with its owner's privilege"
                    .into(),
            )),
            Some(false) => None,
            None => Some(Hit::Maybe(
                "`chmod`'s mode is known only at run time: it may set a setuid bit".into(),
            )),
        },
        // `install -m 4755 x /usr/local/bin/x` is chmod's setuid by
        // another name: the mode is `-m MODE`, `-mMODE`, `--mode[=]MODE`.
        "install" => match install_mode(args).map(|m| m.map(|m| setuid_mode(&[m]))) {
            None => None,
            Some(Some(Some(false))) => None,
            Some(Some(Some(true))) => Some(Hit::Yes(
                "`install` sets a setuid or setgid bit: the file then runs with its owner's privilege"
                    .into(),
            )),
            Some(_) => Some(Hit::Maybe(
                "`install`'s mode is known only at run time: it may set a setuid bit".into(),
            )),
        },
        "setcap" => (!has(&["-v", "--verify"])).then(|| {
            Hit::Yes("`setcap` gives a file capabilities: it then runs with privilege".into())
        }),
        // `crontab -r` removes the user's jobs, `-e` edits them (a file or
        // stdin is the opaque stage's: a program to run later).
        "crontab" => words
            .iter()
            .any(|w| w.starts_with('-') && !w.starts_with("--") && (w.contains('r') || w.contains('e')))
            .then(|| Hit::Yes("`crontab` changes the user's scheduled jobs".into())),
        "machinectl" => (matches!(first, "shell" | "login" | "enable" | "disable" | "start"
            | "stop" | "reboot" | "poweroff" | "terminate" | "kill" | "remove" | "import-tar"
            | "import-raw" | "pull-tar" | "pull-raw" | "bind" | "copy-to" | "copy-from"))
        .then(|| Hit::Yes(format!("`machinectl {first}` acts on a machine as root"))),
        // `kill 1`, `kill -9 1`: init (in a container, the container itself).
        "kill" => {
            // Skip the signal given as a value (`kill -s 1 PID`, `-n 1`).
            let mut pids = args.iter().enumerate().filter(|(i, _)| {
                !(*i > 0 && matches!(args[i - 1].text.as_str(), "-s" | "-n" | "--signal"))
            });
            pids.any(|(_, a)| !a.dynamic && a.text == "1")
                .then(|| Hit::Yes("`kill` signals init (process 1)".into()))
        }
        "killall5" => yes("signals every process"),
        "dmsetup" => (!matches!(first, "ls" | "info" | "status" | "table" | "deps" | "version"))
            .then(|| Hit::Yes("`dmsetup` changes the machine's block devices".into())),
        "zpool" | "zfs" => (!matches!(first, "list" | "status" | "iostat" | "get" | "history" | "help" | ""))
            .then(|| Hit::Yes(format!("`{name} {first}` changes the machine's storage"))),
        "cryptsetup" | "mdadm" | "lvcreate" | "lvremove" | "lvresize" | "lvextend"
        | "vgcreate" | "vgremove" | "pvcreate" | "pvremove" => {
            (!has(&["--detail", "-D", "--examine", "-E", "--help", "status", "luksDump"])
                && !matches!(first, "status" | "luksDump" | "isLuks"))
            .then(|| Hit::Yes(format!("`{name}` changes the machine's storage")))
        }
        "bpftrace" => yes("traces the kernel (a program loaded into it)"),
        "bpftool" => (!operands.iter().any(|o| matches!(*o, "show" | "list" | "dump" | "help")) || operands.iter().any(|o| matches!(*o, "load" | "loadall" | "attach" | "pin" | "update")))
            .then(|| Hit::Yes("`bpftool` loads or changes kernel programs".into())),
        // The system bus's services act as root (`PowerOff`, `StartUnit`).
        "dbus-send" => has(&["--system"])
            .then(|| Hit::Yes("`dbus-send --system` calls the system's services".into())),
        "busctl" => (!has(&["--user"])
            && matches!(first, "call" | "set-property" | "emit" | "wait"))
        .then(|| Hit::Yes(format!("`busctl {first}` calls the system's services"))),
        "gdbus" => (has(&["--system", "-y"]) && matches!(first, "call" | "emit"))
            .then(|| Hit::Yes(format!("`gdbus {first}` calls the system's services"))),
        _ => None,
    }
}

/// `systemctl`'s verbs that only read.
const SYSTEMCTL_READS: &[&str] = &[
    "status",
    "show",
    "cat",
    "help",
    "list-units",
    "list-unit-files",
    "list-sockets",
    "list-timers",
    "list-jobs",
    "list-dependencies",
    "list-machines",
    "list-automounts",
    "list-paths",
    "is-active",
    "is-enabled",
    "is-failed",
    "is-system-running",
    "get-default",
    "show-environment",
];

/// `install`'s mode word: `None` when it sets none (the default 0755),
/// `Some(None)` when the mode cannot be read (a dynamic word), else the
/// mode alone as chmod would take it.
fn install_mode(args: &[Arg]) -> Option<Option<Arg>> {
    let mut words = args.iter();
    while let Some(a) = words.next() {
        if a.dynamic && (a.text.starts_with('-') || a.text.is_empty()) {
            return Some(None);
        }
        let t = a.text.as_str();
        if t == "--" {
            return None;
        }
        let long = t
            .starts_with("--")
            .then(|| t.split_once('=').unwrap_or((t, "")));
        let value = if t == "-m" || (t.len() >= 3 && "--mode".starts_with(t)) {
            match words.next() {
                Some(v) if !v.dynamic => v.text.clone(),
                _ => return Some(None),
            }
        } else if let Some((name, v)) = long {
            if name.len() >= 3 && "--mode".starts_with(name) {
                v.to_string()
            } else {
                continue;
            }
        } else if let Some(rest) = t.strip_prefix('-').filter(|r| !r.starts_with('-')) {
            // A cluster ending in `m` takes the next word; `m` inside
            // one takes the rest of the word (`-Dm4755`).
            match rest.find('m') {
                Some(i) if i + 1 == rest.len() => match words.next() {
                    Some(v) if !v.dynamic => v.text.clone(),
                    _ => return Some(None),
                },
                Some(i) => rest[i + 1..].to_string(),
                None => continue,
            }
        } else {
            continue;
        };
        if a.dynamic {
            return Some(None);
        }
        return Some(Some(Arg::lit(&value)));
    }
    None
}

/// Whether chmod's mode sets a setuid or setgid bit: symbolic `u+s`, `+s`,
/// `g=rxs`, or octal with the 4000 or 2000 bit (`4755`, `02755`); `None`
/// when the mode is known only at run time (a variable, `--reference`).
fn setuid_mode(args: &[Arg]) -> Option<bool> {
    // The first word that is not an option is the mode (`--reference`
    // copies another file's mode: unknown, so held).
    let mut words = args
        .iter()
        .filter(|a| !a.text.starts_with("--") || a.text.starts_with("--reference"));
    let Some(mode) = words.find(|a| {
        a.dynamic
            || a.text.starts_with("--reference")
            || !a.text.starts_with('-')
            || a.text.contains(['+', '=', 's'])
    }) else {
        return Some(false);
    };
    if mode.dynamic || mode.text.starts_with("--reference") {
        return None;
    }
    let m = mode.text.trim_start_matches('-');
    if m.bytes().all(|b| b.is_ascii_digit()) {
        // The special bits are the digit before the last three.
        return Some(
            m.len() >= 4
                && m.as_bytes()[m.len() - 4]
                    .checked_sub(b'0')
                    .is_some_and(|d| d & 0b110 != 0),
        );
    }
    // Symbolic clauses: `[ugoa]*[+=][rwxXst]*`, comma-separated; GNU chmod
    // also takes octal after the operator (`=4755`, `+6000`).
    Some(m.split(',').any(|clause| {
        clause.split_once(['+', '=']).is_some_and(|(_, perms)| {
            perms.contains('s')
                || !perms.is_empty()
                    && perms.bytes().all(|b| b.is_ascii_digit())
                    && perms.len() >= 4
                    && perms.as_bytes()[perms.len() - 4]
                        .checked_sub(b'0')
                        .is_some_and(|d| d & 0b110 != 0)
        })
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(s: &str) -> Option<Hit> {
        let argv: Vec<Arg> = s.split_whitespace().map(Arg::lit).collect();
        administers(argv[0].basename(), &argv)
    }

    #[test]
    fn administering_the_machine_is_held() {
        for c in [
            "systemctl stop docker",
            "systemctl --user enable evil.service",
            "systemctl --user edit x",
            "systemctl daemon-reload",
            "systemctl -H host status x",
            "service docker stop",
            "launchctl load x.plist",
            "init 0",
            "init 6",
            "insmod evil.ko",
            "modprobe evil",
            "rmmod ext4",
            "sysctl -w kernel.core_pattern=x",
            "sysctl kernel.core_pattern=|/tmp/x",
            "mount -o remount,rw /",
            "mount /dev/sda1 /mnt",
            "umount /work",
            "swapoff -a",
            "iptables -F",
            "iptables -A INPUT -j DROP",
            "nft flush ruleset",
            "ufw disable",
            "ip link set eth0 down",
            "ip route del default",
            "ip a a 10.0.0.1/24 dev eth0",
            "ip netns exec x sh",
            "ifconfig eth0 down",
            "route add default gw 10.0.0.1",
            "passwd",
            "passwd root",
            "chpasswd",
            "usermod -aG docker agent",
            "useradd evil",
            "groupadd x",
            "visudo",
            "date -s 2020-01-01",
            "date 010112002020",
            "hwclock --systohc",
            "timedatectl set-time 2020-01-01",
            "hostnamectl set-hostname x",
            "hostname evil",
            "chmod u+s ./x",
            "chmod 4755 ./x",
            "chmod 02755 ./x",
            "chmod +s ./bin/tool",
            "chmod -R g+s dir",
            "chmod a=rwxs x",
            "chmod =4755 x",
            "chmod +6000 x",
            "install -m 4755 x /tmp/x",
            "install -m4755 x /tmp/x",
            "install -Dm6755 x /tmp/x",
            "install --mode=u+s x /tmp/x",
            "install --mo u+s x /tmp/x",
            "install -o root -g root -m 2755 x y",
            "date -us 2020-01-01",
            "ip l s eth0 down",
            "ip link se eth0 up",
            "setcap cap_net_raw+ep ./x",
            "crontab -r",
            "crontab -e",
            "machinectl shell root@",
            "kill -9 1",
            "kill -s KILL 1",
            "killall5 -9",
            "dmsetup remove_all",
            "zfs destroy pool/x",
            "bpftrace -e x",
            "dbus-send --system --dest=org.freedesktop.systemd1 /x y.PowerOff",
            "busctl call org.freedesktop.systemd1 /x y PowerOff",
        ] {
            assert!(matches!(hit(c), Some(Hit::Yes(_))), "{c}");
        }
    }

    #[test]
    fn reading_the_machine_is_ordinary() {
        for c in [
            "systemctl status docker",
            "install -m 755 build/x out/x",
            "install -Dm644 a out/b",
            "install x y",
            "install -d out",
            "install --mode=0644 a b",
            "systemctl",
            "systemctl list-units --failed",
            "systemctl --user is-active x",
            "service --status-all",
            "service docker status",
            "launchctl list",
            "modprobe -n x",
            "sysctl -a",
            "sysctl kernel.hostname",
            "mount",
            "swapon --show",
            "iptables -L",
            "iptables -L -n -v",
            "iptables -t nat -S",
            "nft list ruleset",
            "ufw status",
            "ip addr",
            "ip a",
            "ip -j link show",
            "ip r s",
            "ip a s",
            "ip link sh",
            "chmod =755 x",
            "date -u +%s",
            "ip route get 1.1.1.1",
            "ifconfig",
            "ifconfig eth0",
            "route -n",
            "passwd -S",
            "chage -l agent",
            "visudo -c",
            "date +%s",
            "date -u +%Y-%m-%dT%H:%M:%S%Z",
            "date --date @1473305798",
            "date -d yesterday",
            "hwclock --show",
            "timedatectl status",
            "hostnamectl",
            "hostname",
            "hostname -f",
            "chmod 755 x",
            "chmod +x x",
            "chmod -R u+rwX,go-w dir",
            "chmod 0644 x",
            "crontab -l",
            "machinectl list",
            "kill 4821",
            "kill -s 1 4821",
            "kill -1 31337",
            "kill %1",
            "dmsetup ls",
            "zfs list",
            "dbus-send --session --dest=x /x y.z",
            "busctl --user call x /x y z",
            "busctl list",
        ] {
            assert_eq!(hit(c), None, "{c}");
        }
    }
}

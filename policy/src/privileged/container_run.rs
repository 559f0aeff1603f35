//! `docker|podman|nerdctl [container] run [opts] IMAGE cmd…` and
//! `docker compose run [opts] SERVICE cmd…`: the command given to the
//! container runs there, with the container's network and whatever the
//! run binds. The engine's own allow rule still covers running it (an
//! image's command is the project's work: `docker run node:20 npm test`),
//! so it is not unwrapped as a wrapper's command is; but what the limit
//! holds anywhere it holds there too (`docker run alpine git push`,
//! `… sudo id`), and a command berth cannot follow inside (`sh -c '…'`,
//! `node -e`, a wrapper, a dynamic word) is not auto-approved. With
//! `--entrypoint`, or an image whose entrypoint reads the words otherwise,
//! the words are the entrypoint's arguments: judged as a command anyway,
//! which can only hold more.

use super::Hit;
use crate::arg::Arg;

/// `docker run`'s options that take a value (docker 27, podman 5,
/// nerdctl 2; compose run's are among them), long names. An option in
/// neither list makes the command unfound: held.
const VALUE_LONG: &[&str] = &[
    "add-host",
    "annotation",
    "arch",
    "attach",
    "authfile",
    "blkio-weight",
    "blkio-weight-device",
    "cap-add",
    "cap-drop",
    "cgroup-parent",
    "cgroupns",
    "cgroups",
    "cidfile",
    "cpu-period",
    "cpu-quota",
    "cpu-rt-period",
    "cpu-rt-runtime",
    "cpu-shares",
    "cpus",
    "cpuset-cpus",
    "cpuset-mems",
    "detach-keys",
    "device",
    "device-cgroup-rule",
    "device-read-bps",
    "device-read-iops",
    "device-write-bps",
    "device-write-iops",
    "dns",
    "dns-opt",
    "dns-option",
    "dns-search",
    "domainname",
    "entrypoint",
    "env",
    "env-file",
    "expose",
    "gpus",
    "group-add",
    "health-cmd",
    "health-interval",
    "health-retries",
    "health-start-interval",
    "health-start-period",
    "health-timeout",
    "hostname",
    "ip",
    "ip6",
    "ipc",
    "isolation",
    "kernel-memory",
    "label",
    "label-file",
    "link",
    "link-local-ip",
    "log-driver",
    "log-opt",
    "mac-address",
    "memory",
    "memory-reservation",
    "memory-swap",
    "memory-swappiness",
    "mount",
    "name",
    "net",
    "net-alias",
    "network",
    "network-alias",
    "oom-score-adj",
    "os",
    "pid",
    "pids-limit",
    "platform",
    "pod",
    "publish",
    "pull",
    "restart",
    "runtime",
    "security-opt",
    "shm-size",
    "stop-signal",
    "stop-timeout",
    "storage-opt",
    "sysctl",
    "tmpfs",
    "ulimit",
    "user",
    "userns",
    "uts",
    "volume",
    "volume-driver",
    "volumes-from",
    "workdir",
];

/// Flags (a boolean may also be written `--rm=true`).
const FLAG_LONG: &[&str] = &[
    "build",
    "detach",
    "disable-content-trust",
    "help",
    "init",
    "interactive",
    "no-deps",
    "no-healthcheck",
    "no-TTY",
    "oom-kill-disable",
    "privileged",
    "publish-all",
    "quiet",
    "quiet-pull",
    "read-only",
    "remove-orphans",
    "replace",
    "rm",
    "rmi",
    "service-ports",
    "sig-proxy",
    "tty",
    "use-aliases",
    "use-api-socket",
];

/// Short options that take a value: `-a -c -e -h -l -m -p -u -v -w`.
const VALUE_SHORT: &[u8] = b"acehlmpuvw";
/// Short flags: `-d -i -t -P -q -T`.
const FLAG_SHORT: &[u8] = b"ditPqT";

/// Compose's own options before `run` (`docker compose -f F run …`).
const COMPOSE_VALUE: &[&str] = &[
    "-f",
    "--file",
    "-p",
    "--project-name",
    "--profile",
    "--env-file",
    "--project-directory",
    "--ansi",
    "--progress",
    "--parallel",
];

/// The command a run gives the container: the words after the image,
/// behind the `--entrypoint` value when one is given; `Ok(None)` for a
/// run without either (the image's own command) or no run, `Err` when
/// the words cannot be read (an unknown option, a dynamic one).
fn given_command(inv: &[Arg]) -> Result<Option<Vec<Arg>>, String> {
    let mut entrypoint: Option<Arg> = None;
    let word = |i: usize| inv.get(i).filter(|a| !a.dynamic).map(|a| a.text.as_str());
    let mut i = 1;
    if word(i) == Some("container") {
        i += 1;
    } else if word(i) == Some("compose") {
        i += 1;
        while let Some(w) = word(i).filter(|w| w.starts_with('-')) {
            i += if COMPOSE_VALUE.contains(&w) { 2 } else { 1 };
        }
    }
    if word(i) != Some("run") {
        return Ok(None);
    }
    i += 1;
    while let Some(a) = inv.get(i) {
        let t = a.text.as_str();
        if a.dynamic && (t.starts_with('-') || t.is_empty()) {
            return Err("a dynamic word among `run`'s options".into());
        }
        if t == "--" {
            i += 1;
            break;
        }
        if let Some(long) = t.strip_prefix("--") {
            let (name, attached) = long
                .split_once('=')
                .map_or((long, false), |(n, _)| (n, true));
            if VALUE_LONG.contains(&name) {
                if name == "entrypoint" {
                    entrypoint = if attached {
                        Some(Arg {
                            text: t.split_once('=').map_or("", |(_, v)| v).to_string(),
                            ..a.clone()
                        })
                    } else {
                        inv.get(i + 1).cloned()
                    };
                }
                i += if attached { 1 } else { 2 };
            } else if FLAG_LONG.contains(&name) {
                i += 1;
            } else {
                return Err(format!("`run` option `--{name}` berth does not know"));
            }
            continue;
        }
        if let Some(cluster) = t.strip_prefix('-').filter(|c| !c.is_empty()) {
            let bytes = cluster.as_bytes();
            let mut step = 1;
            for (k, b) in bytes.iter().enumerate() {
                if FLAG_SHORT.contains(b) {
                    continue;
                }
                if VALUE_SHORT.contains(b) {
                    if k + 1 == bytes.len() {
                        step = 2;
                    }
                    break;
                }
                return Err(format!(
                    "`run` option `-{}` berth does not know",
                    *b as char
                ));
            }
            i += step;
            continue;
        }
        break;
    }
    // `inv[i]` is the image (or service); the command follows it.
    let words = inv.get(i + 1..).unwrap_or(&[]);
    Ok(match entrypoint {
        Some(e) if e.text.is_empty() && !e.dynamic => (!words.is_empty()).then(|| words.to_vec()),
        // An entrypoint given as JSON or with words: not split here.
        Some(e) if e.text.contains([' ', '[']) => Some(vec![Arg::dynamic("")]),
        Some(e) => Some(std::iter::once(e).chain(words.iter().cloned()).collect()),
        None => (!words.is_empty()).then(|| words.to_vec()),
    })
}

/// Programs of the deny templates' class (POLICY.md, point 12): given to a
/// container they act on what the run binds, which the templates cannot
/// compare (`docker run -v $HOME:/h alpine rm -rf /h`), so they are held.
const DESTROYING: &[(&str, &str)] = &[
    ("rm", "removes files, recursively with -r"),
    ("shred", "overwrites files"),
    ("dd", "writes files and devices"),
    ("wipefs", "erases file system signatures"),
    ("blkdiscard", "discards a device's blocks"),
    ("sgdisk", "rewrites partition tables"),
    ("sfdisk", "rewrites partition tables"),
    ("fdisk", "rewrites partition tables"),
    ("parted", "rewrites partition tables"),
    ("mkswap", "formats a device"),
    ("mke2fs", "formats a device"),
    ("chmod", "changes modes, recursively with -R"),
    ("chown", "changes owners, recursively with -R"),
];

/// The limit's reading of a run's command (see the module's comment).
pub(super) fn run_command(name: &str, inv: &[Arg]) -> Option<Hit> {
    // buildah's and ctr's `run` read their words otherwise.
    if !matches!(
        name,
        "docker" | "podman" | "nerdctl" | "docker-compose" | "podman-compose"
    ) {
        return None;
    }
    let cmd = match given_command(inv) {
        Ok(Some(cmd)) => cmd,
        Ok(None) => return None,
        Err(why) => {
            return Some(Hit::Maybe(format!(
                "`{name} run`: {why}, so the command given to the container is not found"
            )));
        }
    };
    let cmd = &cmd[..];
    let first = &cmd[0];
    if first.dynamic {
        return Some(Hit::Maybe(format!(
            "`{name} run` gives the container a command computed at run time"
        )));
    }
    let program = first.basename();
    if let Some(hit) = super::check(cmd) {
        return Some(match hit {
            Hit::Yes(class) => Hit::Yes(format!("`{name} run … {program}`: {class}")),
            Hit::Maybe(m) => Hit::Maybe(m),
        });
    }
    if crate::wrapper::is_wrapper(program) {
        return Some(Hit::Maybe(format!(
            "`{name} run` gives the container `{program}`, which runs a command berth does not follow there"
        )));
    }
    if let Some((_, why)) = DESTROYING.iter().find(|(p, _)| *p == program).or_else(|| {
        program
            .starts_with("mkfs")
            .then_some(&("mkfs", "formats a device"))
    }) {
        return Some(Hit::Maybe(format!(
            "`{name} run` gives the container `{program}`, which {why} in whatever the run binds"
        )));
    }
    crate::program::analyze(cmd).opaque.map(|why| {
        Hit::Maybe(format!(
            "`{name} run` gives the container `{program}`: {why}"
        ))
    })
}

//! Container engines: a push under any spelling (`buildx --push`, an
//! output `type=registry`), and a `run` that gains the host (`--privileged`,
//! a bind of `/` or of an engine's socket).

use super::Hit;
use crate::arg::Arg;

/// Host sources a container must not bind: the host's root, its system
/// directories, and the sockets of container engines (root on the host).
pub(super) const HOST_SOURCES: &[&str] = &[
    "/",
    "/etc",
    "/root",
    "/home",
    "/proc",
    "/sys",
    "/dev",
    "/boot",
    "/run",
    "/var",
    "/var/run",
    "/usr",
    "/lib",
    "/bin",
    "/sbin",
    "/var/lib",
    "/var/lib/docker",
];

/// Engine sockets (a bind of one is root on the host).
pub(super) const ENGINE_SOCKETS: &[&str] = &[
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/run/containerd",
    "/var/run/containerd",
    "/run/podman",
    "/var/run/podman",
    "/run/buildkit",
];

/// `docker build --push`, `buildx build --output type=registry`,
/// `buildx bake --push`, `compose build --push`: an image is published.
/// `docker run --privileged`, `--cap-add`, `--pid=host`, a bind of `/` or
/// an engine socket: the container gains the host.
pub(super) fn container_push_or_privilege(name: &str, inv: &[Arg], pos: &[&Arg]) -> Option<Hit> {
    let head: Vec<&str> = pos.iter().take(3).map(|a| a.text.as_str()).collect();
    let building = head
        .iter()
        .any(|w| matches!(*w, "build" | "bake" | "b" | "builder"))
        || name == "buildah" && head.first().is_some_and(|w| *w == "bud");
    if building && build_pushes(inv) {
        return Some(Hit::Yes(format!(
            "`{name} build --push` publishes an image"
        )));
    }
    let running = matches!(head.first(), Some(&"run" | &"create" | &"exec"))
        || (head.first() == Some(&"container")
            && matches!(head.get(1), Some(&"run" | &"create" | &"exec")))
        || (head.first() == Some(&"compose") && matches!(head.get(1), Some(&"run")));
    if running && let Some(why) = run_gains_host(inv) {
        return Some(Hit::Yes(format!("`{name} run` {why}")));
    }
    if let Some(hit) = super::container_run::run_command(name, inv) {
        return Some(hit);
    }
    engine_wide(name, &head)
}

/// What acts on the whole engine rather than on containers named: the
/// prunes remove every stopped container, unused image, volume or cache
/// of the machine (other berths' and the person's too), and a plugin runs
/// as root inside the engine.
fn engine_wide(name: &str, head: &[&str]) -> Option<Hit> {
    let prunes = matches!(
        head,
        [
            "system" | "container" | "image" | "volume" | "network" | "builder" | "buildx",
            "prune",
            ..
        ]
    );
    if prunes {
        return Some(Hit::Yes(format!(
            "`{name} {} prune` removes what every container of the machine kept, not only this berth's",
            head[0]
        )));
    }
    matches!(
        head,
        ["plugin", "install" | "enable" | "upgrade" | "set", ..]
    )
    .then(|| {
        Hit::Yes(format!(
            "`{name} plugin {}` runs a plugin as root inside the engine",
            head[1]
        ))
    })
}

/// The value of an option at `i` (`--opt v`, `--opt=v`, `-ov`), with the
/// number of words it spans; `None` when `inv[i]` is not `long`/`short`.
pub(super) fn option_value<'a>(
    inv: &'a [Arg],
    i: usize,
    long: &str,
    short: Option<&str>,
) -> Option<(Option<&'a Arg>, Option<String>, usize)> {
    let a = &inv[i];
    let t = a.text.as_str();
    if t == long || short.is_some_and(|s| t == s) {
        return Some((inv.get(i + 1), None, 2));
    }
    if let Some(v) = t.strip_prefix(long).and_then(|r| r.strip_prefix('=')) {
        return Some((None, Some(v.to_string()), 1));
    }
    if let Some(s) = short
        && let Some(v) = t
            .strip_prefix(s)
            .filter(|v| !v.is_empty() && !t.starts_with("--"))
    {
        return Some((None, Some(v.trim_start_matches('=').to_string()), 1));
    }
    None
}

pub(super) fn value_text(v: &(Option<&Arg>, Option<String>, usize)) -> Option<(bool, String)> {
    match v {
        (_, Some(s), _) => Some((false, s.clone())),
        (Some(a), None, _) => Some((a.dynamic, a.text.clone())),
        (None, None, _) => None,
    }
}

/// A build that pushes: `--push`, or an output/`--set` naming a registry.
pub(super) fn build_pushes(inv: &[Arg]) -> bool {
    for (i, a) in inv.iter().enumerate() {
        let t = a.text.as_str();
        if t == "--push" || t == "--push=true" || t == "--push=1" {
            return true;
        }
        for (long, short) in [("--output", Some("-o")), ("--set", None)] {
            if let Some(v) = option_value(inv, i, long, short)
                && let Some((dynamic, text)) = value_text(&v)
            {
                let text = text.to_ascii_lowercase();
                if dynamic || text.contains("registry") || text.contains("push=true") {
                    return true;
                }
            }
        }
    }
    false
}

/// LXD's and Incus's keys that give a system container the host: it runs
/// as root of the host, or with raw LXC settings or id maps.
const SYSTEM_CONTAINER_KEYS: &[&str] = &[
    "security.privileged", // the container's root is the host's root
    "security.nesting",    // nested containers, with the host's /proc and /sys
    "security.idmap.isolated",
    "raw.lxc",   // raw LXC settings: mounts, capabilities, hooks that run
    "raw.idmap", // maps host ids into the container
    "raw.apparmor",
    "raw.seccomp",
];

/// `lxc|incus config set C security.privileged true`, `-c raw.lxc=…` at
/// `launch`, or a `disk` device whose `source=` is the host's root or a
/// system path: the container gains the host.
pub(super) fn system_container_gains_host(name: &str, inv: &[Arg]) -> Option<Hit> {
    // `config get|show|unset|list`, `info`: reading or removing a key.
    if inv[1..].iter().take(3).any(|a| {
        matches!(
            a.text.as_str(),
            "get" | "show" | "unset" | "info" | "list" | "ls"
        )
    }) {
        return None;
    }
    for a in &inv[1..] {
        if a.dynamic {
            continue;
        }
        let t = a.text.as_str();
        if let Some(key) = SYSTEM_CONTAINER_KEYS
            .iter()
            .find(|k| t == **k || t.starts_with(&format!("{k}=")) || t.contains(&format!("={k}")))
        {
            return Some(Hit::Yes(format!(
                "`{name}` sets `{key}`: the container gains the host"
            )));
        }
        if let Some(src) = t.strip_prefix("source=")
            && src.starts_with('/')
        {
            let norm = crate::scope::normalize("/", src);
            if HOST_SOURCES.contains(&norm.as_str())
                || ENGINE_SOCKETS.iter().any(|s| norm.starts_with(s))
            {
                return Some(Hit::Yes(format!(
                    "`{name}` gives a container the host's `{norm}`"
                )));
            }
        }
    }
    None
}

/// Why a `run` gains the host, if it does.
pub(super) fn run_gains_host(inv: &[Arg]) -> Option<String> {
    for (i, a) in inv.iter().enumerate() {
        let t = a.text.as_str();
        if t == "--privileged"
            || t.strip_prefix("--privileged=")
                .is_some_and(|v| !matches!(v, "false" | "False" | "FALSE" | "0" | "f" | "F"))
        {
            return Some("with `--privileged` gains the host".into());
        }
        for ns in [
            "--pid",
            "--userns",
            "--ipc",
            "--uts",
            "--cgroupns",
            "--net",
            "--network",
        ] {
            if let Some(v) = option_value(inv, i, ns, None)
                && let Some((dynamic, text)) = value_text(&v)
                && (dynamic || text == "host")
            {
                return Some(format!("with `{ns}=host` shares the host's namespace"));
            }
        }
        for (long, why) in [
            ("--cap-add", "adds capabilities"),
            ("--device", "gives the container a host device"),
            ("--device-cgroup-rule", "gives the container host devices"),
        ] {
            if option_value(inv, i, long, None).is_some() {
                return Some(format!("`{long}` {why}"));
            }
        }
        if let Some(v) = option_value(inv, i, "--security-opt", None)
            && let Some((dynamic, text)) = value_text(&v)
            && (dynamic || text.contains("unconfined") || text.contains("disable"))
        {
            return Some("with a disabled security profile gains the host".into());
        }
        let bind = option_value(inv, i, "--volume", Some("-v"))
            .and_then(|v| value_text(&v))
            .map(|(d, text)| (d, text.split(':').next().unwrap_or("").to_string()))
            .or_else(|| {
                option_value(inv, i, "--mount", None)
                    .and_then(|v| value_text(&v))
                    .map(|(d, text)| {
                        let src = text
                            .split(',')
                            .find_map(|kv| {
                                kv.strip_prefix("source=")
                                    .or_else(|| kv.strip_prefix("src="))
                            })
                            .unwrap_or("")
                            .to_string();
                        (d, src)
                    })
            });
        // A source computed at run time (`-v "$PWD":/src`) is not judged
        // here: only a static bind of the host's root or system paths is.
        if let Some((false, src)) = bind
            && src.starts_with('/')
        {
            let norm = crate::scope::normalize("/", &src);
            if HOST_SOURCES.contains(&norm.as_str())
                || ENGINE_SOCKETS.iter().any(|s| norm.starts_with(s))
            {
                return Some(format!("binds the host's `{norm}`"));
            }
        }
    }
    None
}

//! The external-effect / privileged limit: commands whose effect leaves the
//! berth (a push, a PR, a publish, a deploy) or that gain privilege. They
//! always need approval — in every mode, whatever the autonomy origin,
//! whatever allow rules say (ADR 0102 via ADR 0167).
//!
//! Subcommands are found as a tool would parse them: options before the
//! subcommand are skipped (a known value-taking option with its value), and
//! when an unknown option might have taken the next word as its value, the
//! word after it is tried too (fail closed). A dynamic word where a
//! subcommand would be makes the segment opaque.

use crate::arg::Arg;
use by_name::Fixed;

mod by_name;

/// The limit's verdict for one invocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hit {
    /// An external effect or privilege: the class, for people.
    Yes(String),
    /// A dynamic word where a subcommand would be compared.
    Maybe(String),
}

/// Programs that run a command with another user's privilege (or enter
/// another namespace as root).
const PRIVILEGE: &[&str] = &[
    "sudo",
    "sudoedit",
    "sudo-rs",
    "su-rs",
    "doas",
    "su",
    "pkexec",
    "runuser",
    "run0",
    "systemd-run", // runs a command as a transient unit of the system manager
    "please",      // a sudo alternative
    "dzdo",        // Centrify's sudo
    "pbrun",       // PowerBroker's sudo
    "sg",          // runs a command with another group (`sg docker` is root)
    "newgrp",      // a shell with another group
    "nsenter",     // enters another process's namespaces
    "setpriv",     // runs a command with other uids, gids or capabilities
    "capsh",       // the same, through libcap
    "chroot",      // runs a command under another root (with CAP_SYS_CHROOT)
    "unshare",     // runs a command as root of a new user namespace (`-r`)
];

/// Programs that open a raw network connection (or listen) from a shell.
const RAW_NETWORK: &[&str] = &[
    "nc",
    "ncat",
    "netcat",
    "nc.openbsd",
    "nc.traditional",
    "socat",
    "telnet",
    "cryptcat",
    "pwncat",
    "websocat",
    "gnutls-cli",
];

/// Commands that change the machine itself.
const MACHINE: &[&str] = &["shutdown", "reboot", "poweroff", "halt", "telinit"];

/// `(tool, verb sequence)`: the first positionals after the tool.
const VERBS: &[(&str, &[&str])] = &[
    ("git", &["push"]),
    ("git", &["send-pack"]),
    ("git", &["subtree", "push"]),
    ("git", &["lfs", "push"]),
    ("git", &["svn", "dcommit"]),
    ("git", &["p4", "submit"]),
    ("git", &["send-email"]),
    ("git", &["http-push"]),   // pushes over WebDAV
    ("git", &["remote-http"]), // transport helpers: commands on stdin push
    ("git", &["remote-https"]),
    ("git", &["remote-ftp"]),
    ("git", &["remote-ftps"]),
    ("git", &["remote-ext"]),
    ("git", &["remote-fd"]),
    ("hub", &["push"]),
    ("hub", &["pull-request"]),
    ("hub", &["release", "create"]),
    ("hub", &["release", "edit"]),
    ("hub", &["merge"]),
    ("gh", &["pr", "create"]),
    ("gh", &["pr", "new"]),
    ("gh", &["pr", "merge"]),
    ("gh", &["release", "create"]),
    ("gh", &["release", "upload"]),
    ("gh", &["repo", "create"]),
    ("gh", &["repo", "delete"]),
    ("gh", &["workflow", "run"]),
    // Every other gh command that writes to the hosted forge is `gh api`
    // with a writing method under another name.
    ("gh", &["pr", "close"]),
    ("gh", &["pr", "comment"]),
    ("gh", &["pr", "edit"]),
    ("gh", &["pr", "ready"]),
    ("gh", &["pr", "reopen"]),
    ("gh", &["pr", "review"]),
    ("gh", &["pr", "lock"]),
    ("gh", &["pr", "unlock"]),
    ("gh", &["pr", "update-branch"]),
    ("gh", &["issue", "create"]),
    ("gh", &["issue", "new"]),
    ("gh", &["issue", "close"]),
    ("gh", &["issue", "comment"]),
    ("gh", &["issue", "delete"]),
    ("gh", &["issue", "edit"]),
    ("gh", &["issue", "reopen"]),
    ("gh", &["issue", "transfer"]),
    ("gh", &["issue", "lock"]),
    ("gh", &["issue", "unlock"]),
    ("gh", &["issue", "pin"]),
    ("gh", &["issue", "unpin"]),
    ("gh", &["issue", "develop"]),
    ("gh", &["release", "delete"]),
    ("gh", &["release", "delete-asset"]),
    ("gh", &["release", "edit"]),
    ("gh", &["repo", "edit"]),
    ("gh", &["repo", "archive"]),
    ("gh", &["repo", "unarchive"]),
    ("gh", &["repo", "rename"]),
    ("gh", &["repo", "fork"]),
    ("gh", &["repo", "deploy-key", "add"]),
    ("gh", &["repo", "deploy-key", "delete"]),
    ("gh", &["secret", "set"]), // CI secrets: what the forge's workflows run with
    ("gh", &["secret", "delete"]),
    ("gh", &["secret", "remove"]),
    ("gh", &["variable", "set"]),
    ("gh", &["variable", "delete"]),
    ("gh", &["label", "create"]),
    ("gh", &["label", "edit"]),
    ("gh", &["label", "delete"]),
    ("gh", &["label", "clone"]),
    ("gh", &["workflow", "enable"]),
    ("gh", &["workflow", "disable"]),
    ("gh", &["run", "cancel"]),
    ("gh", &["run", "rerun"]),
    ("gh", &["run", "delete"]),
    ("gh", &["cache", "delete"]),
    ("gh", &["gist", "create"]),
    ("gh", &["gist", "new"]),
    ("gh", &["gist", "edit"]),
    ("gh", &["gist", "delete"]),
    ("gh", &["gist", "rename"]),
    ("gh", &["ssh-key", "add"]),
    ("gh", &["ssh-key", "delete"]),
    ("gh", &["gpg-key", "add"]),
    ("gh", &["gpg-key", "delete"]),
    ("glab", &["mr", "create"]),
    ("glab", &["mr", "merge"]),
    ("glab", &["release", "create"]),
    ("glab", &["mr", "approve"]),
    ("npm", &["publish"]),
    ("npm", &["unpublish"]),
    ("npm", &["deprecate"]),
    ("pnpm", &["publish"]),
    ("yarn", &["publish"]),
    ("yarn", &["npm", "publish"]),
    ("bun", &["publish"]),
    ("cargo", &["publish"]),
    ("cargo", &["yank"]),
    ("twine", &["upload"]),
    ("poetry", &["publish"]),
    ("pdm", &["publish"]),
    ("maturin", &["publish"]),
    ("maturin", &["upload"]),
    ("lerna", &["publish"]),
    ("changeset", &["publish"]),
    ("semantic-release", &[]),
    ("jsr", &["publish"]),
    ("deno", &["publish"]),
    ("mix", &["hex.publish"]),
    ("conan", &["upload"]),
    ("nuget", &["push"]),
    ("rake", &["release"]),
    ("tea", &["pulls", "create"]),
    ("tea", &["pulls", "merge"]),
    ("tea", &["pr", "create"]),
    ("tea", &["pr", "merge"]),
    ("tea", &["releases", "create"]),
    ("az", &["repos", "pr", "create"]),
    ("netlify-cli", &["deploy"]),
    ("uv", &["publish"]),
    ("hatch", &["publish"]),
    ("flit", &["publish"]),
    ("gem", &["push"]),
    ("mvn", &["deploy"]),
    ("gradle", &["publish"]),
    ("dotnet", &["nuget", "push"]),
    ("docker", &["push"]),
    ("docker", &["image", "push"]),
    ("docker", &["manifest", "push"]),
    ("docker", &["compose", "push"]),
    ("docker", &["buildx", "imagetools", "create"]),
    ("docker-compose", &["push"]),
    ("podman", &["push"]),
    ("podman", &["image", "push"]),
    ("podman", &["manifest", "push"]),
    ("podman", &["compose", "push"]),
    ("podman-compose", &["push"]),
    ("nerdctl", &["push"]),
    ("nerdctl", &["image", "push"]),
    ("nerdctl", &["compose", "push"]),
    ("buildah", &["push"]),
    ("buildah", &["manifest", "push"]),
    ("skopeo", &["copy"]),
    ("skopeo", &["sync"]),
    ("crane", &["push"]),
    ("crane", &["copy"]),
    ("crane", &["append"]),
    ("crane", &["mutate"]),
    ("crane", &["tag"]),
    ("ko", &["build"]),
    ("ko", &["publish"]),
    ("ko", &["resolve"]),
    ("ko", &["apply"]),
    ("oras", &["push"]),
    ("helm", &["push"]),
    ("kubectl", &["apply"]),
    ("kubectl", &["create"]),
    ("kubectl", &["delete"]),
    ("kubectl", &["patch"]),
    ("kubectl", &["replace"]),
    ("kubectl", &["scale"]),
    ("kubectl", &["rollout"]),
    ("kubectl", &["edit"]),
    ("kubectl", &["set"]),
    ("helm", &["install"]),
    ("helm", &["upgrade"]),
    ("helm", &["uninstall"]),
    ("helm", &["delete"]),
    ("helm", &["rollback"]),
    ("terraform", &["apply"]),
    ("terraform", &["destroy"]),
    ("terraform", &["import"]),
    ("tofu", &["apply"]),
    ("tofu", &["destroy"]),
    ("tofu", &["import"]),
    ("terragrunt", &["apply"]),
    ("terragrunt", &["destroy"]),
    ("terragrunt", &["import"]),
    ("terragrunt", &["apply-all"]),
    ("terragrunt", &["destroy-all"]),
    ("terragrunt", &["run-all", "apply"]),
    ("terragrunt", &["run-all", "destroy"]),
    ("terragrunt", &["run-all", "import"]),
    ("terragrunt", &["run", "apply"]),
    ("terragrunt", &["run", "destroy"]),
    ("cdk", &["destroy"]),
    ("cdktf", &["destroy"]),
    ("sam", &["sync"]),
    ("sam", &["delete"]),
    ("sam", &["publish"]),
    ("amplify", &["publish"]),
    ("amplify", &["push"]),
    ("railway", &["up"]),
    ("sst", &["remove"]),
    ("gcloud", &["builds", "submit"]),
    ("az", &["webapp", "up"]),
    ("az", &["containerapp", "up"]),
    ("heroku", &["container:push"]),
    ("heroku", &["container:release"]),
    ("heroku", &["releases:rollback"]),
    ("surge", &[]),
    ("pulumi", &["up"]),
    ("pulumi", &["update"]),
    ("pulumi", &["destroy"]),
    ("vercel", &["deploy"]),
    ("netlify", &["deploy"]),
    ("fly", &["deploy"]),
    ("flyctl", &["deploy"]),
    ("firebase", &["deploy"]),
    ("serverless", &["deploy"]),
    ("sls", &["deploy"]),
    ("wrangler", &["deploy"]),
    ("wrangler", &["publish"]),
    ("wrangler", &["pages", "deploy"]),
    ("wrangler", &["pages", "publish"]),
    ("wrangler", &["versions", "deploy"]),
    ("wrangler", &["versions", "upload"]),
    ("wrangler", &["rollback"]),
    ("vercel", &["redeploy"]),
    ("vercel", &["promote"]),
    ("vercel", &["rollback"]),
    ("vc", &["deploy"]),
    ("vc", &["redeploy"]),
    ("vc", &["promote"]),
    ("vc", &["rollback"]),
    ("ntl", &["deploy"]),
    ("openssl", &["s_client"]), // a raw TLS connection
    ("openssl", &["s_server"]),
    ("systemctl", &["poweroff"]),
    ("systemctl", &["reboot"]),
    ("systemctl", &["halt"]),
    ("systemctl", &["kexec"]),
    ("init", &["0"]),
    ("init", &["6"]),
];

/// Global options that take a value, per tool (skipped with their value).
fn value_options(tool: &str) -> &'static [&'static str] {
    match tool {
        "kubectl" => &[
            "-n",
            "--namespace",
            "--context",
            "--kubeconfig",
            "--cluster",
            "--user",
            "-s",
            "--server",
            "--token",
            "--as",
            "-l",
            "-f",
            "--filename",
            "-o",
            "--output",
        ],
        "helm" => &[
            "-n",
            "--namespace",
            "--kube-context",
            "--kubeconfig",
            "--registry-config",
            "--repository-config",
        ],
        "docker" | "podman" => &[
            "-H",
            "--host",
            "--context",
            "-c",
            "--config",
            "-l",
            "--log-level",
        ],
        "npm" | "pnpm" | "yarn" | "bun" => &[
            "--prefix",
            "-w",
            "--workspace",
            "--registry",
            "--userconfig",
            "-C",
            "--dir",
            "--cwd",
            "--filter",
            "--otp",
            "--tag",
            "--access",
        ],
        "gh" => &["-R", "--repo", "--hostname"],
        "glab" => &["-R", "--repo"],
        "cargo" => &[
            "--manifest-path",
            "-Z",
            "--config",
            "--registry",
            "--index",
            "--token",
            "-p",
            "--package",
            "--color",
            "-C",
        ],
        "pulumi" => &["-s", "--stack", "-C", "--cwd"],
        "terraform" | "tofu" => &[],
        "mvn" => &["-f", "--file", "-P", "-pl", "-s", "--settings", "-D"],
        "gradle" => &["-p", "--project-dir", "-P", "-D"],
        _ => &[],
    }
}

/// The positional words a tool's subcommand is read from. `uncertain`:
/// an unknown option before the first positional might have taken it as a
/// value.
fn positionals(inv: &[Arg]) -> (Vec<&Arg>, bool) {
    let tool = inv[0].basename();
    let vals = value_options(tool);
    let mut out = Vec::new();
    let mut uncertain = false;
    let mut i = 1;
    while i < inv.len() {
        let a = &inv[i];
        if !a.dynamic {
            let t = a.text.as_str();
            if t == "--" {
                break;
            }
            if t.starts_with('+') && out.is_empty() && tool == "cargo" {
                i += 1;
                continue;
            }
            if t.starts_with('-') && t.len() > 1 {
                let name = t.split('=').next().unwrap_or(t);
                if vals.contains(&name) && !t.contains('=') {
                    i += 2;
                    continue;
                }
                if out.is_empty()
                    && !t.contains('=')
                    && !vals.contains(&name)
                    && t.starts_with("--")
                {
                    uncertain = true;
                }
                i += 1;
                continue;
            }
        }
        out.push(a);
        i += 1;
    }
    (out, uncertain)
}

/// npm commands that may be abbreviated to any prefix of at least this
/// length (npm reads unambiguous prefixes: `npm pub` is `npm publish`).
const NPM_ABBREVIATED: &[(&str, usize)] = &[
    ("publish", 2),   // `pu…`: no other npm command starts so
    ("unpublish", 3), // `unp…`: `uninstall`, `unstar` start `uni`, `uns`
    ("deprecate", 3), // `dep…`: `dedupe` starts `ded`
];

/// Cloud and hosting CLIs: a `deploy` verb anywhere among their
/// positionals deploys (`gcloud run deploy`, `aws cloudformation deploy`,
/// `cdk deploy`, `sam deploy`), unless a reading verb says otherwise.
const CLOUD_CLIS: &[&str] = &[
    "gcloud",
    "aws",
    "az",
    "sam",
    "cdk",
    "cdktf",
    "eb",
    "amplify",
    "doctl",
    "fly",
    "flyctl",
    "railway",
    "sst",
    "serverless",
    "sls",
    "firebase",
    "netlify",
    "ntl",
    "vercel",
    "vc",
    "wrangler",
    "copilot",
    "kamal",
    "heroku",
    "render",
    "pulumi",
    "cf",
    "caprover",
    "dokku",
    "okteto",
    "zappa",
    "chalice",
    "ibmcloud",
    "oci",
    "scw",
    "linode-cli",
    "hcloud",
    "terragrunt",
];

/// Verbs that only read, next to which `deploy` names a resource.
const READ_VERBS: &[&str] = &[
    "list", "ls", "describe", "get", "show", "view", "status", "logs", "help", "history", "--help",
    "-h",
];

/// The programs `check` reads by name past the tables (its final `match`).
const READ_BY_NAME: &[&str] = &[
    "gsutil",
    "gh",
    "hub",
    "glab",
    "yarn",
    "mvn",
    "mvnw",
    "gradle",
    "gradlew",
    "docker",
    "podman",
    "nerdctl",
    "buildah",
    "docker-compose",
    "podman-compose",
    "vercel",
    "vc",
];

/// HTTP clients whose request method and body the limit reads.
const HTTP_CLIENTS: &[&str] = &["curl", "wget", "http", "https", "xh", "xhs", "curlie"];

/// Hosts of forges, package registries and cloud APIs: a writing request
/// to one of them (or any subdomain) publishes, deploys or changes a
/// hosted repository.
const FORGE_HOSTS: &[&str] = &[
    "github.com",
    "githubusercontent.com",
    "ghcr.io",
    "gitlab.com",
    "bitbucket.org",
    "codeberg.org",
    "gitea.com",
    "sr.ht",
    "dev.azure.com",
    "npmjs.org",
    "npmjs.com",
    "pypi.org",
    "crates.io",
    "rubygems.org",
    "nuget.org",
    "sonatype.com",
    "sonatype.org",
    "docker.io",
    "docker.com",
    "quay.io",
    "amazonaws.com",
    "googleapis.com",
    "azure.com",
    "cloudflare.com",
    "vercel.com",
    "netlify.com",
    "heroku.com",
    "fly.io",
    "digitalocean.com",
    "render.com",
    "railway.app",
];

/// Checks one invocation (its argv already normalised: git's global options
/// removed).
pub fn check(inv: &[Arg]) -> Option<Hit> {
    // Global options removed and aliases canonical (`npm pub` is `npm publish`).
    let norm = crate::options::global::normalized(inv);
    check_normalized(norm.as_deref().unwrap_or(inv))
}

/// [`check`] of an invocation whose tool's global options are already
/// removed (`Invocation::privileged`, derived once per segment).
pub fn check_normalized(inv: &[Arg]) -> Option<Hit> {
    let first = inv.first()?;
    if first.dynamic {
        return None;
    }
    let name = first.basename();
    let known = by_name::known(name);
    match known.and_then(|k| k.fixed) {
        Some(Fixed::Privilege) => {
            return Some(Hit::Yes(format!("`{name}` runs a command with privilege")));
        }
        Some(Fixed::Machine) => {
            return Some(Hit::Yes(format!(
                "`{name}` changes the machine's power state"
            )));
        }
        Some(Fixed::RawNetwork) => {
            return Some(Hit::Yes(format!("`{name}` opens a raw network connection")));
        }
        None => {}
    }
    // `git-push`, `/usr/lib/git-core/git-push`: the dashed form of `git push`.
    if let Some(undashed) = crate::program::git_undashed(inv) {
        return check(&crate::program::git_normalized(&undashed));
    }
    // `python -m twine upload` is `twine upload`.
    if let Some(module) = crate::program::python_module_argv(inv) {
        return check(&module);
    }
    // No table below names the program.
    let known = known?;
    let (mut pos, uncertain) = positionals(inv);
    // npm reads a verb by any unambiguous prefix (`npm pub`).
    let canonical: Vec<Arg> = if name == "npm" {
        pos.iter()
            .take(2)
            .map(|a| canonical_verb(name, a))
            .collect()
    } else {
        Vec::new()
    };
    for (k, c) in canonical.iter().enumerate() {
        pos[k] = c;
    }
    for verbs in &known.verbs {
        for start in 0..=usize::from(uncertain) {
            match verbs_match(&pos, start, verbs) {
                Some(true) => return Some(Hit::Yes(external(name, verbs))),
                None => {
                    return Some(Hit::Maybe(format!(
                        "a dynamic word where `{name} {}` would be compared",
                        verbs.join(" ")
                    )));
                }
                Some(false) => {}
            }
        }
    }
    if known.cloud
        && pos
            .iter()
            .any(|a| a.is("deploy") || a.text.starts_with("deploy:"))
        && !pos.iter().any(|a| READ_VERBS.iter().any(|r| a.is(r)))
    {
        return Some(Hit::Yes(format!("`{name} … deploy` deploys")));
    }
    if known.http {
        return http_write(name, inv);
    }
    // Every name this match reads is in `READ_BY_NAME`.
    match name {
        "gh" | "hub" | "glab" => forge_api(name, inv).or_else(|| gh_repo_sync(name, inv)),
        "aws" | "gsutil" | "gcloud" | "az" => bucket_write(name, &pos),
        // `yarn workspaces foreach -A npm publish`: a publish run per workspace.
        "yarn" => pos
            .iter()
            .any(|a| a.is("publish"))
            .then(|| Hit::Yes("`yarn … publish` publishes".to_string())),
        // Build phases and tasks may come in any order (`mvn clean deploy`,
        // `gradle build :lib:publish`).
        "mvn" | "mvnw" => pos
            .iter()
            .find(|a| a.is("deploy") || a.text.starts_with("deploy:") || a.is("release:perform"))
            .map(|a| Hit::Yes(format!("`{name} {}` publishes artifacts", a.text))),
        "gradle" | "gradlew" => pos
            .iter()
            .find(|a| {
                let task = a.text.rsplit(':').next().unwrap_or("");
                task.starts_with("publish") && task != "publishToMavenLocal"
            })
            .map(|a| Hit::Yes(format!("`{name} {}` publishes artifacts", a.text))),
        "docker" | "podman" | "nerdctl" | "buildah" | "docker-compose" | "podman-compose" => {
            container_push_or_privilege(name, inv, &pos)
        }
        "vercel" | "vc" => {
            let bare = pos.is_empty()
                && !inv
                    .iter()
                    .any(|a| a.is("--help") || a.is("-h") || a.is("--version") || a.is("-v"));
            (inv.iter().any(|a| a.is("--prod") || a.is("--production")) || bare)
                .then(|| Hit::Yes(format!("`{name}` deploys")))
        }
        _ => None,
    }
}

/// The verb as the tool reads it (`npm pub` is `npm publish`).
fn canonical_verb(tool: &str, a: &Arg) -> Arg {
    if tool == "npm" && !a.dynamic {
        for (cmd, min) in NPM_ABBREVIATED {
            if a.text.len() >= *min && cmd.starts_with(a.text.as_str()) {
                return Arg::lit(*cmd);
            }
        }
    }
    a.clone()
}

/// A redirection's target: `/dev/tcp/HOST/PORT` and `/dev/udp/…` are
/// network connections bash opens itself, in every frame.
pub fn redirect(target: &Arg) -> Option<Hit> {
    let norm = crate::scope::normalize("/", &target.text);
    let raw = |p: &str| p.starts_with("/dev/tcp/") || p.starts_with("/dev/udp/");
    if target.dynamic {
        // A dynamic target whose static text already names the device.
        if raw(&norm) || target.text.contains("/dev/tcp") || target.text.contains("/dev/udp") {
            return Some(Hit::Yes(
                "a redirection to /dev/tcp or /dev/udp opens a network connection".into(),
            ));
        }
        // `$D/host/80`, `$T`: the value may be `/dev/tcp/HOST/PORT`. A last
        // part that cannot be a port or service name (`$DIR/out.log`) rules
        // that out.
        let last = target.text.rsplit('/').next().unwrap_or("");
        let port_like = last
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        return ((target.text.is_empty() || target.text.starts_with('/')) && port_like).then(
            || Hit::Maybe("a redirection to a path computed at run time may be /dev/tcp/…".into()),
        );
    }
    (target.text.starts_with('/') && raw(&norm)).then(|| {
        Hit::Yes(format!(
            "a redirection to `{}` opens a network connection",
            target.text
        ))
    })
}

fn external(tool: &str, verbs: &[&str]) -> String {
    let what = match (tool, verbs.first().copied().unwrap_or("")) {
        ("git" | "hub", "push" | "send-pack" | "subtree" | "lfs" | "svn" | "p4") => {
            "pushes to a remote"
        }
        ("git", "send-email") => "sends e-mail",
        ("gh", "pr") if !matches!(verbs.get(1), Some(&("create" | "new" | "merge"))) => {
            "writes to a pull request on the hosted forge"
        }
        ("gh", "issue" | "secret" | "variable" | "label" | "run" | "cache" | "gist") => {
            "writes to the hosted forge"
        }
        ("gh", "ssh-key" | "gpg-key") => "changes the account's keys on the hosted forge",
        (_, "pr" | "mr" | "pull-request") => "opens or merges a pull request",
        (_, "publish" | "unpublish" | "deprecate" | "yank" | "upload" | "push" | "nuget") => {
            "publishes"
        }
        (_, "release") => "publishes a release",
        (_, "repo") => "changes a hosted repository",
        (_, "workflow") => "runs a remote workflow",
        _ => "deploys or changes remote infrastructure",
    };
    format!("`{tool} {}` {what}", verbs.join(" "))
}

/// `Some(true)` when the positionals from `start` are `verbs`; `None` when a
/// dynamic word stands where a verb is compared.
fn verbs_match(pos: &[&Arg], start: usize, verbs: &[&str]) -> Option<bool> {
    for (k, v) in verbs.iter().enumerate() {
        let Some(a) = pos.get(start + k) else {
            return Some(false);
        };
        if a.dynamic {
            return None;
        }
        if a.text != *v {
            return Some(false);
        }
    }
    Some(true)
}

/// `gh repo sync OWNER/REPO` updates that hosted repository; with no
/// destination it updates the local clone (a pull).
fn gh_repo_sync(tool: &str, inv: &[Arg]) -> Option<Hit> {
    if tool != "gh" {
        return None;
    }
    let at = inv.iter().position(|a| a.is("sync"))?;
    if !inv[..at].iter().any(|a| a.is("repo")) {
        return None;
    }
    let mut rest = inv[at + 1..].iter();
    while let Some(a) = rest.next() {
        if a.dynamic {
            return Some(Hit::Maybe(
                "a dynamic word where `gh repo sync`'s destination would be".into(),
            ));
        }
        match a.text.as_str() {
            // Options with a value: the source and the branch, not a destination.
            "-s" | "--source" | "-b" | "--branch" => {
                rest.next();
            }
            t if t.starts_with('-') => {}
            _ => {
                return Some(Hit::Yes(
                    "`gh repo sync OWNER/REPO` updates a hosted repository".into(),
                ));
            }
        }
    }
    None
}

/// A write to a cloud storage bucket — an upload, a sync, a move or a
/// removal — publishes (a static site is deployed so) or destroys what is
/// hosted: `aws s3 cp|mv|sync … s3://…`, `aws s3 rm|rb`, `aws s3api
/// put-*|delete-*|…`, the same through `gsutil` and `gcloud storage`, and
/// `az storage blob upload|delete|sync`. A download (the bucket as the
/// source only) is not.
fn bucket_write(tool: &str, pos: &[&Arg]) -> Option<Hit> {
    let mut words: Vec<&str> = pos.iter().map(|a| a.text.as_str()).collect();
    // An option the limit does not know may have taken the next word as its
    // value (`aws --profile p s3 cp …`): start at the service's name.
    if let Some(k) = words
        .iter()
        .take(3)
        .position(|w| matches!(*w, "s3" | "s3api" | "storage"))
    {
        words.drain(..k);
    }
    let (verbs, scheme): (&[&str], &str) = match (tool, words.as_slice()) {
        ("aws", ["s3", rest @ ..]) => (rest, "s3://"),
        ("aws", ["s3api", verb, ..]) => {
            const WRITES: &[&str] = &[
                "put-",
                "delete-",
                "create-",
                "copy-",
                "upload-",
                "complete-",
                "restore-",
            ];
            return WRITES
                .iter()
                .any(|w| verb.starts_with(w))
                .then(|| Hit::Yes(format!("`aws s3api {verb}` writes to a bucket")));
        }
        ("gsutil", rest) => (rest, "gs://"),
        ("gcloud", ["storage", rest @ ..]) => (rest, "gs://"),
        ("az", ["storage", "blob", verb, ..]) => {
            return matches!(
                *verb,
                "upload" | "upload-batch" | "delete" | "delete-batch" | "sync" | "copy"
            )
            .then(|| Hit::Yes(format!("`az storage blob {verb}` writes to a container")));
        }
        _ => return None,
    };
    let (verb, operands) = verbs.split_first()?;
    let writes = match *verb {
        "rm" | "rb" => true,
        "cp" | "mv" | "sync" | "rsync" => {
            operands.last().is_some_and(|dst| dst.starts_with(scheme))
        }
        _ => false,
    };
    // A dynamic operand may name a bucket.
    let unknown =
        matches!(*verb, "cp" | "mv" | "sync" | "rsync") && pos.last().is_some_and(|a| a.dynamic);
    if writes {
        Some(Hit::Yes(format!("`{tool} … {verb}` writes to a bucket")))
    } else if unknown {
        Some(Hit::Maybe(format!(
            "a dynamic word where `{tool} … {verb}`'s destination bucket would be"
        )))
    } else {
        None
    }
}

/// `gh api`, `hub api`, `glab api`: a write with `-X POST|PUT|PATCH|DELETE`
/// or any field (`-f/-F`, which make the request a POST).
fn forge_api(tool: &str, inv: &[Arg]) -> Option<Hit> {
    let (p, _) = positionals(inv);
    if !p.first().is_some_and(|a| a.is("api")) {
        return None;
    }
    let mut method: Option<(bool, String)> = None;
    let mut fields = false;
    let mut i = 1;
    while i < inv.len() {
        let a = &inv[i];
        let t = a.text.as_str();
        if t == "-X" || t == "--method" {
            method = inv
                .get(i + 1)
                .map(|m| (m.dynamic, m.text.to_ascii_uppercase()));
            i += 2;
            continue;
        }
        if let Some(m) = t
            .strip_prefix("--method=")
            .or_else(|| t.strip_prefix("-X").filter(|m| !m.is_empty()))
        {
            method = Some((a.dynamic, m.to_ascii_uppercase()));
        }
        let field = matches!(t, "-f" | "-F" | "--field" | "--raw-field" | "--input")
            || t.starts_with("--field=")
            || t.starts_with("--raw-field=")
            || t.starts_with("--input=")
            || ((t.starts_with("-f") || t.starts_with("-F"))
                && t.len() > 2
                && !t.starts_with("--"));
        fields |= field;
        i += 1;
    }
    match method {
        Some((true, _)) => Some(Hit::Maybe(format!("`{tool} api` with a dynamic method"))),
        Some((false, m)) if m != "GET" && m != "HEAD" => {
            Some(Hit::Yes(format!("`{tool} api -X {m}` writes to the forge")))
        }
        // Fields make the client send POST unless a method says otherwise.
        None if fields => Some(Hit::Yes(format!(
            "`{tool} api` with fields sends a POST to the forge"
        ))),
        _ => None,
    }
}

/// Host sources a container must not bind: the host's root, its system
/// directories, and the sockets of container engines (root on the host).
const HOST_SOURCES: &[&str] = &[
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
const ENGINE_SOCKETS: &[&str] = &[
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
fn container_push_or_privilege(name: &str, inv: &[Arg], pos: &[&Arg]) -> Option<Hit> {
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
    None
}

/// The value of an option at `i` (`--opt v`, `--opt=v`, `-ov`), with the
/// number of words it spans; `None` when `inv[i]` is not `long`/`short`.
fn option_value<'a>(
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

fn value_text(v: &(Option<&Arg>, Option<String>, usize)) -> Option<(bool, String)> {
    match v {
        (_, Some(s), _) => Some((false, s.clone())),
        (Some(a), None, _) => Some((a.dynamic, a.text.clone())),
        (None, None, _) => None,
    }
}

/// A build that pushes: `--push`, or an output/`--set` naming a registry.
fn build_pushes(inv: &[Arg]) -> bool {
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

/// Why a `run` gains the host, if it does.
fn run_gains_host(inv: &[Arg]) -> Option<String> {
    for (i, a) in inv.iter().enumerate() {
        let t = a.text.as_str();
        if t == "--privileged"
            || t.strip_prefix("--privileged=")
                .is_some_and(|v| !matches!(v, "false" | "False" | "FALSE" | "0" | "f" | "F"))
        {
            return Some("with `--privileged` gains the host".into());
        }
        for ns in ["--pid", "--userns", "--ipc", "--uts", "--cgroupns"] {
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

/// An HTTP client's writing request (a method other than GET/HEAD/OPTIONS,
/// a body, a form or an upload) to a forge, registry or cloud API host.
/// Reading requests and requests to other hosts are ordinary clients:
/// where they may connect is the network mode's.
fn http_write(name: &str, inv: &[Arg]) -> Option<Hit> {
    let req = match name {
        "curl" | "curlie" => curl_request(inv),
        "wget" => wget_request(inv),
        _ => httpie_request(inv),
    };
    // telnet://, gopher://, dict:// send raw bytes to any port.
    if let Some(u) = req.urls.iter().find(|u| {
        let l = u.text.to_ascii_lowercase();
        ["telnet://", "gopher://", "gophers://", "dict://"]
            .iter()
            .any(|s| l.starts_with(s))
    }) {
        return Some(Hit::Yes(format!(
            "`{name} {}` opens a raw network connection",
            u.text
        )));
    }
    if req.config_file {
        return Some(Hit::Maybe(format!(
            "`{name}` reads its method and URLs from a config file"
        )));
    }
    let method_writes = match &req.method {
        Some(m) if m.dynamic => true,
        Some(m) => !matches!(
            m.text.to_ascii_uppercase().as_str(),
            "GET" | "HEAD" | "OPTIONS"
        ),
        None => false,
    };
    if !(method_writes || req.body) {
        return None;
    }
    if req.unknown_targets {
        return Some(Hit::Maybe(format!(
            "`{name}` sends a writing request to URLs it reads from a file"
        )));
    }
    for u in &req.urls {
        if u.dynamic {
            return Some(Hit::Maybe(format!(
                "`{name}` sends a writing request to a URL computed at run time"
            )));
        }
        let host = url_host(&u.text);
        if FORGE_HOSTS
            .iter()
            .any(|d| host == *d || host.ends_with(&format!(".{d}")))
        {
            return Some(Hit::Yes(format!(
                "`{name}` sends a writing request to `{host}` (a forge, registry or cloud API)"
            )));
        }
    }
    None
}

/// What an HTTP client's command line asks for.
#[derive(Default)]
struct HttpRequest {
    method: Option<Arg>,
    body: bool,
    urls: Vec<Arg>,
    /// URLs come from a file (`wget -i`).
    unknown_targets: bool,
    /// Options come from a file or a command (`curl -K`, `wget -e`,
    /// `wget --config`).
    config_file: bool,
}

/// curl's short options that take a value.
const CURL_VALUE_SHORT: &[u8] = b"AbcCdDeEFHKmoPQrtTuUwxXyYz";

/// curl's long options that take a value (others are flags).
const CURL_VALUE_LONG: &[&str] = &[
    "request",
    "data",
    "data-raw",
    "data-binary",
    "data-urlencode",
    "data-ascii",
    "json",
    "form",
    "form-string",
    "upload-file",
    "url",
    "header",
    "user-agent",
    "output",
    "user",
    "proxy",
    "cookie",
    "cookie-jar",
    "referer",
    "cert",
    "key",
    "cacert",
    "capath",
    "max-time",
    "connect-timeout",
    "retry",
    "retry-delay",
    "retry-max-time",
    "resolve",
    "config",
    "write-out",
    "dump-header",
    "range",
    "continue-at",
    "limit-rate",
    "interface",
    "local-port",
    "proxy-user",
    "oauth2-bearer",
    "aws-sigv4",
    "unix-socket",
    "connect-to",
    "output-dir",
    "max-filesize",
    "max-redirs",
    "trace",
    "trace-ascii",
    "stderr",
    "ciphers",
    "tls-max",
    "variable",
    "expand-url",
    "url-query",
    "time-cond",
    "netrc-file",
    "quote",
];

/// curl long options that send a body (prefixes count: older curls read
/// unambiguous prefixes).
const CURL_BODY_LONG: &[&str] = &[
    "data",
    "data-raw",
    "data-binary",
    "data-urlencode",
    "data-ascii",
    "json",
    "form",
    "form-string",
    "upload-file",
];

fn curl_request(inv: &[Arg]) -> HttpRequest {
    let mut r = HttpRequest::default();
    let mut get = false;
    let mut i = 1;
    while i < inv.len() {
        let a = &inv[i];
        let t = a.text.as_str();
        if a.dynamic && !t.starts_with('-') {
            r.urls.push(a.clone());
            i += 1;
            continue;
        }
        if t == "--" {
            r.urls.extend(inv[i + 1..].iter().cloned());
            break;
        }
        if let Some(long) = t.strip_prefix("--") {
            let (n, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            // An unambiguous prefix reads as the whole name.
            let full = CURL_VALUE_LONG
                .iter()
                .find(|o| **o == n)
                .or_else(|| {
                    let mut hits = CURL_VALUE_LONG
                        .iter()
                        .filter(|o| n.len() >= 3 && o.starts_with(n));
                    let first = hits.next();
                    first.filter(|_| hits.next().is_none())
                })
                .copied();
            let value = match (attached, full) {
                (Some(v), _) => Some(Arg::lit(v)),
                (None, Some(_)) => {
                    i += 1;
                    inv.get(i).cloned()
                }
                (None, None) => None,
            };
            let body_prefix = n.len() >= 3 && CURL_BODY_LONG.iter().any(|o| o.starts_with(n));
            match full {
                Some("request") => r.method = value,
                Some("url") => r.urls.extend(value),
                Some("config") => r.config_file = true,
                _ if body_prefix => r.body = true,
                _ => {}
            }
            if n == "get" {
                get = true;
            }
            i += 1;
            continue;
        }
        if t.len() > 1 && t.starts_with('-') {
            let bytes = t.as_bytes();
            let mut k = 1;
            while k < bytes.len() {
                let c = bytes[k];
                if CURL_VALUE_SHORT.contains(&c) {
                    let value = if k + 1 < bytes.len() {
                        Some(Arg {
                            text: t[k + 1..].to_string(),
                            ..a.clone()
                        })
                    } else {
                        i += 1;
                        inv.get(i).cloned()
                    };
                    match c {
                        b'X' => r.method = value,
                        b'd' | b'F' | b'T' => r.body = true,
                        b'K' => r.config_file = true,
                        _ => {}
                    }
                    break;
                }
                if c == b'G' {
                    get = true;
                }
                k += 1;
            }
            i += 1;
            continue;
        }
        r.urls.push(a.clone());
        i += 1;
    }
    if get {
        // `-G` sends the data as a query string.
        r.body = false;
    }
    r
}

fn wget_request(inv: &[Arg]) -> HttpRequest {
    let mut r = HttpRequest::default();
    let value_short = b"OoaeiPUtTwQBlARDIX";
    let value_long = [
        "method",
        "post-data",
        "post-file",
        "body-data",
        "body-file",
        "input-file",
        "header",
        "output-document",
        "user-agent",
        "execute",
        "config",
    ];
    let mut i = 1;
    while i < inv.len() {
        let a = &inv[i];
        let t = a.text.as_str();
        let (name, value) = if let Some(long) = t.strip_prefix("--") {
            match long.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(Arg::lit(v))),
                None if value_long.contains(&long) => {
                    i += 1;
                    (long.to_string(), inv.get(i).cloned())
                }
                None => (long.to_string(), None),
            }
        } else if t.len() > 1 && t.starts_with('-') && !a.dynamic {
            let c = t.as_bytes()[1];
            let value = if !value_short.contains(&c) {
                None
            } else if t.len() == 2 {
                i += 1;
                inv.get(i).cloned()
            } else {
                t.get(2..).map(Arg::lit)
            };
            let long = match c {
                b'i' => "input-file",
                b'e' => "execute",
                _ => "",
            };
            (long.to_string(), value)
        } else {
            r.urls.push(a.clone());
            i += 1;
            continue;
        };
        match name.as_str() {
            "method" => r.method = value,
            "post-data" | "post-file" | "body-data" | "body-file" => r.body = true,
            "input-file" => r.unknown_targets = true,
            "config" => r.config_file = true,
            // A wgetrc command: only those that set the request matter.
            "execute" => {
                let key: String = value
                    .as_ref()
                    .map(|v| v.text.to_ascii_lowercase())
                    .unwrap_or_default()
                    .chars()
                    .filter(char::is_ascii_alphanumeric)
                    .collect();
                let sets_request = [
                    "method",
                    "postdata",
                    "postfile",
                    "bodydata",
                    "bodyfile",
                    "inputfile",
                    "input",
                ]
                .iter()
                .any(|k| key.starts_with(k));
                if value.as_ref().is_none_or(|v| v.dynamic) || sets_request {
                    r.config_file = true;
                }
            }
            _ => {}
        }
        i += 1;
    }
    r
}

/// HTTPie and xh: `http [METHOD] URL [ITEM…]`; data items make a POST.
fn httpie_request(inv: &[Arg]) -> HttpRequest {
    let mut r = HttpRequest::default();
    let value_long = [
        "--auth",
        "-a",
        "--output",
        "-o",
        "--session",
        "--session-read-only",
        "--verify",
        "--cert",
        "--cert-key",
        "--proxy",
        "--timeout",
        "--auth-type",
        "-A",
        "--pretty",
        "--style",
        "-s",
        "--print",
        "-p",
        "--format-options",
        "--max-redirects",
        "--boundary",
        "--raw",
    ];
    let mut pos: Vec<&Arg> = Vec::new();
    let mut i = 1;
    while i < inv.len() {
        let a = &inv[i];
        let t = a.text.as_str();
        if !a.dynamic && t.starts_with('-') && t.len() > 1 {
            let n = t.split('=').next().unwrap_or(t);
            if n == "--raw" {
                r.body = true;
            }
            if matches!(n, "--form" | "-f" | "--multipart") {
                r.body = true;
            }
            if value_long.contains(&n) && !t.contains('=') {
                i += 1;
            }
            i += 1;
            continue;
        }
        pos.push(a);
        i += 1;
    }
    let methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];
    let mut rest = pos.as_slice();
    if let Some(first) = rest.first()
        && (first.dynamic && rest.len() > 1
            || methods.contains(&first.text.to_ascii_uppercase().as_str()))
    {
        r.method = Some((*first).clone());
        rest = &rest[1..];
    }
    if let Some(url) = rest.first() {
        r.urls.push((*url).clone());
    }
    for item in rest.iter().skip(1) {
        let t = item.text.as_str();
        let header_or_query =
            t.contains("==") || (t.contains(':') && !t.contains('=') && !t.contains('@'));
        if item.dynamic || (!header_or_query && (t.contains('=') || t.contains('@'))) {
            r.body = true;
        }
    }
    if !r.body {
        // Items present but only headers and queries: a GET.
    }
    r
}

/// The host of a URL as written (`https://u@api.github.com:443/x` →
/// `api.github.com`; `api.github.com/x` → `api.github.com`).
fn url_host(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if host.starts_with('[') {
        host.split(']')
            .next()
            .unwrap_or(host)
            .trim_start_matches('[')
    } else {
        host.split(':').next().unwrap_or(host)
    };
    host.trim_end_matches('.').to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(s: &str) -> Option<Hit> {
        let argv: Vec<Arg> = s.split_whitespace().map(Arg::lit).collect();
        check(&argv)
    }

    #[test]
    fn external_effects() {
        for c in [
            "git push origin main",
            "gh pr create --fill",
            "gh pr merge 12",
            "gh api repos/o/r/issues -f title=x",
            "gh api -X DELETE repos/o/r",
            "gh api --method=PATCH repos/o/r",
            "npm publish",
            "npm --prefix x publish",
            "yarn npm publish",
            "cargo publish",
            "cargo +nightly publish",
            "docker push img",
            "docker buildx build --push .",
            "kubectl apply -f x.yaml",
            "kubectl -n prod apply -f x",
            "kubectl --context prod delete pod x",
            "helm upgrade --install x .",
            "terraform -chdir=infra apply",
            "vercel --prod",
            "sudo ls",
            "/usr/bin/doas ls",
            "twine upload dist/*",
            "gh issue create --title x",
            "gh pr comment 3 --body x",
            "gh secret set TOKEN",
            "gh repo sync me/fork",
            "aws s3 sync site s3://bucket",
            "aws --profile p s3 cp x s3://bucket/x",
            "aws s3 rm s3://bucket/x",
            "aws s3api put-object --bucket b --key k",
            "gsutil rsync -r site gs://bucket",
            "gcloud storage cp x gs://bucket",
            "az storage blob upload -f x -c c",
            "setpriv --reuid 0 id",
            "unshare -r id",
        ] {
            assert!(matches!(hit(c), Some(Hit::Yes(_))), "{c}");
        }
    }

    #[test]
    fn not_external() {
        for c in [
            "git status",
            "git log --grep push",
            "gh pr view 12",
            "gh pr list",
            "gh api repos/o/r",
            "gh api -X GET repos/o/r -f q=x",
            "npm install",
            "npm run build",
            "cargo build",
            "docker build .",
            "kubectl get pods",
            "helm list",
            "terraform plan",
            "gh repo sync",
            "gh repo sync --source o/r --branch main",
            "gh issue view 3",
            "gh issue list",
            "gh pr checks",
            "gh secret list",
            "aws s3 cp s3://bucket/x .",
            "aws s3 ls s3://bucket",
            "aws s3api get-object --bucket b --key k out",
            "gsutil cp gs://bucket/x .",
            "az storage blob list -c c",
            "ls",
        ] {
            assert_eq!(hit(c), None, "{c}");
        }
    }

    #[test]
    fn dynamic_subcommand_might() {
        let argv = vec![Arg::lit("git"), Arg::dynamic(""), Arg::lit("origin")];
        assert!(matches!(check(&argv), Some(Hit::Maybe(_))));
    }
}

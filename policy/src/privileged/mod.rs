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
use containers::container_push_or_privilege;
use hosted::{bucket_write, forge_api, gh_repo_sync};
use http::http_write;
use infra::{infra_write, is_provider};
use remote::remote_copy;
use scripts::{is_runner, named_script};
use tables::{NPM_ABBREVIATED, READ_VERBS};

mod by_name;
mod container_run;
mod containers;
mod hosted;
mod http;
mod infra;
mod machine;
mod remote;
mod scripts;
mod tables;

/// The limit's verdict for one invocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hit {
    /// An external effect or privilege: the class, for people.
    Yes(String),
    /// A dynamic word where a subcommand would be compared.
    Maybe(String),
}

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
        "aws" => &[
            "--profile",
            "--region",
            "--output",
            "--endpoint-url",
            "--query",
            "--color",
            "--ca-bundle",
            "--cli-read-timeout",
            "--cli-connect-timeout",
            "--cli-binary-format",
        ],
        "gcloud" => &[
            "--project",
            "--account",
            "--configuration",
            "--format",
            "--flatten",
            "--verbosity",
            "--impersonate-service-account",
            "--billing-project",
            "--region",
            "--zone",
        ],
        "az" => &[
            "--subscription",
            "--output",
            "-o",
            "--query",
            "-g",
            "--resource-group",
        ],
        "terraform" | "tofu" => &[],
        "mvn" => &["-f", "--file", "-P", "-pl", "-s", "--settings", "-D"],
        "gradle" => &["-p", "--project-dir", "-P", "-D"],
        _ => &[],
    }
}

/// The positional words a tool's subcommand is read from. `uncertain`:
/// an unknown option before the first positional might have taken it as a
/// value.
pub(super) fn positionals(inv: &[Arg]) -> (Vec<&Arg>, bool) {
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
                // The option's name, and whether a value is attached: one
                // look for the `=`.
                let (name, attached) = crate::substring::before_byte(t, b'=');
                if vals.contains(&name) && !attached {
                    i += 2;
                    continue;
                }
                if out.is_empty() && !attached && !vals.contains(&name) && t.starts_with("--") {
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
        Some(Fixed::RemoteShell) => {
            return Some(Hit::Yes(format!(
                "`{name}` runs commands on another machine"
            )));
        }
        Some(Fixed::Tunnel) => {
            return Some(Hit::Yes(format!(
                "`{name}` exposes this machine to another network (a tunnel)"
            )));
        }
        None => {}
    }
    // `git-push`, `/usr/lib/git-core/git-push`: the dashed form of `git push`.
    // (Each test below first looks at `name`, which the function it calls
    // needs: most names are answered without finding it again.)
    if name.starts_with("git-")
        && let Some(undashed) = crate::program::git_undashed(inv)
    {
        return check(&crate::program::git_normalized(&undashed));
    }
    // `python -m twine upload` is `twine upload`.
    let python = name.starts_with('p');
    if python && let Some(module) = crate::program::python_module_argv(inv) {
        return check(&module);
    }
    // `python setup.py sdist upload`: distutils' `upload` and `register`
    // publish to the package index.
    if python
        && let Some(script) = crate::program::python_script_argv(inv)
        && script[0].basename() == "setup.py"
        && let Some(cmd) = script[1..]
            .iter()
            .find(|a| matches!(a.text.as_str(), "upload" | "register" | "upload_docs"))
    {
        return Some(Hit::Yes(format!(
            "`setup.py {}` publishes to the package index",
            cmd.text
        )));
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
    if known.admin {
        return machine::administers(name, inv);
    }
    if is_runner(name)
        && let Some(hit) = named_script(name, &pos)
    {
        return Some(hit);
    }
    // `pnpm git push`: pnpm (6.6 on) runs a word that is none of its
    // commands as a program in the project's context, and yarn and bun run
    // a binary by name: the line from that word on is judged as a command
    // too (a script of that name shadows it only in the project's files).
    if matches!(name, "pnpm" | "yarn" | "bun")
        && let Some(first) = pos.first()
        && !first.dynamic
        && !matches!(first.basename(), "pnpm" | "yarn" | "bun")
        && let Some(i) = inv.iter().position(|a| std::ptr::eq(a, *first))
        && let Some(hit) = check_normalized(&inv[i..])
    {
        return Some(hit);
    }
    // Every name this match reads is in `READ_BY_NAME` (the providers are
    // in `CLOUD_CLIS`).
    match name {
        "scp" | "rsync" | "rclone" => remote_copy(name, inv),
        // `cargo owner --add|--remove` changes who may publish a crate;
        // `--list` reads.
        "cargo" => (pos.first().is_some_and(|a| a.is("owner"))
            && inv.iter().any(|a| {
                matches!(a.text.as_str(), "-a" | "--add" | "-r" | "--remove")
                    || a.text.starts_with("--add=")
                    || a.text.starts_with("--remove=")
                    || (a.text.starts_with("-a") || a.text.starts_with("-r"))
                        && !a.text.starts_with("--")
            }))
        .then(|| Hit::Yes("`cargo owner --add|--remove` changes a crate's owners".into())),
        "gh" | "hub" | "glab" => forge_api(name, inv).or_else(|| gh_repo_sync(name, inv)),
        "aws" | "gsutil" | "gcloud" | "az" => {
            bucket_write(name, &pos).or_else(|| infra_write(name, &pos))
        }
        _ if is_provider(name) => infra_write(name, &pos),
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
        "lxc" | "incus" => containers::system_container_gains_host(name, inv),
        "docker" | "podman" | "nerdctl" | "buildah" | "docker-compose" | "podman-compose"
        | "ctr" => container_push_or_privilege(name, inv, &pos),
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
        (
            "git" | "hub",
            "push" | "send-pack" | "subtree" | "lfs" | "svn" | "p4" | "cvsexportcommit",
        ) => "pushes to a remote",
        ("git", "send-email") => "sends e-mail",
        ("tailscale", _) => "joins or exposes this machine to a network",
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

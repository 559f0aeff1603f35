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

/// The limit's verdict for one invocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hit {
    /// An external effect or privilege: the class, for people.
    Yes(String),
    /// A dynamic word where a subcommand would be compared.
    Maybe(String),
}

const PRIVILEGE: &[&str] = &[
    "sudo", "sudoedit", "doas", "su", "pkexec", "runuser", "run0",
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
    ("hub", &["push"]),
    ("hub", &["pull-request"]),
    ("hub", &["release", "create"]),
    ("gh", &["pr", "create"]),
    ("gh", &["pr", "new"]),
    ("gh", &["pr", "merge"]),
    ("gh", &["release", "create"]),
    ("gh", &["release", "upload"]),
    ("gh", &["repo", "create"]),
    ("gh", &["repo", "delete"]),
    ("gh", &["workflow", "run"]),
    ("glab", &["mr", "create"]),
    ("glab", &["mr", "merge"]),
    ("glab", &["release", "create"]),
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
    ("podman", &["push"]),
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

/// Checks one invocation (its argv already normalised: git's global options
/// removed).
pub fn check(inv: &[Arg]) -> Option<Hit> {
    // Global options removed and aliases canonical (`npm pub` is `npm publish`).
    let norm = crate::options::global::normalized(inv);
    let inv = norm.as_deref().unwrap_or(inv);
    let first = inv.first()?;
    if first.dynamic {
        return None;
    }
    let name = first.basename();
    if PRIVILEGE.contains(&name) {
        return Some(Hit::Yes(format!("`{name}` runs a command with privilege")));
    }
    if MACHINE.contains(&name) {
        return Some(Hit::Yes(format!(
            "`{name}` changes the machine's power state"
        )));
    }
    let (pos, uncertain) = positionals(inv);
    for (tool, verbs) in VERBS {
        if *tool != name {
            continue;
        }
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
    match name {
        "gh" => gh_api(inv),
        "docker" | "podman" => {
            let (p, _) = positionals(inv);
            let build = p.first().is_some_and(|a| a.is("build"))
                || p.len() > 1 && p[0].is("buildx") && p[1].is("build");
            (build
                && inv
                    .iter()
                    .any(|a| a.is("--push") || a.text.starts_with("--output=type=registry")))
            .then(|| Hit::Yes(format!("`{name} build --push` publishes an image")))
        }
        "vercel" => {
            let (p, _) = positionals(inv);
            (inv.iter().any(|a| a.is("--prod") || a.is("--production")) || p.is_empty())
                .then(|| Hit::Yes("`vercel` deploys".to_string()))
        }
        _ => None,
    }
}

fn external(tool: &str, verbs: &[&str]) -> String {
    let what = match (tool, verbs.first().copied().unwrap_or("")) {
        ("git" | "hub", "push" | "send-pack" | "subtree" | "lfs" | "svn" | "p4") => {
            "pushes to a remote"
        }
        ("git", "send-email") => "sends e-mail",
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

/// `gh api` writes with `-X POST|PUT|PATCH|DELETE` or any `-f/-F` field.
fn gh_api(inv: &[Arg]) -> Option<Hit> {
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
        Some((true, _)) => Some(Hit::Maybe("`gh api` with a dynamic method".into())),
        Some((false, m)) if m != "GET" && m != "HEAD" => {
            Some(Hit::Yes(format!("`gh api -X {m}` writes to GitHub")))
        }
        // Fields make gh send POST unless a method says otherwise.
        None if fields => Some(Hit::Yes(
            "`gh api` with fields sends a POST to GitHub".into(),
        )),
        _ => None,
    }
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

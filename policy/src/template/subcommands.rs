//! A glob where a subcommand is read (`git p?sh`, `npm pub*`): what it
//! expands to is unknown, so it may be a denied or privileged subcommand.

use super::*;

/// Programs whose first operand is a subcommand the limits compare
/// (`git push`, `npm publish`, `kubectl apply`): a glob there (`git p?sh`,
/// `git pus[h]`) could become any of them.
pub(super) const SUBCOMMAND_PROGRAMS: &[&str] = &[
    "git",
    "npm",
    "pnpm",
    "yarn",
    "bun",
    "deno",
    "cargo",
    "go",
    "docker",
    "podman",
    "buildah",
    "kubectl",
    "helm",
    "gh",
    "glab",
    "hub",
    "pip",
    "pip3",
    "uv",
    "poetry",
    "pipx",
    "conda",
    "gem",
    "bundle",
    "rustup",
    "terraform",
    "terragrunt",
    "tofu",
    "pulumi",
    "gcloud",
    "aws",
    "az",
    "systemctl",
    "apt",
    "apt-get",
    "brew",
    "dotnet",
    "fly",
    "flyctl",
    "vercel",
    "vc",
    "netlify",
    "ntl",
    "firebase",
    "heroku",
    "wrangler",
    "composer",
    "twine",
    "cdk",
    "sam",
    "serverless",
    "sls",
    "skaffold",
    "ansible-galaxy",
    "nix",
];

/// Subcommands that take a subcommand of their own (`gh pr create`,
/// `docker compose push`, `npm dist-tag add`, `git remote add`).
pub(super) const SUBCOMMAND_GROUPS: &[&str] = &[
    "pr",
    "repo",
    "release",
    "issue",
    "workflow",
    "gist",
    "secret",
    "api",
    "compose",
    "buildx",
    "image",
    "container",
    "manifest",
    "network",
    "volume",
    "system",
    "context",
    "plugin",
    "rollout",
    "config",
    "set",
    "create",
    "dist-tag",
    "owner",
    "team",
    "org",
    "access",
    "hook",
    "token",
    "profile",
    "pkg",
    "remote",
    "stash",
    "submodule",
    "worktree",
    "notes",
    "lfs",
    "subtree",
    "bisect",
    "mr",
    "pages",
    "pip",
    "tool",
    "python",
    "cache",
    "deployments",
    "functions",
    "apps",
    "projects",
    "alias",
    "extension",
    "auth",
    "sites",
];

/// Programs whose commands nest deeper than one group, and how many words
/// name a command (`aws s3 cp`, `az webapp up`, `gcloud compute instances
/// create`).
pub(super) const DEEP_SUBCOMMANDS: &[(&str, usize)] =
    &[("aws", 2), ("az", 2), ("nix", 2), ("gcloud", 3)];

/// A glob in a command's subcommand position is opaque: the leading words
/// that are not options (and not an option's value), through every
/// subcommand group.
pub(super) fn subcommand_glob(inv: &[Arg], argv: &[Arg]) -> Option<Hit> {
    let name = inv.first()?;
    // Most commands hold no glob: their program's name is not looked for.
    if name.dynamic || !inv.iter().any(|a| a.glob) {
        return None;
    }
    let program = name.basename();
    if !SUBCOMMAND_PROGRAMS.contains(&program) {
        return None;
    }
    let mut depth = DEEP_SUBCOMMANDS
        .iter()
        .find(|(p, _)| *p == program)
        .map_or(1, |(_, d)| *d);
    let mut after_option = false;
    for a in argv.iter().skip(1) {
        if a.is("--") {
            break;
        }
        if a.glob {
            return Some(Hit::Maybe(format!(
                "a glob (`{}`) where `{program}` reads its subcommand: it could expand to any",
                a.text
            )));
        }
        if !a.dynamic && a.text.starts_with('-') && a.text.len() > 1 {
            // `-n prod apply`: the word after an option may be its value.
            after_option = !a.text.contains('=');
            continue;
        }
        if after_option {
            after_option = false;
            continue;
        }
        if !a.dynamic && SUBCOMMAND_GROUPS.contains(&a.text.as_str()) {
            depth += 1;
        }
        depth -= 1;
        if depth == 0 {
            break;
        }
    }
    None
}

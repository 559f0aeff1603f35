//! Changes to cloud infrastructure through a provider's CLI: `aws ec2
//! terminate-instances`, `gcloud compute instances delete`, `az group
//! delete`, `doctl compute droplet create`. They deploy or destroy what is
//! hosted, like a deploy verb, but under every resource's own verb.
//!
//! Auto-approval needs positive knowledge: a command is let through only
//! when its verb is known to read (`describe-*`, `list`, `get-*`, …) or its
//! first word names a group that acts on this machine alone (`aws
//! configure`, `gcloud config`, `az login`). A known writing verb anywhere
//! wins over a reading word, since a resource's name or an option's value
//! may spell one (`az vm delete --name list`). Storage buckets are read
//! by [`super::hosted::bucket_write`], which knows downloads from uploads.

use super::Hit;
use crate::arg::Arg;

/// The provider CLIs read here, with the first words that act only on this
/// machine (configuration, login, the CLI itself).
const PROVIDERS: &[(&str, &[&str])] = &[
    ("aws", &["configure", "help", "sso", "history", "cli"]),
    (
        "gcloud",
        &[
            "config",
            "auth",
            "components",
            "info",
            "help",
            "version",
            "init",
            "topic",
            "cheat-sheet",
            "feedback",
            "survey",
            "emulators",
        ],
    ),
    (
        "az",
        &[
            "login",
            "logout",
            "account",
            "config",
            "configure",
            "extension",
            "upgrade",
            "version",
            "help",
            "find",
            "cloud",
            "init",
            "bicep",
            "feedback",
            "survey",
        ],
    ),
    ("doctl", &["auth", "version", "completion"]),
    ("hcloud", &["context", "version", "completion", "config"]),
    ("linode-cli", &["configure", "--version", "completion"]),
    ("scw", &["init", "config", "version", "autocomplete"]),
    ("oci", &["setup", "session", "--version"]),
    (
        "ibmcloud",
        &[
            "login", "logout", "config", "target", "version", "plugin", "help",
        ],
    ),
];

/// Verbs that change a resource (exact words).
const WRITES: &[&str] = &[
    "create",
    "delete",
    "destroy",
    "update",
    "patch",
    "set",
    "add",
    "remove",
    "rm",
    "start",
    "stop",
    "reset",
    "resize",
    "restart",
    "reboot",
    "poweroff",
    "shutdown",
    "boot",
    "rebuild",
    "suspend",
    "resume",
    "ssh",
    "scp",
    "submit",
    "import",
    "apply",
    "execute",
    "exec",
    "invoke",
    "call",
    "publish",
    "undelete",
    "rollback",
    "promote",
    "cancel",
    "enable",
    "disable",
    "move",
    "attach",
    "detach",
    "upload",
    "purge",
    "assign",
    "grant",
    "revoke",
    "scale",
    "swap",
    "sync",
    "regenerate",
    "rotate",
    "renew",
    "restore",
    "lock",
    "unlock",
    "connect",
    "run-command",
    "tag",
    "untag",
    "deploy",
    "up",
    "down",
    "terminate",
    "kill",
    "drain",
    "failover",
    "replace",
];

/// Prefixes of verbs that change a resource (`set-iam-policy`,
/// `add-iam-policy-binding`, aws's `create-bucket`).
const WRITE_PREFIXES: &[&str] = &[
    "set-",
    "add-",
    "remove-",
    "create-",
    "delete-",
    "update-",
    "attach-",
    "detach-",
    "enable-",
    "disable-",
    "import-",
    "start-",
    "stop-",
    "reset-",
    "put-",
    "terminate-",
    "run-",
    "modify-",
    "associate-",
    "disassociate-",
    "register-",
    "deregister-",
    "revoke-",
    "authorize-",
    "reboot-",
    "restore-",
    "copy-",
    "upload-",
    "send-",
    "publish-",
    "invoke",
    "replace-",
    "cancel-",
    "accept-",
    "reject-",
    "tag-",
    "untag-",
];

/// Verbs that only read (exact words).
const READS: &[&str] = &[
    "list",
    "ls",
    "describe",
    "show",
    "get",
    "view",
    "status",
    "logs",
    "log",
    "tail",
    "read",
    "help",
    "wait",
    "version",
    "info",
    "search",
    "query",
    "scan",
    "select",
    "validate",
    "check",
    "explain",
    "inspect",
    "print",
    "--help",
    "-h",
    "--version",
];

/// Prefixes of verbs that only read.
const READ_PREFIXES: &[&str] = &[
    "describe-",
    "get-",
    "list-",
    "show-",
    "print-",
    "head-",
    "lookup-",
    "search-",
    "filter-",
    "batch-get-",
    "validate-",
    "estimate-",
    "preview-",
    "check-",
    "download-",
];

fn writes(w: &str) -> bool {
    WRITES.contains(&w) || WRITE_PREFIXES.iter().any(|p| w.starts_with(p))
}

fn reads(w: &str) -> bool {
    READS.contains(&w) || READ_PREFIXES.iter().any(|p| w.starts_with(p))
}

/// Whether `tool` is a provider CLI this module reads.
pub(super) fn is_provider(tool: &str) -> bool {
    PROVIDERS.iter().any(|(t, _)| *t == tool)
}

/// The limit's verdict on a provider CLI's command (`pos`: its positional
/// words, global options removed).
pub(super) fn infra_write(tool: &str, pos: &[&Arg]) -> Option<Hit> {
    let (_, local) = PROVIDERS.iter().find(|(t, _)| *t == tool)?;
    let first = pos.first()?;
    if first.dynamic {
        return Some(Hit::Maybe(format!(
            "a dynamic word where `{tool}`'s service would be"
        )));
    }
    // Buckets have their own reading (uploads against downloads).
    if local.iter().any(|l| first.is(l))
        || (tool == "aws" && matches!(first.text.as_str(), "s3" | "s3api"))
        || (tool == "gcloud" && first.is("storage"))
        || (tool == "az" && first.is("storage") && pos.get(1).is_some_and(|a| a.is("blob")))
    {
        return None;
    }
    let rest = &pos[1..];
    if rest.is_empty() {
        // `aws ec2`, `gcloud compute`: the CLI prints the group's help.
        return None;
    }
    // aws names the operation second; the others end the group path with
    // it, and any word of theirs may be it.
    let verbs: &[&Arg] = if tool == "aws" { &rest[..1] } else { rest };
    if let Some(a) = verbs.iter().find(|a| !a.dynamic && writes(&a.text)) {
        return Some(Hit::Yes(format!(
            "`{tool} … {}` changes hosted infrastructure",
            a.text
        )));
    }
    if verbs.iter().any(|a| !a.dynamic && reads(&a.text)) {
        return None;
    }
    if verbs.iter().any(|a| a.dynamic) {
        return Some(Hit::Maybe(format!(
            "a dynamic word where `{tool}`'s verb would be"
        )));
    }
    Some(Hit::Yes(format!(
        "`{tool} {}` is not known to only read hosted infrastructure",
        pos.iter()
            .take(3)
            .map(|a| a.text.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(s: &str) -> Option<Hit> {
        let words: Vec<Arg> = s.split_whitespace().map(Arg::lit).collect();
        let pos: Vec<&Arg> = words[1..].iter().collect();
        infra_write(words[0].text.as_str(), &pos)
    }

    #[test]
    fn writes_and_unknown_verbs_are_privileged() {
        for c in [
            "aws ec2 terminate-instances --instance-ids i-1",
            "aws iam create-user --user-name x",
            "aws lambda update-function-code --function-name x",
            "aws ecs update-service --cluster c",
            "aws lambda invoke --function-name f out.json",
            "aws sts assume-role --role-arn r",
            "aws rds frobnicate-db",
            "gcloud compute instances delete vm",
            "gcloud compute ssh vm",
            "gcloud sql connect db",
            "gcloud projects add-iam-policy-binding p",
            "gcloud compute instances delete list",
            "gcloud compute instances frobnicate vm",
            "az group delete -n x",
            "az vm delete --name list",
            "az vm run-command invoke",
            "doctl compute droplet create d",
            "hcloud server poweroff s",
            "linode-cli linodes reboot 1",
        ] {
            assert!(matches!(verdict(c), Some(Hit::Yes(_))), "{c}");
        }
    }

    #[test]
    fn reads_and_local_groups_are_not() {
        for c in [
            "aws ec2 describe-instances",
            "aws sts get-caller-identity",
            "aws logs tail /aws/lambda/f",
            "aws s3 ls",
            "aws configure set region x",
            "aws ec2",
            "gcloud compute instances list",
            "gcloud projects get-iam-policy p",
            "gcloud config set project p",
            "gcloud auth login",
            "gcloud storage ls gs://b",
            "az vm list",
            "az account set -s x",
            "az login",
            "doctl compute droplet list",
            "hcloud server describe s",
        ] {
            assert_eq!(verdict(c), None, "{c}");
        }
    }

    #[test]
    fn a_dynamic_verb_might() {
        let words = [Arg::lit("ec2"), Arg::dynamic("")];
        let pos: Vec<&Arg> = words.iter().collect();
        assert!(matches!(infra_write("aws", &pos), Some(Hit::Maybe(_))));
    }
}

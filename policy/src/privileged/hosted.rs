//! Writes to what is hosted elsewhere under a tool's own names: `gh api`
//! (and hub's, glab's) with a writing method, `gh repo sync` to a hosted
//! destination, and a cloud storage bucket as a copy's destination.

use super::{Hit, positionals};
use crate::arg::Arg;

/// `gh repo sync OWNER/REPO` updates that hosted repository; with no
/// destination it updates the local clone (a pull).
pub(super) fn gh_repo_sync(tool: &str, inv: &[Arg]) -> Option<Hit> {
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
pub(super) fn bucket_write(tool: &str, pos: &[&Arg]) -> Option<Hit> {
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
        "rm" | "rb" | "mb" | "website" => true,
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
pub(super) fn forge_api(tool: &str, inv: &[Arg]) -> Option<Hit> {
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

//! The berth's uid as the host and the container see it.
//!
//! Each berth runs as a uid of its own, from a block no distribution
//! allocates, so that nothing an agent creates — a setuid binary in `/work`
//! included — belongs to a person or a service on the host. This module says
//! whether the host already gives a uid to someone ([`host_claims`]: the
//! passwd and group databases through NSS, and the subordinate ranges of
//! `/etc/subuid` and `/etc/subgid`), and writes the `/etc/passwd` and
//! `/etc/group` the container sees ([`passwd_file`], [`group_file`]), so the
//! image needs no fixed user.

use std::path::Path;

/// The name the berth's uid has inside its container.
pub const USER_NAME: &str = "agent";

/// Why the host already uses `uid` (as a user, a group, or inside someone's
/// subordinate range); empty when it does not.
pub fn host_claims(uid: u32) -> Vec<String> {
    HostIds::read().claims(uid)
}

/// The effective uid of this process.
pub fn current_uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// The host's subordinate-id files, read once for many lookups (an
/// allocation may look at thousands of uids).
#[derive(Debug)]
pub struct HostIds {
    files: Vec<(&'static str, std::io::Result<String>)>,
}

impl HostIds {
    pub fn read() -> HostIds {
        HostIds {
            files: ["/etc/subuid", "/etc/subgid"]
                .into_iter()
                .map(|f| (f, std::fs::read_to_string(f)))
                .collect(),
        }
    }

    /// Why the host already uses `uid`; empty when it does not.
    pub fn claims(&self, uid: u32) -> Vec<String> {
        let mut claims = account_claims(uid);
        for (file, text) in &self.files {
            claims.extend(subordinate_claims(uid, Path::new(file), text));
        }
        claims
    }
}

fn account_claims(uid: u32) -> Vec<String> {
    let mut claims = Vec::new();
    // getpwuid_r / getgrgid_r: NSS, so LDAP and sssd accounts count too. A
    // lookup error is a claim: fail closed rather than hand out a live uid.
    match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
        Ok(Some(u)) => claims.push(format!("uid {uid} is the host user `{}`", u.name)),
        Ok(None) => {}
        Err(e) => claims.push(format!("the passwd database could not be read: {e}")),
    }
    match nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(uid)) {
        Ok(Some(g)) => claims.push(format!("gid {uid} is the host group `{}`", g.name)),
        Ok(None) => {}
        Err(e) => claims.push(format!("the group database could not be read: {e}")),
    }
    claims
}

/// Claims on `uid` by the ranges of one subordinate-id file (`name:start:count`
/// lines); a missing file claims nothing, an unreadable one claims all.
fn subordinate_claims(uid: u32, file: &Path, text: &std::io::Result<String>) -> Vec<String> {
    match text {
        Ok(text) => ranges_claiming(uid, text)
            .into_iter()
            .map(|(owner, start, count)| {
                format!(
                    "{} gives {owner} {start}..{} (uid {uid} inside)",
                    file.display(),
                    u64::from(start) + count
                )
            })
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => vec![format!("{} could not be read: {e}", file.display())],
    }
}

/// The `(owner, start, count)` lines of a subuid/subgid text whose range holds
/// `uid`. Malformed lines are skipped, as shadow's tools skip them.
pub fn ranges_claiming(uid: u32, text: &str) -> Vec<(String, u32, u64)> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                return None;
            }
            let mut parts = line.split(':');
            let owner = parts.next()?.to_string();
            let start: u32 = parts.next()?.trim().parse().ok()?;
            let count: u64 = parts.next()?.trim().parse().ok()?;
            let inside = u64::from(uid) >= u64::from(start)
                && u64::from(uid) < u64::from(start).saturating_add(count);
            inside.then_some((owner, start, count))
        })
        .collect()
}

/// The container's `/etc/passwd`: root, the berth's user with `home`, and
/// nobody. Nothing of the image's own accounts (files of the image owned by
/// them show numbers).
pub fn passwd_file(uid: u32, home: &str) -> String {
    format!(
        "root:x:0:0:root:/root:/bin/sh\n{USER_NAME}:x:{uid}:{uid}:berth agent:{home}:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
    )
}

/// The container's `/etc/group`: root, the berth's group (gid = uid), nogroup.
pub fn group_file(uid: u32) -> String {
    format!("root:x:0:\n{USER_NAME}:x:{uid}:\nnogroup:x:65534:\n")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn subordinate_ranges_claim_what_they_hold() {
        let text =
            "alice:100000:65536\n# comment\nbob:165536:65536\nbad line\n1001:4294901760:65536\n";
        let cases: &[(u32, &[&str])] = &[
            (99_999, &[]),
            (100_000, &["alice"]),
            (165_535, &["alice"]),
            (165_536, &["bob"]),
            (231_072, &[]),
            (4_294_967_294, &["1001"]),
        ];
        for (uid, owners) in cases {
            let got: Vec<String> = ranges_claiming(*uid, text)
                .into_iter()
                .map(|(o, _, _)| o)
                .collect();
            assert_eq!(got, *owners, "uid {uid}");
        }
    }

    #[test]
    fn root_and_a_real_account_are_claimed_and_the_berth_block_is_not() {
        assert!(!host_claims(0).is_empty(), "root is a host user");
        let free = host_claims(1_879_048_192 + 4242);
        assert!(free.is_empty(), "{free:?}");
    }

    #[test]
    fn the_files_name_the_berths_uid() {
        let p = passwd_file(1_879_048_200, "/home/agent");
        assert!(p.contains("\nagent:x:1879048200:1879048200:berth agent:/home/agent:/bin/sh\n"));
        assert!(group_file(1_879_048_200).contains("\nagent:x:1879048200:\n"));
    }
}

//! Where a project's forge lives: a directory on this host, or a git server
//! this host mirrors — the one seam between the two ([`Forge`]).
//!
//! With a directory forge, `<state>/forge/<project>.git` *is* the forge and
//! everything below is a no-op or the ref write berth always did. With a
//! server forge (smart HTTP, e.g. `git http-backend` behind any web server),
//! the same directory is this host's **mirror** of the server: agent
//! repositories keep their alternates to the mirror's objects, so
//! provisioning stays local and fast, and every ref berth writes is written
//! to the server first and to the mirror only once the server took it.
//!
//! The server's URL is kept in the mirror's own repository configuration
//! (`berth.forgeurl`, read at the repository's local level only, never from
//! the user's or the system's git configuration): the mirror is berth's and
//! no agent can write it, so no other record has to agree with it.
//!
//! # Fetching
//!
//! [`Forge::refresh`] fetches the server's branches, tags and saved work
//! into the mirror (`+refs/heads/*`, `+refs/tags/*`, `+refs/berth/saved/*`:
//! the server is the truth, the mirror follows it, forced) with git2 over HTTP, under the forge's writer lock:
//! provisioning refreshes before it picks the base branch and the task
//! branch, a push before it reads the ref's old value. Nothing is fetched
//! into or from an agent's repository.
//!
//! # Publishing a ref: what guarantees the compare-and-swap
//!
//! [`Forge::publish`] writes `refname` from `previous` to `new`, never
//! forced. On a server it is one git2 push of `<new>:<refname>` (no `+`):
//! - **berth's check**: the push's negotiation callback sees the old value
//!   the push will send to the server (the value the server advertised for
//!   `refname`) and refuses the push, before any object is sent, unless it
//!   is exactly `previous` (absent for a create) — [`Error::ForgeRefStale`];
//! - **the server's check**: every smart-protocol update command carries that
//!   old value, and `git receive-pack` updates the ref in a transaction that
//!   verifies it under the ref's lock (for a create: that the ref does not
//!   exist), so an update by someone else between the advertisement and the
//!   push makes the server refuse the ref — reported per ref through
//!   `push_update_reference` as [`Error::ForgeRefused`];
//! - **never forced**: libgit2 refuses a non-fast-forward unforced push
//!   itself, and berth's callers check fast-forward against `previous` first
//!   (a server may add `receive.denyNonFastForwards`; berth relies on none
//!   of the server's settings but the old-value check every receive-pack
//!   does).
//!
//! A deletion (dropping saved work) is the same push with an empty source
//! (`:<refname>`), the same expected old value checked on both sides.
//! Saved work (`refs/berth/saved/…`) is published to the server and
//! fetched back by every refresh, so a host that takes over another's
//! agents (a worker whose peer died) finds what that peer saved.
//!
//! A push made under an agent lease also carries the lease's fencing token
//! as the push option `berth-fence=<agent>:<token>`, which berth's hook on
//! the server checks under the ref's lock (`fence.rs`): the server refuses a
//! stale holder's push ([`Error::ForgeFenced`]) even when its old value is
//! right, and a server that takes no push options is not pushed to under a
//! lease at all ([`Error::ForgeUnfenced`]).
//!
//! Only once the server accepted is the mirror's ref moved, with the same
//! compare-and-swap on `previous` as a directory forge. A server that does
//! not answer is [`Error::ForgeUnreachable`]: nothing is written anywhere,
//! and an agent's work stays in its own repository to be pushed again.

use std::sync::Once;

use git2::{
    AutotagOption, ConfigLevel, FetchOptions, Oid, PushOptions, RemoteCallbacks, Repository,
};

use crate::error::{self, Error, Op, Result};
use crate::fence::{self, Fence};

/// The mirror's configuration key holding the server's URL.
const URL_KEY: &str = "berth.forgeurl";

/// What a refresh fetches from a server: its branches, tags and saved work,
/// forced (the mirror follows the server).
const MIRROR_REFSPECS: [&str; 3] = [
    "+refs/heads/*:refs/heads/*",
    "+refs/tags/*:refs/tags/*",
    "+refs/berth/saved/*:refs/berth/saved/*",
];

/// How long a connection to a server may take, and how long it may stay
/// silent: a server that hangs fails the call instead of holding the forge's
/// lock forever.
const CONNECT_TIMEOUT_MS: i32 = 10_000;
const SILENCE_TIMEOUT_MS: i32 = 120_000;

/// Where a project's forge lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Forge {
    /// `<state>/forge/<project>.git` is the forge.
    Directory,
    /// A git server over smart HTTP (`http://…`); `<state>/forge/<project>.git`
    /// is this host's mirror of it.
    Http {
        /// The repository's URL on the server.
        url: String,
    },
}

/// One ref update [`Forge::publish`] makes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RefUpdate<'a> {
    /// The full ref name.
    pub refname: &'a str,
    /// What the ref must hold now (`None`: it must not exist).
    pub previous: Option<Oid>,
    /// What it is set to (`None`: it is deleted).
    pub new: Option<Oid>,
    /// The mirror's (or the directory forge's) reflog message.
    pub log: &'a str,
    /// The lease token the write is made under (`fence.rs`): the forge
    /// refuses it when it has seen a higher one. `None`: not fenced.
    pub fence: Option<&'a Fence>,
}

impl Forge {
    /// Whether `source` (a project's recorded source) names a forge server
    /// rather than a directory: the one reading of it, [`Forge::http`]'s.
    pub fn names_a_server(source: &str) -> bool {
        Forge::http(source, Op::ImportProject).is_ok()
    }

    /// A server forge at `url`, refusing what berth cannot reach: `https://`
    /// (berth's own transport over rustls, `forge_tls.rs`: the certificate
    /// checked against the system's trust store, or `SSL_CERT_FILE` /
    /// `SSL_CERT_DIR`) or plain `http://` (loopback or a trusted network).
    pub fn http(url: &str, op: Op) -> Result<Forge> {
        let invalid = |reason: &str| Error::InvalidInput {
            op,
            field: "forge URL",
            value: url.to_owned(),
            reason: reason.to_owned(),
        };
        let Some(rest) = url
            .strip_prefix("https://")
            .or_else(|| url.strip_prefix("http://"))
        else {
            return Err(invalid(
                "give the repository's smart-HTTP URL, https://HOST[:PORT]/PATH (or http:// on loopback or a trusted network)",
            ));
        };
        let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
        if host.is_empty() || path.is_empty() {
            return Err(invalid(
                "give the repository's smart-HTTP URL, https://HOST[:PORT]/PATH (or http:// on loopback or a trusted network)",
            ));
        }
        if url.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(invalid("a URL has no spaces or control characters"));
        }
        if host.contains('@') {
            return Err(invalid(
                "no credentials in the URL: they would be kept in the mirror's configuration and shown in every message",
            ));
        }
        Ok(Forge::Http {
            url: url.to_owned(),
        })
    }

    /// The forge the mirror (or directory forge) `repo` stands for, from its
    /// repository-local configuration.
    pub(crate) fn of(repo: &Repository, op: Op) -> Result<Forge> {
        let git = |e| error::git(op, repo.path(), None)(e);
        let config = repo.config().map_err(git)?;
        let local = match config.open_level(ConfigLevel::Local) {
            Ok(local) => local,
            Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(Forge::Directory),
            Err(e) => return Err(git(e)),
        };
        match local.get_string(URL_KEY) {
            Ok(url) => Forge::http(&url, op),
            Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(Forge::Directory),
            Err(e) => Err(git(e)),
        }
    }

    /// Records this forge in the fresh mirror `repo` (a directory forge
    /// records nothing).
    pub(crate) fn record(&self, repo: &Repository, op: Op) -> Result<()> {
        if let Forge::Http { url } = self {
            let git = |e| error::git(op, repo.path(), None)(e);
            let config = repo.config().map_err(git)?;
            let mut local = config.open_level(ConfigLevel::Local).map_err(git)?;
            local.set_str(URL_KEY, url).map_err(git)?;
        }
        Ok(())
    }

    /// The server's URL (`None` for a directory forge).
    pub fn url(&self) -> Option<&str> {
        match self {
            Forge::Directory => None,
            Forge::Http { url } => Some(url),
        }
    }

    /// Brings the server's branches, tags and saved work into the mirror `repo` (call
    /// under the forge's writer lock). Nothing for a directory forge.
    pub(crate) fn refresh(&self, repo: &Repository, op: Op) -> Result<()> {
        let Forge::Http { url } = self else {
            return Ok(());
        };
        prepare_network();
        let mut remote = repo
            .remote_anonymous(url)
            .map_err(|e| self.network_error(op, repo, None, e))?;
        let mut options = FetchOptions::new();
        options
            .download_tags(AutotagOption::None)
            .update_fetchhead(false);
        remote
            .fetch(
                &MIRROR_REFSPECS,
                Some(&mut options),
                Some("berth: fetch from the forge"),
            )
            .map_err(|e| self.network_error(op, repo, None, e))?;
        tracing::debug!(url = %url, mirror = %repo.path().display(), "forge mirror refreshed");
        Ok(())
    }

    /// The server's default branch (what its `HEAD` names), short name.
    pub(crate) fn server_head(&self, repo: &Repository, op: Op) -> Result<Option<String>> {
        let Forge::Http { url } = self else {
            return Ok(None);
        };
        prepare_network();
        let mut remote = repo
            .remote_anonymous(url)
            .map_err(|e| self.network_error(op, repo, None, e))?;
        remote
            .connect(git2::Direction::Fetch)
            .map_err(|e| self.network_error(op, repo, None, e))?;
        let head = match remote.default_branch() {
            Ok(buf) => buf
                .as_str()
                .ok()
                .and_then(|s| s.strip_prefix("refs/heads/"))
                .map(str::to_owned),
            Err(_) => None,
        };
        // A failed disconnect leaves nothing behind worth an error.
        let _ = remote.disconnect();
        Ok(head)
    }

    /// Sets `update.refname` from `update.previous` to `update.new` (or
    /// deletes it), never forced: on the server first (see the module documentation for what
    /// guarantees the compare-and-swap there), then in `repo`, the mirror or
    /// the directory forge, which must already hold `update.new`'s objects.
    pub(crate) fn publish(&self, repo: &Repository, update: RefUpdate<'_>, op: Op) -> Result<()> {
        match (self, update.fence) {
            (Forge::Http { url }, _) => self.push_to_server(url, repo, update, op)?,
            // Under the forge's writer lock, as the ref update below.
            (Forge::Directory, Some(fence)) => fence::check_directory(repo, fence, op)?,
            (Forge::Directory, None) => {}
        }
        let RefUpdate {
            refname,
            previous,
            new,
            log,
            fence: _,
        } = update;
        let git = |e| error::git(op, repo.path(), Some(refname))(e);
        match (previous, new) {
            (Some(old), Some(new)) => repo
                .reference_matching(refname, new, true, old, log)
                .map(drop),
            (None, Some(new)) => repo.reference(refname, new, false, log).map(drop),
            (Some(old), None) => {
                let mut found = repo.find_reference(refname).map_err(git)?;
                if found.target() != Some(old) {
                    return Err(Error::Tampered {
                        op,
                        path: repo.path().join(refname),
                        expected: old.to_string(),
                        found: found
                            .target()
                            .map_or_else(|| "a symbolic ref".to_owned(), |o| o.to_string()),
                    });
                }
                found.delete()
            }
            (None, None) => Ok(()),
        }
        .map_err(git)
    }

    fn push_to_server(
        &self,
        url: &str,
        repo: &Repository,
        update: RefUpdate<'_>,
        op: Op,
    ) -> Result<()> {
        let refname = update.refname;
        let expected = update.previous.unwrap_or(Oid::ZERO_SHA1);
        let source = update.new.map(|o| o.to_string()).unwrap_or_default();
        let report = self.push_one(
            url,
            repo,
            &format!("{source}:{refname}"),
            Some((refname, expected)),
            update.fence,
            op,
        )?;
        if let Some(fence) = update.fence {
            if let Some(e) = fence_refusal(url, fence, &report, op) {
                return Err(e);
            }
            // The hook's check under the ref's lock aborts the transaction,
            // and receive-pack dies without a report: the server's own
            // record of the token says whether that is what happened.
            if report.result.is_err()
                && let Some(current) = self.server_fence(repo, fence)
                && current > fence.token
            {
                return Err(Error::ForgeFenced {
                    agent: fence.agent.to_string(),
                    token: fence.token,
                    current,
                    forge: url.to_owned(),
                });
            }
        }
        let answered = update
            .fence
            .is_none_or(|f| report.said.contains(&f.accepted_line()));
        self.push_result(url, repo, update, report, op)?;
        if !answered {
            tracing::warn!(url = %url, refname = %refname, "the forge server took a fenced push without berth's fence hook answering: it was not checked against a takeover (install scripts/berth-fence-hook.sh on the server)");
        }
        Ok(())
    }

    /// Pushes `refspec` to the server, carrying `fence` as a push option;
    /// with `expected`, refuses (in the negotiation, before any object is
    /// sent) unless the server's ref is at that value.
    fn push_one(
        &self,
        url: &str,
        repo: &Repository,
        refspec: &str,
        expected: Option<(&str, Oid)>,
        fence: Option<&Fence>,
        op: Op,
    ) -> Result<PushReport> {
        prepare_network();
        let mut report = PushReport {
            stale: None,
            result: Ok(()),
            refused: None,
            said: String::new(),
        };
        let result = {
            let mut callbacks = RemoteCallbacks::new();
            callbacks.push_negotiation(|updates| {
                for u in updates {
                    if let Some((refname, value)) = expected
                        && u.dst_refname().ok() == Some(refname)
                        && u.src() != value
                    {
                        report.stale = Some(u.src());
                        return Err(git2::Error::from_str(
                            "berth: the server's ref is not at the expected value",
                        ));
                    }
                }
                Ok(())
            });
            callbacks.push_update_reference(|name, status| {
                if let Some(status) = status {
                    report.refused = Some(format!("{name}: {status}"));
                }
                Ok(())
            });
            // What the server's hooks say (the fence hook's answer).
            callbacks.sideband_progress(|text| {
                report.said.push_str(&String::from_utf8_lossy(text));
                true
            });
            let option = fence.map(Fence::push_option);
            let option_list: Vec<&str> = option.as_deref().into_iter().collect();
            let mut options = PushOptions::new();
            options.remote_callbacks(callbacks);
            if !option_list.is_empty() {
                options.remote_push_options(&option_list);
            }
            let mut remote = repo
                .remote_anonymous(url)
                .map_err(|e| self.network_error(op, repo, expected.map(|e| e.0), e))?;
            remote.push(&[refspec], Some(&mut options))
        };
        report.result = result;
        Ok(report)
    }

    /// What a push's callbacks and result say, as berth's errors.
    fn push_result(
        &self,
        url: &str,
        repo: &Repository,
        update: RefUpdate<'_>,
        report: PushReport,
        op: Op,
    ) -> Result<()> {
        let refname = update.refname;
        let expected = update.previous.unwrap_or(Oid::ZERO_SHA1);
        let oid_or_none = |o: Oid| (!o.is_zero()).then_some(o);
        if let Some(found) = report.stale {
            return Err(Error::ForgeRefStale {
                url: url.to_owned(),
                refname: refname.to_owned(),
                expected: update.previous,
                found: oid_or_none(found),
            });
        }
        if let Err(e) = report.result {
            if e.code() == git2::ErrorCode::NotFastForward {
                return Err(Error::NonFastForward {
                    refname: refname.to_owned(),
                    forge: url.into(),
                    forge_oid: expected,
                    local_oid: update.new.unwrap_or(Oid::ZERO_SHA1),
                });
            }
            return Err(self.network_error(op, repo, Some(refname), e));
        }
        if let Some(status) = report.refused {
            return Err(Error::ForgeRefused {
                url: url.to_owned(),
                refname: refname.to_owned(),
                status,
            });
        }
        tracing::info!(url = %url, refname = %refname, oid = ?update.new, "published to the forge server");
        Ok(())
    }

    /// The highest token the server's fence ref holds for `fence.agent`
    /// (fetched into the mirror, berth's own), `None` when it cannot be
    /// read.
    fn server_fence(&self, repo: &Repository, fence: &Fence) -> Option<u64> {
        let Forge::Http { url } = self else {
            return None;
        };
        let refname = fence.refname();
        let mut remote = repo.remote_anonymous(url).ok()?;
        let mut options = FetchOptions::new();
        options
            .download_tags(AutotagOption::None)
            .update_fetchhead(false);
        remote
            .fetch(&[format!("+{refname}:{refname}")], Some(&mut options), None)
            .ok()?;
        let blob = repo.find_reference(&refname).ok()?.peel_to_blob().ok()?;
        std::str::from_utf8(blob.content())
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// Raises `fence` on the server (`fence.rs`): pushes
    /// `refs/berth/fence/<agent>` (a blob holding the token, forced: the
    /// hook, not the ref, keeps the token from going down) with the token as
    /// a push option, and requires the fence hook's answer. Call under the
    /// forge's writer lock.
    pub(crate) fn raise_on_server(&self, repo: &Repository, fence: &Fence, op: Op) -> Result<()> {
        let Forge::Http { url } = self else {
            return Ok(());
        };
        let refname = fence.refname();
        let blob = repo
            .blob(format!("{}\n", fence.token).as_bytes())
            .map_err(error::git(op, repo.path(), Some(&refname)))?;
        let refspec = format!("+{blob}:{refname}");
        let report = self.push_one(url, repo, &refspec, None, Some(fence), op)?;
        if let Some(e) = fence_refusal(url, fence, &report, op) {
            return Err(e);
        }
        let answered = report.said.contains(&fence.accepted_line());
        report
            .result
            .map_err(|e| self.network_error(op, repo, Some(&refname), e))?;
        if let Some(status) = report.refused {
            return Err(Error::ForgeRefused {
                url: url.clone(),
                refname,
                status,
            });
        }
        if !answered {
            return Err(Error::ForgeUnfenced {
                op,
                url: url.clone(),
                reason: "it ran no berth fence hook (the raise got no `berth-fence: ok` answer)"
                    .to_owned(),
            });
        }
        tracing::info!(url = %url, agent = %fence.agent, token = fence.token, "fence raised on the forge server");
        Ok(())
    }

    /// A failed network call: the server not answering is
    /// [`Error::ForgeUnreachable`], anything else libgit2's own error.
    fn network_error(
        &self,
        op: Op,
        repo: &Repository,
        refname: Option<&str>,
        e: git2::Error,
    ) -> Error {
        use git2::ErrorClass as C;
        match (self, e.class()) {
            (Forge::Http { url }, _) if e.code() == git2::ErrorCode::Certificate => {
                Error::ForgeCertificate {
                    op,
                    url: url.clone(),
                    message: e.message().to_owned(),
                }
            }
            (Forge::Http { url }, C::Net | C::Http | C::Os | C::Ssl | C::Callback) => {
                Error::ForgeUnreachable {
                    op,
                    url: url.clone(),
                    message: e.message().to_owned(),
                }
            }
            _ => error::git(op, repo.path(), refname)(e),
        }
    }
}

/// What one push to a server came back with.
struct PushReport {
    /// The server's value of the ref, when it was not the one expected.
    stale: Option<Oid>,
    /// libgit2's result.
    result: std::result::Result<(), git2::Error>,
    /// The server's per-ref refusal.
    refused: Option<String>,
    /// What the server's hooks said (sideband).
    said: String,
}

/// The fence's own refusals of a fenced push: a server that takes no push
/// options ([`Error::ForgeUnfenced`], nothing was sent), or the fence hook
/// finding the token stale ([`Error::ForgeFenced`]).
fn fence_refusal(url: &str, fence: &Fence, report: &PushReport, op: Op) -> Option<Error> {
    if let Err(e) = &report.result
        && e.class() == git2::ErrorClass::Invalid
        && e.message().contains("push-options")
    {
        return Some(Error::ForgeUnfenced {
            op,
            url: url.to_owned(),
            reason: "it does not take push options (receive.advertisePushOptions is not set)"
                .to_owned(),
        });
    }
    let current = fence.stale_in(&report.said)?;
    report.refused.as_ref()?;
    Some(Error::ForgeFenced {
        agent: fence.agent.to_string(),
        token: fence.token,
        current,
        forge: url.to_owned(),
    })
}

static NETWORK_PREPARED: Once = Once::new();

/// Bounds how long libgit2 waits for a server and routes `https://` through
/// berth's own transport (process-wide, once). Cheap: nothing of TLS is
/// loaded until an `https://` forge is first reached.
pub(crate) fn prepare_network() {
    NETWORK_PREPARED.call_once(|| {
        // SAFETY: git2 marks global libgit2 options unsafe because they are
        // not synchronised with concurrent libgit2 calls. These are two ints
        // libgit2 reads only when it opens a connection; `call_once` makes
        // this the only write in the process, and `Worktrees::open` makes it
        // before berth's first network call.
        let set = unsafe {
            git2::opts::set_server_connect_timeout_in_milliseconds(CONNECT_TIMEOUT_MS)
                .and_then(|()| git2::opts::set_server_timeout_in_milliseconds(SILENCE_TIMEOUT_MS))
        };
        if let Err(e) = set {
            tracing::warn!(error = %e, "could not bound libgit2's network timeouts");
        }
        // SAFETY: libgit2's transport registry is an unlocked global: this
        // is its only write in the process (`call_once`), made by
        // `Worktrees::open` before berth opens any remote, and every other
        // opener of a remote in this crate calls this first.
        let registered = unsafe {
            crate::forge_tls::register(
                std::time::Duration::from_millis(CONNECT_TIMEOUT_MS.unsigned_abs().into()),
                std::time::Duration::from_millis(SILENCE_TIMEOUT_MS.unsigned_abs().into()),
            )
        };
        if let Err(e) = registered {
            tracing::warn!(error = %e, "could not register the https:// forge transport");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_and_https_urls_with_a_path_are_servers() {
        let op = Op::ImportProject;
        for good in [
            "http://127.0.0.1:9/r.git",
            "https://git.example.com/org/r.git",
        ] {
            assert_eq!(
                Forge::http(good, op).ok(),
                Some(Forge::Http {
                    url: good.to_owned()
                }),
                "{good}"
            );
        }
        for bad in [
            "https://",
            "https://host",
            "https://user:pw@h/r.git",
            "ftp://x/r",
            "http://",
            "http://host",
            "http:///r.git",
            "/srv/git/r.git",
            "http://h/a b",
            "http://h/a\n",
            "http://user:secret@h/r.git",
        ] {
            let e = Forge::http(bad, op).expect_err(bad);
            assert!(
                matches!(
                    e,
                    Error::InvalidInput {
                        field: "forge URL",
                        ..
                    }
                ),
                "{bad}: {e}"
            );
        }
    }
}

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
//! Only once the server accepted is the mirror's ref moved, with the same
//! compare-and-swap on `previous` as a directory forge. A server that does
//! not answer is [`Error::ForgeUnreachable`]: nothing is written anywhere,
//! and an agent's work stays in its own repository to be pushed again.

use std::sync::Once;

use git2::{
    AutotagOption, ConfigLevel, FetchOptions, Oid, PushOptions, RemoteCallbacks, Repository,
};

use crate::error::{self, Error, Op, Result};

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
}

impl Forge {
    /// A server forge at `url`, refusing what berth cannot reach: only
    /// `http://` (libgit2 is built without TLS; `https://` needs git2's
    /// `https` feature).
    pub fn http(url: &str, op: Op) -> Result<Forge> {
        let invalid = |reason: &str| Error::InvalidInput {
            op,
            field: "forge URL",
            value: url.to_owned(),
            reason: reason.to_owned(),
        };
        let Some(rest) = url.strip_prefix("http://") else {
            return Err(invalid(if url.starts_with("https://") {
                "https:// needs git2's `https` feature, which this build leaves out; use http:// (on loopback or a trusted network) or a directory forge"
            } else {
                "give the repository's smart-HTTP URL, http://HOST[:PORT]/PATH"
            }));
        };
        let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
        if host.is_empty() || path.is_empty() {
            return Err(invalid(
                "give the repository's smart-HTTP URL, http://HOST[:PORT]/PATH",
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
        set_network_timeouts();
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
        set_network_timeouts();
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
        if let Forge::Http { url } = self {
            self.push_to_server(url, repo, update, op)?;
        }
        let RefUpdate {
            refname,
            previous,
            new,
            log,
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
        set_network_timeouts();
        let refname = update.refname;
        let expected = update.previous.unwrap_or(Oid::ZERO_SHA1);
        let mut stale: Option<Oid> = None;
        let mut refused: Option<String> = None;
        let pushed = {
            let mut callbacks = RemoteCallbacks::new();
            callbacks.push_negotiation(|updates| {
                for u in updates {
                    if u.dst_refname().ok() == Some(refname) && u.src() != expected {
                        stale = Some(u.src());
                        return Err(git2::Error::from_str(
                            "berth: the server's ref is not at the expected value",
                        ));
                    }
                }
                Ok(())
            });
            callbacks.push_update_reference(|name, status| {
                if let Some(status) = status {
                    refused = Some(format!("{name}: {status}"));
                }
                Ok(())
            });
            let mut options = PushOptions::new();
            options.remote_callbacks(callbacks);
            let mut remote = repo
                .remote_anonymous(url)
                .map_err(|e| self.network_error(op, repo, Some(refname), e))?;
            let source = update.new.map(|o| o.to_string()).unwrap_or_default();
            remote.push(&[format!("{source}:{refname}")], Some(&mut options))
        };
        let oid_or_none = |o: Oid| (!o.is_zero()).then_some(o);
        if let Some(found) = stale {
            return Err(Error::ForgeRefStale {
                url: url.to_owned(),
                refname: refname.to_owned(),
                expected: update.previous,
                found: oid_or_none(found),
            });
        }
        if let Err(e) = pushed {
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
        if let Some(status) = refused {
            return Err(Error::ForgeRefused {
                url: url.to_owned(),
                refname: refname.to_owned(),
                status,
            });
        }
        tracing::info!(url = %url, refname = %refname, oid = ?update.new, "published to the forge server");
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

static TIMEOUTS_SET: Once = Once::new();

/// Bounds how long libgit2 waits for a server (process-wide, set once).
pub(crate) fn set_network_timeouts() {
    TIMEOUTS_SET.call_once(|| {
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
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_http_urls_with_a_path_are_servers() {
        let op = Op::ImportProject;
        assert_eq!(
            Forge::http("http://127.0.0.1:9/r.git", op).ok(),
            Some(Forge::Http {
                url: "http://127.0.0.1:9/r.git".to_owned()
            })
        );
        for bad in [
            "https://example.com/r.git",
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

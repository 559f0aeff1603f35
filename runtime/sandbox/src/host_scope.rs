//! The host-side symlink check for runner actions.
//!
//! The decision judges paths in the agent's frame, lexically: `/work/link/x` is
//! inside `/work`. In a container the mount boundary keeps that true; on the
//! host nothing does, and the kernel follows symlinks: with `/work/link -> /etc`,
//! `/work/link/passwd` is the host's `/etc/passwd`. So before an approved runner
//! action runs, the engine resolves every path the decision judged on the host
//! and holds the action for approval when one that the decision saw inside the
//! scope leaves it through a symlink. The check only ever raises: it never
//! clears what the decision held, and it ignores paths the decision already saw
//! outside the scope.
//!
//! Resolution follows the kernel, component by component: symlinks are followed
//! even when dangling (a write to `/work/new -> /etc/cron.d/x` creates the
//! target), `..` after a symlink goes to the parent of the link's target, not
//! of the link; past the first missing component the rest is appended
//! lexically. A path that cannot be resolved (a symlink loop, a directory that
//! cannot be read) is reported too: fail closed.
//!
//! Pure std and synchronous: a handful of `lstat`/`readlink` calls per path.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use berth_policy::scope::normalize;
use berth_policy::{Decision, PathMap};

/// The kernel's limit on symlinks followed in one resolution (ELOOP).
pub(crate) const MAX_LINKS: usize = 40;

/// The host directories a runner action may touch: the worktree and the
/// frame's extra roots.
#[derive(Debug, Clone)]
pub struct HostScope {
    roots: Vec<Root>,
}

#[derive(Debug, Clone)]
struct Root {
    /// As configured: what the path map produces and the decision compared.
    given: PathBuf,
    /// With every symlink resolved: what a resolved path is compared with.
    canonical: PathBuf,
}

/// A judged path that the check holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScopeFinding {
    /// Inside the scope as written, outside once symlinks are followed.
    SymlinkEscape {
        frame_path: String,
        host_path: PathBuf,
        resolved: PathBuf,
        /// The symlinks followed, in order.
        links: Vec<PathBuf>,
    },
    /// Inside the scope as written, but could not be resolved.
    Unresolvable {
        frame_path: String,
        host_path: PathBuf,
        reason: String,
    },
}

impl fmt::Display for ScopeFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScopeFinding::SymlinkEscape {
                frame_path,
                resolved,
                links,
                ..
            } => {
                let links: Vec<String> = links.iter().map(|l| l.display().to_string()).collect();
                write!(
                    f,
                    "{frame_path} resolves on the host to {} through the symlink(s) {}, outside the project",
                    resolved.display(),
                    links.join(" -> ")
                )
            }
            ScopeFinding::Unresolvable {
                frame_path,
                host_path,
                reason,
            } => write!(
                f,
                "{frame_path} (host path {}) cannot be resolved on the host: {reason}",
                host_path.display()
            ),
        }
    }
}

/// A root that could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("scope root {}: {source}: it must be an existing absolute directory", path.display())]
pub struct HostScopeError {
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
}

/// Where a path ends up on the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub path: PathBuf,
    /// The symlinks followed, in order.
    pub links: Vec<PathBuf>,
}

impl HostScope {
    /// A scope of existing absolute directories.
    pub fn new<I, P>(roots: I) -> Result<Self, HostScopeError>
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        let mut out = Vec::new();
        for given in roots {
            let given: PathBuf = given.into();
            if !given.is_absolute() {
                return Err(HostScopeError {
                    path: given,
                    source: io::Error::new(io::ErrorKind::InvalidInput, "not an absolute path"),
                });
            }
            let canonical = fs::canonicalize(&given).map_err(|source| HostScopeError {
                path: given.clone(),
                source,
            })?;
            out.push(Root {
                given: normalize_lexically(&given),
                canonical,
            });
        }
        Ok(HostScope { roots: out })
    }

    /// Checks every judged frame path; returns the ones to hold, in order.
    pub fn check<S: AsRef<str>>(&self, map: &PathMap, frame_paths: &[S]) -> Vec<ScopeFinding> {
        frame_paths
            .iter()
            .filter_map(|p| self.check_one(map, p.as_ref()))
            .collect()
    }

    fn check_one(&self, map: &PathMap, frame_path: &str) -> Option<ScopeFinding> {
        // In the runner's frame a path no prefix covers is already a host path.
        let host_path = map
            .to_host(frame_path)
            .unwrap_or_else(|| PathBuf::from(frame_path));
        if !host_path.is_absolute() {
            return Some(ScopeFinding::Unresolvable {
                frame_path: frame_path.to_string(),
                host_path,
                reason: "not an absolute path; the decision judges absolute paths".to_string(),
            });
        }
        let lexical = normalize_lexically(&host_path);
        let inside_as_written = self
            .roots
            .iter()
            .any(|r| lexical.starts_with(&r.given) || lexical.starts_with(&r.canonical));
        if !inside_as_written {
            return None;
        }
        match resolve(&host_path) {
            Ok(resolved) => {
                let inside = self
                    .roots
                    .iter()
                    .any(|r| resolved.path.starts_with(&r.canonical));
                (!inside).then(|| ScopeFinding::SymlinkEscape {
                    frame_path: frame_path.to_string(),
                    host_path,
                    resolved: resolved.path,
                    links: resolved.links,
                })
            }
            Err(reason) => Some(ScopeFinding::Unresolvable {
                frame_path: frame_path.to_string(),
                host_path,
                reason,
            }),
        }
    }
}

/// What the policy writes as a segment's working directory in its path
/// reports.
const CWD_REPORT: &str = "(working directory)";

/// The frame paths of a decision a host-side check must resolve: every path
/// the policy placed in scope (one it already found outside asks anyway), the
/// action's cwd, and every argument word without a `/` — and the value of an
/// `opt=value` word — taken against its segment's working directory. The
/// policy judges only words that look like paths, yet `cat notes` reads the
/// entry `notes` of the cwd as surely as `cat ./notes` does, and a committed
/// `notes -> ~/.ssh/id_rsa` must hold it the same way. A word that names
/// nothing there resolves to nothing to report.
pub fn judged_paths(decision: &Decision, cwd: &str) -> Vec<String> {
    let mut paths: Vec<String> = decision
        .segments
        .iter()
        .flat_map(|s| s.paths.iter())
        .filter(|p| p.location.in_scope())
        .filter_map(|p| p.resolved.clone())
        .collect();
    paths.push(cwd.to_string());
    for seg in &decision.segments {
        let mut dirs: Vec<&str> = seg
            .paths
            .iter()
            .filter(|p| p.written == CWD_REPORT)
            .filter_map(|p| p.resolved.as_deref())
            .collect();
        if dirs.is_empty() {
            dirs.push(cwd);
        }
        for word in seg.argv.iter().skip(1) {
            let value = word.split_once('=').map(|(_, v)| v);
            for name in std::iter::once(word.as_str()).chain(value) {
                if name.is_empty() || name.contains('/') || name.contains('\0') {
                    continue;
                }
                for dir in &dirs {
                    paths.push(normalize(dir, name));
                }
            }
        }
    }
    paths.sort();
    paths.dedup();
    paths
}

/// Resolves an absolute host path as the kernel would when creating or
/// opening it: existing components with symlinks followed (dangling ones
/// too), the missing rest appended lexically.
pub fn resolve(path: &Path) -> Result<Resolved, String> {
    let mut pending: VecDeque<OsString> = VecDeque::new();
    push_front_components(&mut pending, path);
    let mut current = PathBuf::from("/");
    let mut links = Vec::new();
    let mut missing = false;
    while let Some(part) = pending.pop_front() {
        if part == "/" {
            current = PathBuf::from("/");
            continue;
        }
        if part == "." {
            continue;
        }
        if part == ".." {
            current.pop();
            continue;
        }
        let next = current.join(&part);
        if missing {
            current = next;
            continue;
        }
        match fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() => {
                if links.len() >= MAX_LINKS {
                    return Err(format!(
                        "more than {MAX_LINKS} symlinks (a loop?) starting at {}",
                        links.first().map_or(next.clone(), Clone::clone).display()
                    ));
                }
                let target = fs::read_link(&next)
                    .map_err(|e| format!("read the symlink {}: {e}", next.display()))?;
                links.push(next);
                // A relative target is taken from the link's directory, which
                // `current` already is.
                push_front_components(&mut pending, &target);
            }
            Ok(_) => current = next,
            Err(e)
                if e.kind() == io::ErrorKind::NotFound
                    || e.raw_os_error() == Some(libc::ENOTDIR) =>
            {
                missing = true;
                current = next;
            }
            Err(e) => return Err(format!("inspect {}: {e}", next.display())),
        }
    }
    Ok(Resolved {
        path: current,
        links,
    })
}

fn push_front_components(pending: &mut VecDeque<OsString>, path: &Path) {
    for c in path.components().rev() {
        let part = match c {
            Component::RootDir => OsString::from("/"),
            Component::CurDir => OsString::from("."),
            Component::ParentDir => OsString::from(".."),
            Component::Normal(n) => n.to_os_string(),
            Component::Prefix(_) => continue,
        };
        pending.push_front(part);
    }
}

/// `.` dropped and `..` applied to the path as written.
fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct Fixture {
        _tmp: tempfile::TempDir,
        worktree: PathBuf,
        outside: PathBuf,
        extra: PathBuf,
    }

    /// `base/wt` is the worktree, `base/extra` an extra root, `base/outside`
    /// is out of scope.
    fn fixture() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(tmp.path()).unwrap();
        let worktree = base.join("wt");
        let outside = base.join("outside");
        let extra = base.join("extra");
        for d in [
            worktree.join("sub/deeper"),
            outside.join("deep/dir"),
            extra.clone(),
        ] {
            fs::create_dir_all(d).unwrap();
        }
        fs::write(outside.join("secret"), "s").unwrap();
        let links: &[(&str, PathBuf)] = &[
            ("link", outside.clone()),
            ("inner-rel", PathBuf::from("sub/deeper")),
            ("inner-abs", worktree.join("sub")),
            ("dangling", outside.join("not-yet")),
            ("chain-a", PathBuf::from("chain-b")),
            ("chain-b", PathBuf::from("chain-c")),
            ("chain-c", outside.clone()),
            ("deep", outside.join("deep/dir")),
            ("up", PathBuf::from("../outside")),
            ("loop", PathBuf::from("loop")),
            ("to-extra", extra.clone()),
            ("sub/back-out", PathBuf::from("../../outside/secret")),
        ];
        for (name, target) in links {
            symlink(target, worktree.join(name)).unwrap();
        }
        Fixture {
            _tmp: tmp,
            worktree,
            outside,
            extra,
        }
    }

    #[test]
    fn reports_every_path_that_leaves_through_a_symlink() {
        let f = fixture();
        let scope = HostScope::new([f.worktree.clone(), f.extra.clone()]).unwrap();
        let map = PathMap::new().with("/work", &f.worktree);
        let w = |p: &str| f.worktree.join(p);
        let o = |p: &str| f.outside.join(p);
        let escape = |frame: &str, host: PathBuf, resolved: PathBuf, links: Vec<PathBuf>| {
            Some(ScopeFinding::SymlinkEscape {
                frame_path: frame.to_string(),
                host_path: host,
                resolved,
                links,
            })
        };
        let cases: Vec<(&str, Option<ScopeFinding>)> = vec![
            // Plain paths, existing or not, stay inside.
            ("/work", None),
            ("/work/sub/deeper", None),
            ("/work/missing/dir/file", None),
            // Links that stay inside the scope, relative or absolute.
            ("/work/inner-rel/x", None),
            ("/work/inner-abs/deeper", None),
            ("/work/to-extra/file", None),
            // Outside as written: the decision's business, not this check's.
            ("/etc/passwd", None),
            ("/work/../outside/secret", None),
            // Escapes.
            (
                "/work/link/secret",
                escape(
                    "/work/link/secret",
                    w("link/secret"),
                    o("secret"),
                    vec![w("link")],
                ),
            ),
            (
                "/work/link",
                escape("/work/link", w("link"), f.outside.clone(), vec![w("link")]),
            ),
            (
                "/work/dangling",
                escape(
                    "/work/dangling",
                    w("dangling"),
                    o("not-yet"),
                    vec![w("dangling")],
                ),
            ),
            (
                "/work/chain-a/secret",
                escape(
                    "/work/chain-a/secret",
                    w("chain-a/secret"),
                    o("secret"),
                    vec![w("chain-a"), w("chain-b"), w("chain-c")],
                ),
            ),
            (
                "/work/up/secret",
                escape(
                    "/work/up/secret",
                    w("up/secret"),
                    o("secret"),
                    vec![w("up")],
                ),
            ),
            (
                "/work/sub/back-out",
                escape(
                    "/work/sub/back-out",
                    w("sub/back-out"),
                    o("secret"),
                    vec![w("sub/back-out")],
                ),
            ),
            // `..` after a link: the target's parent, lexically still /work.
            (
                "/work/deep/../x",
                escape(
                    "/work/deep/../x",
                    w("deep/../x"),
                    o("deep/x"),
                    vec![w("deep")],
                ),
            ),
            (
                "/work/inner-rel/../f",
                None, // sub/deeper/.. is sub: inside
            ),
        ];
        for (frame, want) in cases {
            let got = scope.check(&map, &[frame]);
            assert_eq!(got, want.into_iter().collect::<Vec<_>>(), "{frame}");
        }
    }

    #[test]
    fn a_loop_is_held_as_unresolvable() {
        let f = fixture();
        let scope = HostScope::new([f.worktree.clone()]).unwrap();
        let map = PathMap::new().with("/work", &f.worktree);
        let got = scope.check(&map, &["/work/loop/x", "/work/sub"]);
        assert_eq!(got.len(), 1, "{got:?}");
        match &got[0] {
            ScopeFinding::Unresolvable {
                frame_path, reason, ..
            } => {
                assert_eq!(frame_path, "/work/loop/x");
                assert!(reason.contains("symlinks"), "{reason}");
            }
            other => panic!("expected unresolvable, got {other:?}"),
        }
        assert!(got[0].to_string().contains("/work/loop/x"));
    }

    #[test]
    fn a_root_given_through_a_symlink_is_compared_both_ways() {
        let f = fixture();
        let alias = f.outside.join("alias-of-wt");
        symlink(&f.worktree, &alias).unwrap();
        let scope = HostScope::new([alias.clone()]).unwrap();
        let map = PathMap::new().with("/work", &alias);
        assert_eq!(
            scope.check(&map, &["/work/sub", "/work/inner-abs/x"]),
            vec![]
        );
        let got = scope.check(&map, &["/work/link/secret"]);
        assert_eq!(
            got,
            vec![ScopeFinding::SymlinkEscape {
                frame_path: "/work/link/secret".to_string(),
                host_path: alias.join("link/secret"),
                resolved: f.outside.join("secret"),
                links: vec![alias.clone(), f.worktree.join("link")],
            }]
        );
        assert!(got[0].to_string().contains("outside the project"));
    }

    #[test]
    fn roots_must_exist() {
        let err = HostScope::new(["/definitely/not/here"]).unwrap_err();
        assert!(err.to_string().contains("/definitely/not/here"), "{err}");
        let err = HostScope::new(["relative"]).unwrap_err();
        assert!(err.to_string().contains("absolute"), "{err}");
    }

    #[test]
    fn resolve_matches_canonicalize_for_existing_paths() {
        let f = fixture();
        for p in [
            "link/secret",
            "chain-a/deep",
            "inner-rel",
            "deep/../deep/dir",
            "sub/back-out",
        ] {
            let path = f.worktree.join(p);
            if let Ok(canonical) = fs::canonicalize(&path) {
                assert_eq!(resolve(&path).unwrap().path, canonical, "{p}");
            }
        }
    }
}

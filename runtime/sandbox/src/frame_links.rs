//! Where a frame path leads once its links are followed — in the frame.
//!
//! The decision judges a path as written; a link in the worktree can send
//! it elsewhere, and where depends on whose path the target is: in a
//! container an absolute target is a container path (`/etc` is the
//! container's), in the runner it is a host path. So the resolution walks
//! the frame path component by component, opening each one beneath its
//! mount's root as itself (`O_PATH | O_NOFOLLOW`, `RESOLVE_NO_SYMLINKS`: no
//! link is followed by the kernel) and reading a link with `readlinkat` on
//! that fd; `..` after a link goes to the parent of the link's target. It
//! never follows anything out of a mount, so it can say, for a refusal, which
//! link leads where. It is advice for decisions and messages: the file
//! actions themselves are confined by the kernel (`confined_files`).

use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::path::Path;

use berth_policy::scope::{normalize, under};
use rustix::fs::{FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::confined_files::FileMount;
use crate::host_scope::MAX_LINKS;

/// Every open below a mount's root: never above it, never through `/proc`'s
/// magic links.
pub(crate) const BENEATH: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS);

/// The retry on a path already resolved: no link at all may be followed.
pub(crate) const STRICT: ResolveFlags = BENEATH.union(ResolveFlags::NO_SYMLINKS);

/// How an absolute link target is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkTargets {
    /// A path of the frame (a container: `/etc` is the container's).
    Frame,
    /// A path of this host (the runner), found in the frame through the
    /// mounts' host roots.
    Host,
}

/// One link followed while resolving a frame path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkStep {
    /// The link, as a frame path.
    pub link: String,
    /// Its target, as written in the link.
    pub target: String,
}

/// Where a frame path leads once its links are followed in the frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    /// The frame path, normalised.
    pub frame_path: String,
    /// Where it leads (existing components resolved, the missing rest
    /// appended lexically).
    pub resolved: String,
    /// The links followed, in order.
    pub links: Vec<LinkStep>,
    /// The mount (its frame path) `resolved` is on; `None` when it is on
    /// none (then `resolved` is a host path when a host link led there).
    pub on_mount: Option<String>,
}

impl Resolution {
    /// Where it leads and through which links, for a reason.
    pub fn describe(&self) -> String {
        let links: Vec<String> = self
            .links
            .iter()
            .map(|l| format!("{} -> {}", l.link, l.target))
            .collect();
        if links.is_empty() {
            format!("resolves to {}", self.resolved)
        } else {
            format!(
                "resolves to {} through the link(s) {}",
                self.resolved,
                links.join(", ")
            )
        }
    }
}

/// The mount a normalised frame path is on (the longest first), and the
/// path below its root.
pub(crate) fn mount_of(mounts: &[FileMount], path: &str) -> Option<(usize, String)> {
    mounts.iter().enumerate().find_map(|(i, m)| {
        under(path, &m.frame).then(|| {
            let rel = path[m.frame.len()..].trim_start_matches('/').to_string();
            (i, rel)
        })
    })
}

/// Where a frame path leads once its links are followed in the frame
/// (see the module docs). Fails, with why, on a loop or a path that
/// changes while it is read.
pub(crate) fn resolve(
    mounts: &[FileMount],
    targets: LinkTargets,
    frame_path: &str,
) -> Result<Resolution, String> {
    let path = normalize("/", frame_path);
    let mut pending: VecDeque<String> = VecDeque::new();
    push_front(&mut pending, &path);
    let mut current: Vec<String> = Vec::new();
    let mut links: Vec<LinkStep> = Vec::new();
    let mut roots: Vec<Option<OwnedFd>> = mounts.iter().map(|_| None).collect();
    let joined = |parts: &[String]| -> String {
        if parts.is_empty() {
            "/".to_string()
        } else {
            format!("/{}", parts.join("/"))
        }
    };
    // Off every mount: nothing more can be read here, and it stays off
    // them whatever follows.
    let off = |at: String, pending: VecDeque<String>, links: Vec<LinkStep>| {
        let rest: Vec<String> = pending.into_iter().collect();
        Resolution {
            frame_path: path.clone(),
            resolved: normalize(&at, &rest.join("/")),
            links,
            on_mount: None,
        }
    };
    while let Some(part) = pending.pop_front() {
        if part == ".." {
            let here = joined(&current);
            // On the host, `..` of a mount's root is its host parent,
            // which no frame path names.
            if targets == LinkTargets::Host
                && let Some(m) = mounts.iter().find(|m| m.frame == here)
            {
                let parent = m.host.parent().unwrap_or(Path::new("/"));
                return Ok(off(parent.to_string_lossy().into_owned(), pending, links));
            }
            current.pop();
            continue;
        }
        let mut candidate = current.clone();
        candidate.push(part);
        let candidate_path = joined(&candidate);
        let Some((index, rel)) = mount_of(mounts, &candidate_path) else {
            // A directory on the way to a mount (`/tmp` of a mount at
            // `/tmp/state/objects`) is the frame's, not the agent's.
            if mounts.iter().any(|m| under(&m.frame, &candidate_path)) {
                current = candidate;
                continue;
            }
            return Ok(off(candidate_path, pending, links));
        };
        if rel.is_empty() {
            current = candidate;
            continue;
        }
        if roots[index].is_none() {
            let fd = rustix::fs::open(
                &mounts[index].host,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| format!("open {}: {e}", mounts[index].host.display()))?;
            roots[index] = Some(fd);
        }
        let Some(root) = roots[index].as_ref() else {
            return Err("internal: mount root not open".to_string());
        };
        // Everything before the last component was resolved here, so no
        // link may be followed on the way; the last one opens as itself.
        match rustix::fs::openat2(
            root,
            rel.as_str(),
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
            STRICT,
        ) {
            Ok(fd) => {
                let stat =
                    rustix::fs::fstat(&fd).map_err(|e| format!("inspect {candidate_path}: {e}"))?;
                if FileType::from_raw_mode(stat.st_mode) != FileType::Symlink {
                    current = candidate;
                    continue;
                }
                if links.len() >= MAX_LINKS {
                    return Err(format!(
                        "more than {MAX_LINKS} links (a loop?) starting at {}",
                        links.first().map_or(candidate_path.as_str(), |l| &l.link)
                    ));
                }
                let target = rustix::fs::readlinkat(&fd, "", Vec::new())
                    .map_err(|e| format!("read the link {candidate_path}: {e}"))?;
                let target = String::from_utf8_lossy(target.to_bytes()).into_owned();
                links.push(LinkStep {
                    link: candidate_path,
                    target: target.clone(),
                });
                if !target.starts_with('/') {
                    push_front(&mut pending, &target);
                    continue;
                }
                current.clear();
                match targets {
                    LinkTargets::Frame => push_front(&mut pending, &target),
                    LinkTargets::Host => match host_to_frame(mounts, &target) {
                        Some(in_frame) => push_front(&mut pending, &in_frame),
                        None => return Ok(off(normalize("/", &target), pending, links)),
                    },
                }
            }
            Err(Errno::NOENT | Errno::NOTDIR) => {
                let rest: Vec<String> = pending.into_iter().collect();
                let resolved = normalize(&candidate_path, &rest.join("/"));
                let on_mount = mount_of(mounts, &resolved).map(|(i, _)| mounts[i].frame.clone());
                return Ok(Resolution {
                    frame_path: path,
                    resolved,
                    links,
                    on_mount,
                });
            }
            Err(e) => {
                return Err(format!(
                    "{candidate_path} changed while berth resolved it ({e})"
                ));
            }
        }
    }
    let resolved = joined(&current);
    let on_mount = mount_of(mounts, &resolved).map(|(i, _)| mounts[i].frame.clone());
    Ok(Resolution {
        frame_path: path,
        resolved,
        links,
        on_mount,
    })
}

/// A host path as a frame path when a mount's host root holds it.
fn host_to_frame(mounts: &[FileMount], host: &str) -> Option<String> {
    let host_path = Path::new(host);
    mounts
        .iter()
        .filter_map(|m| {
            let rest = host_path.strip_prefix(&m.host).ok()?;
            let rest = rest.to_string_lossy();
            Some((
                m.host.as_os_str().len(),
                if rest.is_empty() {
                    m.frame.clone()
                } else {
                    format!("{}/{rest}", m.frame.trim_end_matches('/'))
                },
            ))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, p)| p)
}

fn push_front(pending: &mut VecDeque<String>, path: &str) {
    for part in path.rsplit('/') {
        if !part.is_empty() && part != "." {
            pending.push_front(part.to_string());
        }
    }
}

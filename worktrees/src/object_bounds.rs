//! Bounds on what enters the forge: no object over `max_object_bytes`, no push
//! adding more than `max_push_bytes`.
//!
//! libgit2 reads a packed object whole, so a 2 MB pack holding a 2 GB blob of
//! zeros would cost 2 GB of memory at every later read (checkout, merge
//! analysis, diffs). The defence is to refuse such objects where they enter —
//! `push` and `import_project` — so the forge never holds one. Sizes come from
//! object headers (`odb.read_header`): nothing is inflated to be measured.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use git2::{ObjectType, Oid, Repository, Sort};

use crate::error::{self, Error, Op, Result};

/// The size limits of objects entering the forge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GitLimits {
    /// The largest object (uncompressed) the forge accepts.
    pub max_object_bytes: u64,
    /// The most bytes of new objects (uncompressed, and of pack read) one push
    /// may add.
    pub max_push_bytes: u64,
}

impl GitLimits {
    /// `[git] max_object_bytes` by default: 100 MiB.
    pub const DEFAULT_MAX_OBJECT_BYTES: u64 = 100 * 1024 * 1024;
    /// `[git] max_push_bytes` by default: 1 GiB.
    pub const DEFAULT_MAX_PUSH_BYTES: u64 = 1024 * 1024 * 1024;
    /// `[git] max_checkout_bytes` by default: 2 GiB.
    pub const DEFAULT_MAX_CHECKOUT_BYTES: u64 = 2 * 1024 * 1024 * 1024;
}

impl Default for GitLimits {
    fn default() -> Self {
        GitLimits {
            max_object_bytes: Self::DEFAULT_MAX_OBJECT_BYTES,
            max_push_bytes: Self::DEFAULT_MAX_PUSH_BYTES,
        }
    }
}

/// The new objects found by [`check_new_objects`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct NewObjects {
    /// How many.
    pub count: usize,
    /// Their total uncompressed size.
    pub bytes: u64,
}

/// Checks, by header, every object reachable from `tips` and not from `known`
/// (commits, trees, blobs, annotated tags) against `max_object_bytes`, and
/// returns their count and total size. Objects of the trees of the commits at
/// the boundary (`known` commits that new commits build on) are not new and
/// are neither counted nor checked.
pub(crate) fn check_new_objects(
    repo: &Repository,
    tips: &[Oid],
    known: &[Oid],
    max_object_bytes: u64,
    op: Op,
) -> Result<NewObjects> {
    let path = repo.path().to_path_buf();
    let git = |e| error::git(op, &path, None)(e);
    let odb = repo.odb().map_err(git)?;
    let mut counter = Counter {
        odb: &odb,
        repo_path: repo.path(),
        limit: max_object_bytes,
        op,
        seen: HashSet::new(),
        found: NewObjects::default(),
    };

    let mut walk = repo.revwalk().map_err(git)?;
    walk.set_sorting(Sort::TOPOLOGICAL).map_err(git)?;
    let mut any_commit = false;
    for &tip in tips {
        match peel_tip(repo, &mut counter, tip)? {
            Some(commit) => {
                walk.push(commit).map_err(git)?;
                any_commit = true;
            }
            None => continue,
        }
    }
    for &k in known {
        // A known tip that does not resolve bounds nothing.
        let _ = walk.hide(k);
    }
    if !any_commit {
        return Ok(counter.found);
    }
    let mut new_commits = Vec::new();
    for oid in walk {
        new_commits.push(oid.map_err(git)?);
    }
    // Commits by header first: nothing is read whole before it is measured.
    for &c in &new_commits {
        counter.check(c)?;
    }
    let new: HashSet<Oid> = new_commits.iter().copied().collect();
    // Mark what the boundary commits' trees hold as seen: not new.
    for &c in &new_commits {
        let commit = repo.find_commit(c).map_err(git)?;
        for parent in commit.parent_ids() {
            if !new.contains(&parent)
                && let Ok(p) = repo.find_commit(parent)
            {
                mark_tree_known(repo, &mut counter.seen, p.tree_id()).map_err(git)?;
            }
        }
    }
    for c in new_commits {
        let tree = repo.find_commit(c).map_err(git)?.tree_id();
        counter.walk_tree(repo, tree)?;
    }
    Ok(counter.found)
}

/// Checks the tag objects on the way from `tip` and returns the commit it
/// ends at, if any (a tag of a tree or blob is walked here).
fn peel_tip(repo: &Repository, counter: &mut Counter<'_>, tip: Oid) -> Result<Option<Oid>> {
    let (op, path) = (counter.op, repo.path());
    let git = |e| error::git(op, path, None)(e);
    let mut oid = tip;
    // Tags of tags: bounded like git bounds them.
    for _ in 0..32 {
        let (_, kind) = counter.odb.read_header(oid).map_err(git)?;
        match kind {
            ObjectType::Tag => {
                counter.check(oid)?;
                oid = repo.find_tag(oid).map_err(git)?.target_id();
            }
            ObjectType::Commit => return Ok(Some(oid)),
            ObjectType::Tree => {
                counter.walk_tree(repo, oid)?;
                return Ok(None);
            }
            _ => {
                counter.check(oid)?;
                return Ok(None);
            }
        }
    }
    Ok(None)
}

fn mark_tree_known(
    repo: &Repository,
    seen: &mut HashSet<Oid>,
    tree: Oid,
) -> std::result::Result<(), git2::Error> {
    let mut stack = vec![tree];
    while let Some(t) = stack.pop() {
        if !seen.insert(t) {
            continue;
        }
        for entry in repo.find_tree(t)?.iter() {
            match entry.kind() {
                Some(ObjectType::Tree) => stack.push(entry.id()),
                Some(ObjectType::Blob) => {
                    seen.insert(entry.id());
                }
                _ => {}
            }
        }
    }
    Ok(())
}

struct Counter<'a> {
    odb: &'a git2::Odb<'a>,
    repo_path: &'a Path,
    limit: u64,
    op: Op,
    seen: HashSet<Oid>,
    found: NewObjects,
}

impl Counter<'_> {
    fn check(&mut self, oid: Oid) -> Result<()> {
        if !self.seen.insert(oid) {
            return Ok(());
        }
        let (size, _) =
            self.odb
                .read_header(oid)
                .map_err(error::git(self.op, self.repo_path, None))?;
        let size = size as u64;
        if size > self.limit {
            return Err(Error::ObjectTooLarge {
                op: self.op,
                repo: self.repo_path.to_path_buf(),
                oid,
                size,
                limit: self.limit,
            });
        }
        self.found.count += 1;
        self.found.bytes = self.found.bytes.saturating_add(size);
        Ok(())
    }

    fn walk_tree(&mut self, repo: &Repository, tree: Oid) -> Result<()> {
        let (op, path) = (self.op, self.repo_path);
        let git = |e| error::git(op, path, None)(e);
        let mut stack = vec![tree];
        while let Some(t) = stack.pop() {
            if self.seen.contains(&t) {
                continue;
            }
            self.check(t)?;
            let entries: Vec<(Oid, Option<ObjectType>)> = repo
                .find_tree(t)
                .map_err(git)?
                .iter()
                .map(|e| (e.id(), e.kind()))
                .collect();
            for (id, kind) in entries {
                match kind {
                    Some(ObjectType::Tree) => stack.push(id),
                    Some(ObjectType::Blob) => self.check(id)?,
                    // Submodule commits live in other repositories.
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

/// What checking `tree` out writes: the sum of its blobs' sizes, read from
/// their headers (nothing inflated), each blob counted at every path it
/// appears at — a checkout writes each. A repository of a few hundred KB
/// can name one large blob thousands of times, so this is measured before a
/// checkout and refused over `limit` ([`Error::CheckoutTooLarge`]).
///
/// The walk is iterative (no recursion per level) and memoises each
/// subtree's total by id, so a tree repeated at many paths is read once
/// and counted each time. Submodule entries write nothing here.
pub(crate) fn check_checkout_size(
    repo: &Repository,
    tree: Oid,
    refname: &str,
    limit: u64,
    op: Op,
) -> Result<u64> {
    let git = |e| error::git(op, repo.path(), Some(refname))(e);
    let odb = repo.odb().map_err(git)?;
    let too_large = |size: u64| Error::CheckoutTooLarge {
        op,
        refname: refname.to_string(),
        size,
        limit,
    };
    let mut tree_totals: HashMap<Oid, u64> = HashMap::new();
    let mut blob_sizes: HashMap<Oid, u64> = HashMap::new();
    // (tree, its children are already summed)
    let mut stack: Vec<(Oid, bool)> = vec![(tree, false)];
    while let Some((oid, children_done)) = stack.pop() {
        if tree_totals.contains_key(&oid) {
            continue;
        }
        let current = repo.find_tree(oid).map_err(git)?;
        if !children_done {
            stack.push((oid, true));
            for entry in current.iter() {
                if entry.kind() == Some(ObjectType::Tree) && !tree_totals.contains_key(&entry.id())
                {
                    stack.push((entry.id(), false));
                }
            }
            continue;
        }
        let mut total = 0u64;
        for entry in current.iter() {
            let size = match entry.kind() {
                Some(ObjectType::Blob) => match blob_sizes.get(&entry.id()) {
                    Some(size) => *size,
                    None => {
                        let (size, _) = odb.read_header(entry.id()).map_err(git)?;
                        let size = size as u64;
                        blob_sizes.insert(entry.id(), size);
                        size
                    }
                },
                Some(ObjectType::Tree) => {
                    // Summed before its parent (pushed above it); never
                    // counted as nothing.
                    tree_totals
                        .get(&entry.id())
                        .copied()
                        .ok_or_else(|| Error::Tampered {
                            op,
                            path: repo.path().to_path_buf(),
                            expected: format!("tree {} summed before {oid}", entry.id()),
                            found: "it was not".to_string(),
                        })?
                }
                _ => 0,
            };
            total = total.saturating_add(size);
            // Every tree is part of the checkout at least once: over the
            // limit here is over it for the whole.
            if total > limit {
                return Err(too_large(total));
            }
        }
        tree_totals.insert(oid, total);
    }
    tree_totals
        .get(&tree)
        .copied()
        .ok_or_else(|| too_large(u64::MAX))
}

//! One file of a forge branch's tip, read as a blob from the branch's tree,
//! or one directory of it, named by its tree: how berth reads configuration
//! a project keeps in its repository (its `.devcontainer/devcontainer.json`,
//! the build context of its `[sandbox.build]` Dockerfile, which
//! [`Worktrees::check_out_tree`] then writes out). Only the forge's branches are read —
//! berth writes them, an agent's work reaches them only through a merge a
//! person approved — never an agent's worktree or repository, and never
//! through the `git` CLI.

use git2::{ObjectType, Oid, Repository, Tree};

use crate::error::{self, Error, Op, Result};
use crate::forge::{open_forge, ref_tip};
use crate::names::branch_ref;
use crate::{ProjectName, Worktrees};

/// A file read from a forge branch's tip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchFile {
    /// The branch's tip when it was read (the commit the file is from).
    pub commit: Oid,
    /// The file's path in the tree (`/`-separated).
    pub path: String,
    pub content: Vec<u8>,
}

/// A directory of a forge branch's tip, named by its tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchDir {
    /// The branch's tip when it was read.
    pub commit: Oid,
    /// The directory's tree: the same id whenever its content is the same.
    pub tree: Oid,
    /// The directory's path in the tree (`/`-separated; `""` the root).
    pub path: String,
}

/// The forge, its branch's tip and that commit's tree.
struct TipTree {
    forge: Repository,
    refname: String,
    commit: Oid,
}

impl TipTree {
    fn open(wt: &Worktrees, project: &ProjectName, branch: &str) -> Result<TipTree> {
        let op = Op::BranchFile;
        let refname = branch_ref(branch)?;
        let forge = open_forge(&wt.layout, project, op)?;
        let commit = ref_tip(&forge, &refname, op)?.ok_or_else(|| Error::UnknownBranch {
            op,
            repo: forge.path().to_path_buf(),
            branch: branch.to_owned(),
        })?;
        Ok(TipTree {
            forge,
            refname,
            commit,
        })
    }

    fn git(&self) -> impl Fn(git2::Error) -> Error + '_ {
        move |e| error::git(Op::BranchFile, self.forge.path(), Some(&self.refname))(e)
    }

    fn tree(&self) -> Result<Tree<'_>> {
        let git = self.git();
        self.forge
            .find_commit(self.commit)
            .map_err(&git)?
            .tree()
            .map_err(&git)
    }

    fn refuse(&self, branch: &str, path: &str, reason: String) -> Error {
        Error::BranchPath {
            op: Op::BranchFile,
            forge: self.forge.path().to_path_buf(),
            branch: format!("{branch} ({})", self.commit),
            path: path.to_owned(),
            reason,
        }
    }

    /// The entry at `path`, a plain path; `None` when there is none.
    fn entry(&self, branch: &str, path: &str) -> Result<Option<git2::TreeEntry<'static>>> {
        if path.is_empty()
            || path.starts_with('/')
            || path
                .split('/')
                .any(|part| part.is_empty() || part == "." || part == "..")
        {
            return Err(self.refuse(
                branch,
                path,
                "not a plain path inside the repository (no leading '/', '.', '..' or empty parts)"
                    .to_owned(),
            ));
        }
        match self.tree()?.get_path(std::path::Path::new(path)) {
            Ok(entry) => Ok(Some(entry)),
            Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
            Err(e) => Err(self.git()(e)),
        }
    }
}

impl Worktrees {
    /// The regular file at `path` in the tip of the forge's `branch`;
    /// `None` when the tree has nothing at `path`. A directory, a symlink or
    /// a submodule there, a file over `max_bytes` (measured from the blob's
    /// header before it is read) or a path that is not plain (`..`, an
    /// absolute path, an empty part) is an error naming it.
    pub fn forge_branch_file(
        &self,
        project: &ProjectName,
        branch: &str,
        path: &str,
        max_bytes: u64,
    ) -> Result<Option<BranchFile>> {
        let tip = TipTree::open(self, project, branch)?;
        let Some(entry) = tip.entry(branch, path)? else {
            return Ok(None);
        };
        // 0o120000 is a symlink, 0o160000 a submodule: neither is read.
        let mode = entry.filemode();
        if entry.kind() != Some(ObjectType::Blob) || mode & 0o170000 != 0o100000 {
            return Err(tip.refuse(
                branch,
                path,
                format!(
                    "not a regular file in the tree (mode {mode:o}); berth reads only a file committed as one"
                ),
            ));
        }
        let git = tip.git();
        let odb = tip.forge.odb().map_err(&git)?;
        let (size, _) = odb.read_header(entry.id()).map_err(&git)?;
        if size as u64 > max_bytes {
            return Err(tip.refuse(
                branch,
                path,
                format!("{size} bytes, over the {max_bytes} bytes berth reads for it"),
            ));
        }
        let blob = tip.forge.find_blob(entry.id()).map_err(&git)?;
        Ok(Some(BranchFile {
            commit: tip.commit,
            path: path.to_owned(),
            content: blob.content().to_vec(),
        }))
    }

    /// The directory at `path` in the tip of the forge's `branch` (`""`:
    /// the root); `None` when the tree has nothing there (or a path through
    /// a file or a symlink). A file, a symlink or a submodule at `path`
    /// itself, or a path that is not plain, is an error naming it.
    pub fn forge_branch_dir(
        &self,
        project: &ProjectName,
        branch: &str,
        path: &str,
    ) -> Result<Option<BranchDir>> {
        let tip = TipTree::open(self, project, branch)?;
        let tree = if path.is_empty() {
            tip.tree()?.id()
        } else {
            let Some(entry) = tip.entry(branch, path)? else {
                return Ok(None);
            };
            let mode = entry.filemode();
            if entry.kind() != Some(ObjectType::Tree) || mode & 0o170000 != 0o040000 {
                return Err(tip.refuse(
                    branch,
                    path,
                    format!(
                        "not a directory in the tree (mode {mode:o}); berth reads only a directory committed as one"
                    ),
                ));
            }
            entry.id()
        };
        Ok(Some(BranchDir {
            commit: tip.commit,
            tree,
            path: path.to_owned(),
        }))
    }

    /// The tip of the forge's `branch`.
    pub fn forge_branch_tip(&self, project: &ProjectName, branch: &str) -> Result<Oid> {
        Ok(TipTree::open(self, project, branch)?.commit)
    }
}

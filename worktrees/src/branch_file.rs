//! One file of a forge branch's tip, read as a blob from the branch's tree:
//! how berth reads configuration a project keeps in its repository (its
//! `.devcontainer/devcontainer.json`). Only the forge's branches are read —
//! berth writes them, an agent's work reaches them only through a merge a
//! person approved — never an agent's worktree or repository, and never
//! through the `git` CLI.

use git2::{ObjectType, Oid};

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
        let op = Op::BranchFile;
        let refname = branch_ref(branch)?;
        let forge = open_forge(&self.layout, project, op)?;
        let commit = ref_tip(&forge, &refname, op)?.ok_or_else(|| Error::UnknownBranch {
            op,
            repo: forge.path().to_path_buf(),
            branch: branch.to_owned(),
        })?;
        let refuse = |reason: String| Error::BranchPath {
            op,
            forge: forge.path().to_path_buf(),
            branch: format!("{branch} ({commit})"),
            path: path.to_owned(),
            reason,
        };
        if path.is_empty()
            || path.starts_with('/')
            || path
                .split('/')
                .any(|part| part.is_empty() || part == "." || part == "..")
        {
            return Err(refuse(
                "not a plain path inside the repository (no leading '/', '.', '..' or empty parts)"
                    .to_owned(),
            ));
        }
        let git = |e| error::git(op, forge.path(), Some(&refname))(e);
        let tree = forge
            .find_commit(commit)
            .map_err(git)?
            .tree()
            .map_err(git)?;
        let entry = match tree.get_path(std::path::Path::new(path)) {
            Ok(entry) => entry,
            Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
            Err(e) => return Err(git(e)),
        };
        // 0o120000 is a symlink, 0o160000 a submodule: neither is read.
        let mode = entry.filemode();
        if entry.kind() != Some(ObjectType::Blob) || mode & 0o170000 != 0o100000 {
            return Err(refuse(format!(
                "not a regular file in the tree (mode {mode:o}); berth reads only a file committed as one"
            )));
        }
        let odb = forge.odb().map_err(git)?;
        let (size, _) = odb.read_header(entry.id()).map_err(git)?;
        if size as u64 > max_bytes {
            return Err(refuse(format!(
                "{size} bytes, over the {max_bytes} bytes berth reads for it"
            )));
        }
        let blob = forge.find_blob(entry.id()).map_err(git)?;
        Ok(Some(BranchFile {
            commit,
            path: path.to_owned(),
            content: blob.content().to_vec(),
        }))
    }

    /// The tip of the forge's `branch`.
    pub fn forge_branch_tip(&self, project: &ProjectName, branch: &str) -> Result<Oid> {
        let op = Op::BranchFile;
        let refname = branch_ref(branch)?;
        let forge = open_forge(&self.layout, project, op)?;
        ref_tip(&forge, &refname, op)?.ok_or_else(|| Error::UnknownBranch {
            op,
            repo: forge.path().to_path_buf(),
            branch: branch.to_owned(),
        })
    }
}

//! What the cwd of a command's segments names, asked once per cwd: the
//! segments of one command mostly share their cwd (one `Arc`), and whether
//! it mentions a protected name, or may name a protected path, was asked
//! again for each of them.

use std::sync::Arc;

use crate::protected;
use crate::segment::Cwd;

/// The answers for the last cwd asked, by the `Arc` its segments share (the
/// same `Arc` is the same directories: it is never changed).
#[derive(Default)]
pub(super) struct CwdNames {
    mentions: Option<(Arc<[String]>, bool)>,
    may_name: Option<(Arc<[String]>, bool, bool)>,
}

impl CwdNames {
    /// [`crate::access::cwd_mentions_protected`] of `cwd`.
    pub fn mentions_protected(&mut self, cwd: &Cwd) -> bool {
        let Cwd::Known(dirs) = cwd else {
            return crate::access::cwd_mentions_protected(cwd);
        };
        match &self.mentions {
            Some((known, answer)) if Arc::ptr_eq(known, dirs) => *answer,
            _ => {
                let answer = crate::access::cwd_mentions_protected(cwd);
                self.mentions = Some((dirs.clone(), answer));
                answer
            }
        }
    }

    /// Whether one of the directories of `cwd` may name a protected path
    /// ([`protected::may_name`] with `dotglob`).
    pub fn may_name_protected(&mut self, cwd: &Cwd, dotglob: bool) -> bool {
        let Cwd::Known(dirs) = cwd else {
            return false;
        };
        match &self.may_name {
            Some((known, glob, answer)) if Arc::ptr_eq(known, dirs) && *glob == dotglob => *answer,
            _ => {
                let answer = dirs.iter().any(|d| protected::may_name(d, dotglob));
                self.may_name = Some((dirs.clone(), dotglob, answer));
                answer
            }
        }
    }
}

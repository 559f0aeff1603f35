//! Each invocation's argv as the stages compare it, derived once per
//! segment.
//!
//! Deny and ask rules, the deny templates, the privileged limit and the
//! project's patterns all compare an invocation with its tool's global
//! options removed and its subcommand named canonically (`npm --prefix .
//! pub` is `npm publish`, `git -C d push` is `git push`). Finding the
//! subcommand parses the tool's options; asked by four stages of the same
//! invocation it was a tenth of a decision. The segment walk derives it
//! once ([`Normalized::derive`]) and every stage reads it, as ripgrep's
//! `HiArgs` derives its decisions once for everything downstream.

use std::borrow::Cow;

use crate::arg::Arg;
use crate::options::global;
use crate::template;

/// One invocation's normalised argv, kept only where it differs from argv
/// as written (most commands: nothing to remove, nothing copied).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Normalized {
    /// [`template::normalized_argv`]: what deny, ask and privileged
    /// patterns compare. `None`: argv as written.
    argv: Option<Vec<Arg>>,
    /// What the built-in privileged classes read: the above with the
    /// tool's global options removed once more (`privileged::check`'s own
    /// normalisation). `None`: the same as `argv`.
    privileged: Option<Vec<Arg>>,
}

/// Nothing to normalise: both views are argv as written.
pub static AS_WRITTEN: Normalized = Normalized {
    argv: None,
    privileged: None,
};

impl Normalized {
    /// Derives both views of one invocation.
    pub fn derive(inv: &[Arg]) -> Normalized {
        Normalized::derive_with(inv, global::normalized(inv))
    }

    /// [`Normalized::derive`] with `global` = [`global::normalized`]`(inv)`
    /// already found (the program's analysis finds it).
    pub fn derive_with(inv: &[Arg], global: Option<Vec<Arg>>) -> Normalized {
        debug_assert_eq!(global, global::normalized(inv), "{inv:?}");
        match global {
            Some(argv) => {
                // A tool table's normalisation is already canonical:
                // normalising it again changes nothing (checked here in
                // debug builds, which every test runs).
                debug_assert_eq!(global::normalized(&argv), None, "{argv:?}");
                Normalized {
                    argv: Some(argv),
                    privileged: None,
                }
            }
            None => match template::normalized_argv_unmodelled(inv) {
                // As written: the tool table already found nothing to change.
                Cow::Borrowed(_) => AS_WRITTEN.clone(),
                Cow::Owned(argv) => Normalized {
                    privileged: global::normalized(&argv),
                    argv: Some(argv),
                },
            },
        }
    }
}

/// One invocation of a segment as the stages read it.
#[derive(Debug, Clone)]
pub struct Invocation<'s> {
    /// argv as written (after wrappers were seen through).
    pub written: &'s [Arg],
    /// What deny, ask and privileged patterns compare.
    pub normalized: Cow<'s, [Arg]>,
    /// What the built-in privileged classes read.
    pub privileged: Cow<'s, [Arg]>,
}

impl<'s> Invocation<'s> {
    /// The views of `written` from what was derived, or derived now when
    /// nothing was (a segment built outside the walk).
    pub fn new(written: &'s [Arg], derived: Option<&'s Normalized>) -> Invocation<'s> {
        match derived {
            Some(d) => {
                let normalized = d.argv.as_deref().unwrap_or(written);
                Invocation {
                    written,
                    normalized: Cow::Borrowed(normalized),
                    privileged: Cow::Borrowed(d.privileged.as_deref().unwrap_or(normalized)),
                }
            }
            None => {
                let d = Normalized::derive(written);
                let normalized: Vec<Arg> = d.argv.unwrap_or_else(|| written.to_vec());
                let privileged = d.privileged.unwrap_or_else(|| normalized.clone());
                Invocation {
                    written,
                    normalized: Cow::Owned(normalized),
                    privileged: Cow::Owned(privileged),
                }
            }
        }
    }
}

//! Plain command substitutions parsed once per command line.
//!
//! Agents write the same small `$(…)` many times in one line — a heredoc
//! that logs `$(date +%s)` on each of its lines, a loop body repeated —
//! and parsing each copy allocated a whole tree again. A substitution whose
//! text holds only *plain* bytes (letters, digits, blanks and `-+%./_:,@=`)
//! is parsed the first time it is met and shared ([`Arc`]) by every later
//! copy of the same text in that line.
//!
//! Why a shared tree is the tree a parse would build: none of those bytes
//! can open a quote, an expansion, a nested substitution, a redirection, a
//! heredoc, a comment, a list operator or a newline, so the parse of the
//! text is the words of one simple command (or an error), ends at the first
//! `)`, reads nothing before or after it, and leaves no heredoc pending.
//! Its result depends on those bytes alone, but for the nesting bound,
//! which the parser checks before taking a shared tree. Only a parse that
//! succeeded and ended exactly at that `)` is kept; an error is parsed (and
//! reported) each time. A shared tree holds no heredoc, so filling heredoc
//! bodies into the tree never needs to change one.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::ast::List;

/// Most distinct texts kept per command line (the memory stays bounded).
const MAX_TEXTS: usize = 64;
/// Longest text kept (a longer one is rarely repeated).
const MAX_TEXT_LEN: usize = 256;

/// Whether `b` is a byte that cannot start any syntax inside `$(…)`.
fn is_plain(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b' ' | b'-' | b'+' | b'%' | b'.' | b'/' | b'_' | b':' | b',' | b'@' | b'='
        )
}

/// Where the `)` closing a plain substitution whose text starts at `from`
/// stands, when every byte before it is plain and the text is short enough
/// to keep.
pub(super) fn plain_close(src: &[u8], from: usize) -> Option<usize> {
    let rest = src.get(from..)?;
    let len = rest
        .iter()
        .take(MAX_TEXT_LEN + 1)
        .position(|&b| !is_plain(b))?;
    (rest[len] == b')').then_some(from + len)
}

/// The trees of the plain substitutions parsed so far in one command line,
/// by text.
#[derive(Default)]
pub(super) struct PlainSubs {
    trees: FxHashMap<Box<[u8]>, Arc<List>>,
}

impl PlainSubs {
    /// The tree parsed before for `text`.
    pub fn get(&self, text: &[u8]) -> Option<Arc<List>> {
        self.trees.get(text).cloned()
    }

    /// Keeps the tree a successful parse of the plain `text` built.
    pub fn keep(&mut self, text: &[u8], tree: &Arc<List>) {
        if self.trees.len() < MAX_TEXTS {
            self.trees.insert(text.into(), Arc::clone(tree));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::ast::Part;
    use crate::shell::parse;

    #[test]
    fn only_plain_texts_up_to_their_paren_are_found() {
        assert_eq!(plain_close(b"$(date +%s) x", 2), Some(10));
        assert_eq!(plain_close(b"$() x", 2), Some(2));
        for not_plain in [
            &b"$(date \"+%s\")"[..],
            b"$(echo $(id))",
            b"$(a;b)",
            b"$(a|b)",
            b"$(a\nb)",
            b"$(cat <<E)",
            b"$(a # c)",
            b"$(a `b`)",
            b"$(ls *)",
            b"$(echo {a,b})",
            b"$(echo ~)",
            b"$(date",
        ] {
            assert_eq!(plain_close(not_plain, 2), None, "{not_plain:?}");
        }
        let long = format!("$({})", "a".repeat(MAX_TEXT_LEN + 1));
        assert_eq!(plain_close(long.as_bytes(), 2), None);
    }

    /// The substitutions of `line`, in order, as parsed.
    fn subs(line: &str) -> Vec<Arc<List>> {
        fn walk(parts: &[Part], out: &mut Vec<Arc<List>>) {
            for p in parts {
                match p {
                    Part::CmdSub(l) => out.push(Arc::clone(l)),
                    Part::Param { inner, .. } => walk(inner, out),
                    _ => {}
                }
            }
        }
        let script = parse(line.as_bytes());
        let mut out = Vec::new();
        for item in &script.list.items {
            for c in &item.and_or.first.commands {
                if let crate::shell::ast::Command::Simple(s) = c {
                    for w in &s.words {
                        walk(&w.parts, &mut out);
                    }
                    for r in &s.redirects {
                        if let crate::shell::ast::RedirTarget::HereDoc(d) = &r.target {
                            walk(&d.parts, &mut out);
                        }
                    }
                }
            }
        }
        out
    }

    #[test]
    fn a_shared_tree_is_the_tree_a_parse_builds() {
        // The same text in different places — a word, double quotes, a
        // `${…}` operator, a heredoc body after them — shares one tree,
        // equal to the tree of the text parsed alone.
        let line = "echo $(date +%s) \"at $(date +%s)\" ${x:-$(date +%s)} x$(id -u)y <<E\n$(date +%s) $(id -u)\nE\n";
        let found = subs(line);
        assert_eq!(found.len(), 6, "{found:?}");
        let alone = parse(b"date +%s").list;
        for i in [0, 1, 2, 4] {
            assert_eq!(*found[i], alone);
            assert!(Arc::ptr_eq(&found[i], &found[0]));
        }
        assert_eq!(*found[3], parse(b"id -u").list);
        assert!(Arc::ptr_eq(&found[3], &found[5]));
        assert!(!Arc::ptr_eq(&found[0], &found[3]));
    }

    #[test]
    fn a_failed_parse_is_not_kept_and_fails_each_time() {
        // `if` opens a compound the plain text cannot close: an error.
        let script = parse(b"echo $(if x) $(if x)");
        assert!(script.error.is_some());
        let again = parse(b"echo $(date) $(if x)");
        assert!(again.error.is_some());
    }

    #[test]
    fn the_nesting_bound_holds_with_shared_trees() {
        // The same plain text at the bound and past it: the copy too deep
        // is still an error though the shallow one was kept.
        let deep = |n: usize| format!("echo $(date) {}$(date){}", "$(".repeat(n), ")".repeat(n));
        for n in 90..crate::shell::MAX_DEPTH + 2 {
            let line = deep(n);
            let cached = parse(line.as_bytes());
            // The same line where the shallow copy is not plain, so nothing
            // is shared: the reference.
            let reference = parse(line.replacen("$(date)", "$(date;)", 1).as_bytes());
            assert_eq!(
                cached.error.is_some(),
                reference.error.is_some(),
                "depth {n}"
            );
        }
    }
}

//! Shell parsing: from a command line to a syntax tree, and back: one
//! string as one shell word ([`quote_word`]).
//!
//! See [`parser`] for why the parser is hand-written. [`word`] turns words
//! into the strings bash would pass to a program (quote removal, brace
//! expansion) or says why it cannot.

pub mod ast;
pub mod brace;
mod fd_var;
mod heredoc;
mod param;
pub mod parser;
mod plain_subs;
pub mod word;

pub use parser::{MAX_DEPTH, ParseError, Script, parse};

/// `s` as one shell word that bash hands over unchanged: as written when
/// every byte is plain (letters, digits, `-_./:,+@%`), else in single
/// quotes, a `'` inside written `'\''`. `=` is quoted too, so a first word
/// is never read as an assignment.
pub fn quote_word(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:,+@%".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_quoted_word_parses_back_to_itself() {
        for w in [
            "ls", "a b", "", "$HOME", "it's", "FOO=1", "x;y", "-la", "a\nb", "é", "*",
        ] {
            let line = format!("{} x", super::quote_word(w));
            let a = crate::segment::analyze(line.as_bytes(), "/work", "/home/agent");
            assert!(a.parse_error.is_none(), "{line}");
            let seg = &a.segments[0];
            assert!(seg.assigns.is_empty(), "{line}");
            assert_eq!(seg.argv[0].text, w, "{line}");
            assert!(!seg.argv[0].dynamic && !seg.argv[0].glob, "{line}");
        }
    }
}

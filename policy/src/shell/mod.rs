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

pub use parser::{MAX_DEPTH, ParseError, Script, parse, parse_text};

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
    use super::{parse, parse_text};

    /// A line given as text parses as its bytes do.
    #[test]
    fn text_parses_as_its_bytes() {
        for line in [
            "git status && echo é",
            "cat <<E\nü $(date) `id`\nE",
            "echo a\0rm -rf /",
            "sh -c 'echo \"日本\"' x",
            "x=${y:-$(z)} w",
            "",
        ] {
            assert_eq!(parse_text(line), parse(line.as_bytes()), "{line:?}");
        }
    }

    #[test]
    fn a_plain_word_parses_as_the_piece_by_piece_reading_does() {
        // A line continuation after a word ends the plain run with a byte
        // that is not a metacharacter: the parser then reads the word piece
        // by piece (and drops the continuation). Both readings give the
        // same tree, for words of every kind the plain reading takes.
        let words: &[&[u8]] = &[
            b"ls",
            b"-la",
            b"a=b",
            b"PATH=/x:/y",
            b"x~",
            b"*.rs",
            b"{a,b}",
            b"[ab]",
            b"%s+%s",
            b"@{u}",
            b"caf\xc3\xa9",
            b"\xff\xfe",
            b"!",
            b"a#b",
            b"--opt=v",
            b"if",
            b"{",
            b"}",
            b"x]",
            b"a$b",
            b"a'b'c",
            b"a\"b\"",
            b"a`id`b",
            b"a\\b",
            b"a\rb",
        ];
        for w in words {
            for (before, after) in [
                (&b"echo "[..], &b""[..]),
                (b"", b" x"),
                (b"echo ", b";ls"),
                (b"echo ", b"|cat"),
                (b"echo ", b")"),
                (b"(echo ", b")"),
                (b"echo ", b"\n"),
                (b"echo ", b"&"),
                (b"echo ", b">f"),
            ] {
                // Reserved words are told before a word is read, as
                // written: in command position only the others.
                if before.is_empty() && matches!(*w, b"if" | b"{" | b"}" | b"!") {
                    continue;
                }
                let line = [before, w, after].concat();
                let pieces = [before, w, b"\\\n", after].concat();
                let (plain, by_pieces) = (parse(&line), parse(&pieces));
                let shown = String::from_utf8_lossy(&line);
                assert_eq!(plain.list, by_pieces.list, "{shown}");
                assert_eq!(plain.error.is_some(), by_pieces.error.is_some(), "{shown}");
            }
        }
    }

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

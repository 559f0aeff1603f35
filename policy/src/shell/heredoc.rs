//! The lines of a heredoc body as bash compares them with the delimiter.
//!
//! With an unquoted delimiter bash reads each body line with its line
//! continuations removed — a backslash escapes the byte after it, and an
//! unescaped backslash before a newline joins the next line — and only then
//! compares the joined line with the delimiter (after stripping leading
//! tabs, for `<<-`). So `E\⏎OF` ends the body of `<<EOF`, and the lines
//! after it run as commands. A quoted delimiter reads lines verbatim.

use std::borrow::Cow;

/// The body line starting at `start`: its text as bash compares it with the
/// delimiter (`join`: an unquoted delimiter, whose lines join at a line
/// continuation), and the index of the newline ending it (or `src.len()`).
/// Borrowed unless a continuation was removed.
pub(super) fn logical_line(src: &[u8], start: usize, join: bool) -> (Cow<'_, [u8]>, usize) {
    let end = |from: usize| {
        crate::substring::find_byte(b'\n', &src[from..]).map_or(src.len(), |n| from + n)
    };
    let first_end = end(start);
    if !join || !src[start..first_end].ends_with(b"\\") {
        return (Cow::Borrowed(&src[start..first_end]), first_end);
    }
    let mut line = Vec::new();
    let mut i = start;
    while i < src.len() {
        match src[i] {
            b'\n' => break,
            b'\\' => match src.get(i + 1) {
                Some(b'\n') => i += 2,
                Some(&next) => {
                    line.extend_from_slice(&[b'\\', next]);
                    i += 2;
                }
                None => {
                    line.push(b'\\');
                    i += 1;
                }
            },
            b => {
                line.push(b);
                i += 1;
            }
        }
    }
    (Cow::Owned(line), i.min(src.len()))
}

#[cfg(test)]
mod tests {
    use super::logical_line;

    #[test]
    fn continuations_join_only_unescaped_and_unquoted() {
        let src = b"E\\\nOF\nx";
        assert_eq!(&*logical_line(src, 0, true).0, b"EOF");
        assert_eq!(logical_line(src, 0, true).1, 5);
        assert_eq!(&*logical_line(src, 0, false).0, b"E\\");
        // An escaped backslash does not continue the line.
        assert_eq!(&*logical_line(b"E\\\\\nOF", 0, true).0, b"E\\\\");
        assert_eq!(&*logical_line(b"a\\", 0, true).0, b"a\\");
        assert_eq!(&*logical_line(b"plain\nnext", 0, true).0, b"plain");
    }
}

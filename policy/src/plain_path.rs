//! Whether a path is already normal for `scope`'s walk — every `/`-piece
//! a name that is neither empty, `.`, `..`, an alias of a process's root
//! or cwd (a name ending in `root` or `cwd`) nor a glob — read in one pass
//! over its bytes. Most paths a decision resolves are plain, and asking
//! each piece in turn (a split, two suffix tests and a glob search a piece)
//! cost about 340 instructions a path; a test holds this equal to that
//! piecewise reading on every short string of the bytes that matter.

/// Whether every piece of `s` split at `/` is plain: not empty, not `.`
/// or `..`, not ending in `root` or `cwd`, and holding no `*`, no `?` and
/// no `[` with a `]` after it in the same piece.
pub(crate) fn is_plain(s: &str) -> bool {
    let b = s.as_bytes();
    let mut start = 0;
    // Where the piece's first `[` is, if it has one.
    let mut open = false;
    for (i, &c) in b.iter().enumerate() {
        // Most bytes are none of the five: one table look for them.
        if !SPECIAL[usize::from(c)] {
            continue;
        }
        match c {
            b'/' => {
                if !plain_piece(&b[start..i]) {
                    return false;
                }
                start = i + 1;
                open = false;
            }
            b'*' | b'?' => return false,
            b'[' => open = true,
            b']' if open => return false,
            _ => {}
        }
    }
    plain_piece(&b[start..])
}

/// The bytes [`is_plain`] looks at: `/`, `*`, `?`, `[` and `]`.
static SPECIAL: [bool; 256] = crate::byte_set::byte_set(b"/*?[]", false);

/// The tests of a piece that look at its ends: not empty, `.` or `..`,
/// and no `root` or `cwd` at its end (the glob bytes are [`is_plain`]'s).
fn plain_piece(p: &[u8]) -> bool {
    !matches!(p, b"" | b"." | b"..") && !p.ends_with(b"root") && !p.ends_with(b"cwd")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scope::first_glob;
    use crate::substring::slash_parts;

    /// The piecewise reading `scope` had.
    fn piecewise(s: &str) -> bool {
        slash_parts(s).all(|p| {
            !matches!(p, "" | "." | "..")
                && !p.ends_with("root")
                && !p.ends_with("cwd")
                && first_glob(p).is_none()
        })
    }

    #[test]
    fn equals_the_piecewise_reading_on_every_short_string() {
        crate::short_strings::each(b"a/.*?[]rotcw", 6, |text| {
            assert_eq!(is_plain(text), piecewise(text), "{text:?}");
        });
        for text in [
            "/work/src/main.rs",
            "src/a[1]/b",
            "a[/]b",
            "x/proc/self/root",
            "x/cwdx/y",
            "日本/語",
            "a]b[c",
        ] {
            assert_eq!(is_plain(text), piecewise(text), "{text:?}");
        }
    }
}

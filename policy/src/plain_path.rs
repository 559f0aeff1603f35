//! Whether a path is already normal for `scope`'s walk — every `/`-piece
//! a name that is neither empty, `.`, `..`, an alias of a process's root
//! or cwd (a name ending in `root` or `cwd`) nor a glob — read in one pass
//! over its bytes, eight at a time. Most paths a decision resolves are
//! plain, and asking each piece in turn (a split, two suffix tests and a
//! glob search a piece) cost about 340 instructions a path; tests hold
//! this equal to that piecewise reading on every short string of the bytes
//! that matter, alone and at each place of a longer path.

/// Whether every piece of `s` split at `/` is plain: not empty, not `.`
/// or `..`, not ending in `root` or `cwd`, and holding no `*`, no `?` and
/// no `[` with a `]` after it in the same piece.
pub(crate) fn is_plain(s: &str) -> bool {
    let b = s.as_bytes();
    let mut pieces = Pieces {
        start: 0,
        open: false,
    };
    // Eight bytes at a time: the places of the five bytes among them as
    // bits (one table look a byte, no branch), each then read in turn.
    let mut chunks = b.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut chunks {
        let mut marks = 0u32;
        for (k, &c) in chunk.iter().enumerate() {
            marks |= u32::from(SPECIAL[usize::from(c)]) << k;
        }
        while marks != 0 {
            if !pieces.read(b, at + marks.trailing_zeros() as usize) {
                return false;
            }
            marks &= marks - 1;
        }
        at += 8;
    }
    for (k, &c) in chunks.remainder().iter().enumerate() {
        if SPECIAL[usize::from(c)] && !pieces.read(b, at + k) {
            return false;
        }
    }
    plain_piece(&b[pieces.start..])
}

/// Where [`is_plain`] is in the pieces of a path.
struct Pieces {
    /// Where the current piece starts.
    start: usize,
    /// Whether the current piece has a `[`.
    open: bool,
}

impl Pieces {
    /// Reads the byte at `i` (one of [`SPECIAL`]); whether all is still
    /// plain. Inlined: a call for each `/` cost more than the reading.
    #[inline(always)]
    fn read(&mut self, b: &[u8], i: usize) -> bool {
        match b[i] {
            b'/' => {
                if !plain_piece(&b[self.start..i]) {
                    return false;
                }
                self.start = i + 1;
                self.open = false;
            }
            b'*' | b'?' => return false,
            b'[' => self.open = true,
            b']' if self.open => return false,
            _ => {}
        }
        true
    }
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

    /// The same where the bytes that matter stand across the eight-byte
    /// steps of [`is_plain`]: every short string at each place of a longer
    /// plain path.
    #[test]
    fn equals_the_piecewise_reading_across_eight_byte_steps() {
        crate::short_strings::each(b"a/.*[]t", 4, |text| {
            for pad in 0..=17 {
                let padded = format!("{}{text}{}", &"abcdefgh/ijklmnop/"[..pad], "/qr");
                assert_eq!(is_plain(&padded), piecewise(&padded), "{padded:?}");
            }
        });
    }
}

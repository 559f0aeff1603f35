//! Substring tests and splits for the short strings a decision looks at (a
//! command line, a word, a path): std's `str::contains(&str)` builds a
//! Two-Way searcher on every call, 100–200 instructions before it reads a
//! byte — more than the whole search of a ten-byte command — and
//! `split('/')` a `memchr` searcher per piece. Long texts still go to std's
//! searcher.

/// Longer haystacks than this use std's searcher (linear in the worst case).
const SHORT: usize = 64;

/// Does `hay` contain `needle`? The same answer as `hay.contains(needle)`.
pub fn contains(hay: &str, needle: &str) -> bool {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    let Some((&first, rest)) = n.split_first() else {
        return true;
    };
    if h.len() > SHORT {
        return hay.contains(needle);
    }
    let Some(last_start) = h.len().checked_sub(n.len()) else {
        return false;
    };
    // The places of the first byte found a word at a time; each compared
    // by a byte loop, no `memcmp` call: needles here are a few bytes.
    let starts = &h[..=last_start];
    let mut from = 0;
    while let Some(i) = starts.get(from..).and_then(|s| find_byte(first, s)) {
        let at = from + i;
        if h[at + 1..].iter().zip(rest).all(|(x, y)| x == y) {
            return true;
        }
        from = at + 1;
    }
    false
}

/// `dotglob` and `GLOBIGNORE`, which the terminal action looks for in every
/// command line, as `memmem` searchers built once: over a long line they
/// read many bytes at a time, where std's searcher, built for each call,
/// read about one.
static GLOB_SETTINGS: std::sync::LazyLock<[memchr::memmem::Finder<'static>; 2]> =
    std::sync::LazyLock::new(|| {
        [
            memchr::memmem::Finder::new("dotglob"),
            memchr::memmem::Finder::new("GLOBIGNORE"),
        ]
    });

/// Whether `command` names `dotglob` or `GLOBIGNORE` (which sets it): the
/// answer of `contains(command, "dotglob") || contains(command,
/// "GLOBIGNORE")`.
pub fn names_glob_settings(command: &str) -> bool {
    if command.len() <= SHORT {
        return contains(command, "dotglob") || contains(command, "GLOBIGNORE");
    }
    GLOB_SETTINGS
        .iter()
        .any(|f| f.find(command.as_bytes()).is_some())
}

/// `s.split('/')`, the same pieces, by a byte scan.
pub fn slash_parts(s: &str) -> impl Iterator<Item = &str> {
    let b = s.as_bytes();
    let mut start = Some(0);
    std::iter::from_fn(move || {
        let from = start?;
        let end = b[from..]
            .iter()
            .position(|&c| c == b'/')
            .map_or(b.len(), |i| from + i);
        start = (end < b.len()).then_some(end + 1);
        // Both ends sit next to a `/` or at an end: char boundaries.
        s.get(from..end)
    })
}

/// Does `hay` hold the byte `b`? `hay.contains(c)` for an ASCII `c`,
/// without std's `memchr` searcher (set up for each call, it costs more
/// than the whole look at a short word).
pub fn has_byte(hay: &str, b: u8) -> bool {
    find_byte(b, hay.as_bytes()).is_some()
}

/// `s` before its first `b` (ASCII), and whether it holds one: the answers
/// of `s.split(c).next()` and `s.contains(c)` for that char, by one
/// [`find_byte`] (`--name=value`'s name, and whether a value is attached).
pub fn before_byte(s: &str, b: u8) -> (&str, bool) {
    match find_byte(b, s.as_bytes()).and_then(|i| s.get(..i)) {
        Some(before) => (before, true),
        None => (s, false),
    }
}

/// Eight ones, one in each byte: a byte repeated over a word is this times it.
pub(crate) const ONES: u64 = 0x0101_0101_0101_0101;
/// The high bit of each byte.
pub(crate) const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `word` (eight bytes, little-endian) that
/// is `byte`, and maybe of bytes after the first such one (a borrow only
/// sets bits above a zero byte): the lowest bit set is the first such
/// byte's. What every eight-bytes-a-step search here and in the batch's
/// reader and writer tests.
#[inline(always)]
pub(crate) fn bytes_equal_to(word: u64, byte: u8) -> u64 {
    let x = word ^ (ONES * u64::from(byte));
    x.wrapping_sub(ONES) & !x & HIGHS
}

/// The index of the first `needle` in `hay`, as `position` finds it: eight
/// bytes at a time for the first few words (a word, a path), then by
/// `memchr`'s vector search (a command line's `C`s, for `CDPATH`, its NUL
/// bytes, a heredoc body's line ends: far apart).
pub fn find_byte(needle: u8, hay: &[u8]) -> Option<usize> {
    /// Words read before `memchr` (which costs more to set up) takes over.
    const WORDS: usize = 4;
    let mut at = 0;
    for chunk in hay.chunks_exact(8).take(WORDS) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let found = bytes_equal_to(u64::from_le_bytes(word), needle);
        if found != 0 {
            return Some(at + found.trailing_zeros() as usize / 8);
        }
        at += 8;
    }
    let rest = hay.get(at..)?;
    if at < WORDS * 8 {
        // Fewer than eight bytes left, the needle in none before them: the
        // last eight bytes as one word when there are eight (those read
        // already hold no needle, so the lowest bit found is still the
        // first needle), else a byte at a time.
        let Some(last) = hay.len().checked_sub(8) else {
            return rest.iter().position(|&b| b == needle).map(|i| at + i);
        };
        let word: [u8; 8] = hay.get(last..)?.try_into().ok()?;
        let found = bytes_equal_to(u64::from_le_bytes(word), needle);
        return (found != 0).then(|| last + found.trailing_zeros() as usize / 8);
    }
    memchr::memchr(needle, rest).map(|i| at + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn before_byte_answers_as_split_and_contains() {
        crate::short_strings::each(b"=a-", 8, |s| {
            assert_eq!(
                before_byte(s, b'='),
                (s.split('=').next().unwrap_or(s), s.contains('=')),
                "{s:?}"
            );
        });
        let s = "\u{e9}-x=\u{e9}";
        assert_eq!(before_byte(s, b'='), ("\u{e9}-x", true));
    }

    /// [`find_byte`] finds what `position` finds, wherever the byte stands
    /// (in the words read eight bytes at a time or in `memchr`'s part) and
    /// whatever stands after it.
    #[test]
    fn bytes_are_found_as_position_finds_them() {
        for len in 0..100 {
            for at in 0..=len {
                let mut hay: Vec<u8> = (0..len).map(|i| [b'a', b'/', 0xc3, b'.'][i % 4]).collect();
                if at < len {
                    hay[at] = b'C';
                    if at + 3 < len {
                        hay[at + 3] = b'C';
                    }
                }
                for needle in [b'C', b'/', b'.', 0] {
                    assert_eq!(
                        find_byte(needle, &hay),
                        hay.iter().position(|&b| b == needle),
                        "{hay:?} {needle}"
                    );
                }
            }
        }
    }

    #[test]
    fn agrees_with_std() {
        let texts = [
            "",
            "a",
            "git status",
            "shopt -s dotglob",
            "GLOBIGNORE=x ls",
            "/work//x",
            "/",
            "a/",
            "/é/ü/",
            "http://x",
            "dotglo",
            &"ab".repeat(40),
            &format!("{}dotglob", "d".repeat(70)),
            "src/module_3/file_123.rs",
            "~/Library/LaunchAgents/x.plist",
            "LibraryLibrary/Launc",
            "Library/Launch",
            "dddotglobb",
            "abababababababababababab",
            "GLOBIGNOR GLOBIGNORE",
        ];
        for hay in texts {
            assert_eq!(
                slash_parts(hay).collect::<Vec<_>>(),
                hay.split('/').collect::<Vec<_>>()
            );
            for needle in [
                "",
                "d",
                "dotglob",
                "GLOBIGNORE",
                "//",
                "://",
                "dev",
                "ab",
                "ba",
                "Library/Launch",
                "bab",
                "é",
            ] {
                // Every suffix: the needle at each place, and cut off.
                for start in (0..=hay.len()).filter(|&i| hay.is_char_boundary(i)) {
                    let hay = &hay[start..];
                    if let [b] = needle.as_bytes() {
                        assert_eq!(has_byte(hay, *b), hay.contains(*b as char), "{hay:?}");
                    }
                    assert_eq!(
                        contains(hay, needle),
                        hay.contains(needle),
                        "{hay:?} {needle:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn find_byte_is_position() {
        let text = b"echo 'CDPATH' && ls\n\x80\xffC\nabcdefghijklmnopC";
        for start in 0..text.len() {
            for len in 0..=text.len() - start {
                let hay = &text[start..start + len];
                for needle in [b'C', b'\n', b'\xff', b'z'] {
                    assert_eq!(
                        find_byte(needle, hay),
                        hay.iter().position(|&b| b == needle),
                        "{hay:?} {needle}"
                    );
                }
            }
        }
    }
}

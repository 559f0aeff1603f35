//! The cheap tests before [`super::why`]: whether a word or path may
//! mention a protected place at all. They run on every word of every
//! segment that writes, and most words (`-n`, `src/main.rs`) mention none:
//! each test answers those in about one pass over their bytes, and leaves
//! the names' comparisons to the few words with a dot that may start one.

use super::{BARE_REPO_SUFFIX, PROTECTED, PROTECTED_PAIRS, SYSTEM_NAME_START, may_be_system};

/// Whether `path` may name a protected place at all: every protected name
/// starts with a literal `.` or ends in `.git` (a glob matches a leading
/// `.` only with `dotglob`), and every system place lies under one of a
/// few top directories ([`mentioned_in`] looks for both). A cheap test
/// before [`why`](super::why).
pub fn may_name(path: &str, dotglob: bool) -> bool {
    dotglob
        || path.starts_with('.')
        || crate::substring::contains(path, "/.")
        || mentioned_in(path)
        || UNDOTTED_PAIRS
            .iter()
            .any(|p| crate::substring::contains(path, p))
}

/// The pairs of [`PROTECTED_PAIRS`] with no dot in a parent: what the
/// cheap test looks for besides a dot (berth's state under `~/.local`
/// has one).
const UNDOTTED_PAIRS: &[&str] = &["Library/Launch"];

/// Whether a word mentions a protected name anywhere (`--out=.envrc`,
/// `-o.git/x`): the cheap test that lets the words that do not skip the
/// search for paths inside them when only protected names matter.
pub fn mentioned_in(word: &str) -> bool {
    // Each test below needs one of these bytes: a name's `.`, a system
    // path's `/` or `.` (after `=` too), a fold's `~`, `.`, ` ` or non-ASCII
    // byte, the undotted pair's `/`. Most words (`-n`, `add`, `+%s`) hold
    // none, and are answered by one pass over their bytes.
    // The bytes the word holds, of those the tests look for, in one pass:
    // each test below is skipped when a byte it needs is not there.
    let held = word.bytes().fold(0, |held, b| held | HELD[usize::from(b)]);
    if held & (DOT | SLASH | TILDE | SPACE | HIGH) == 0 {
        return false;
    }
    // Every name starts with `.`, and so does the bare-repository suffix.
    // Bytes, compared without case: a name is ASCII, so a match starts and
    // ends on a char boundary.
    let starts = |rest: &[u8], n: &str| {
        rest.get(..n.len())
            .is_some_and(|r| r.eq_ignore_ascii_case(n.as_bytes()))
    };
    let bytes = word.as_bytes();
    // Whether a dot ends a component (before a `/` or at the end): what
    // [`may_fold`](crate::name_fold::may_fold) needs of a word whose only
    // byte it looks at is `.` (`x/.git./`, `.envrc.`), found on the way.
    let mut dot_ends_component = false;
    let mut from = 0;
    while held & DOT != 0
        && let Some(i) = crate::substring::find_byte(b'.', &bytes[from..]).map(|i| from + i)
    {
        let rest = &bytes[i..];
        // Most dots start no name (`.rs`, `.txt`, `.json`): the two bytes
        // after the dot rule them out without comparing each name; the
        // rest (`.com`, `.py`) are compared with the few names that have
        // the same byte after the dot.
        if may_start_name(rest)
            && rest
                .get(1)
                .is_some_and(|&c| dotted_after(c).iter().any(|n| starts(rest, n)))
        {
            return true;
        }
        dot_ends_component |= rest.get(1).is_none_or(|&c| c == b'/');
        from = i + 1;
    }
    // Only a word that starts with `/` or `.`, or holds a `=`, may be a
    // system path, and only one with the first byte of a system name or a
    // `/` at the end (`/`, `of=/`): most (`/work`) are answered here
    // without the call.
    (held & EQUALS != 0 || matches!(bytes.first(), Some(b'/' | b'.')))
        && (held & SYSTEM_START != 0 || bytes.last() == Some(&b'/'))
        && may_be_system(word, held & EQUALS != 0, held & DOT != 0)
        // `may_fold` takes any non-ASCII byte for a fold, whatever else the
        // word holds; a dot only where it ends a component.
        || held & HIGH != 0
        || (held & (SPACE | TILDE) != 0 || dot_ends_component)
            && crate::name_fold::may_fold(word)
        || held & PAIR_START != 0
            && UNDOTTED_PAIRS
                .iter()
                .any(|p| crate::substring::contains(word, p))
}

/// [`HELD`] bits: `.`, the first byte of a name and of the bare-repository
/// suffix, and a byte [`name_fold::may_fold`](crate::name_fold::may_fold)
/// needs (with ` `, `~` and the non-ASCII ones).
const DOT: u8 = 1;
/// `/`, of a system path.
const SLASH: u8 = 2;
const TILDE: u8 = 4;
const SPACE: u8 = 8;
/// A non-ASCII byte.
const HIGH: u8 = 16;
/// `=`, before a value [`may_be_system`] looks at too.
const EQUALS: u8 = 32;
/// The first byte of one of [`UNDOTTED_PAIRS`].
const PAIR_START: u8 = 64;
/// The first byte of one of [`SYSTEM_NAMES`](super::SYSTEM_NAMES), which
/// [`may_be_system`] looks for after a `/`.
const SYSTEM_START: u8 = 128;

/// For each byte, which of the bytes [`mentioned_in`]'s tests need it is.
static HELD: [u8; 256] = {
    let mut table = [0u8; 256];
    table[b'.' as usize] |= DOT;
    table[b'/' as usize] |= SLASH;
    table[b'~' as usize] |= TILDE;
    table[b' ' as usize] |= SPACE;
    table[b'=' as usize] |= EQUALS;
    let mut b = 0x80;
    while b < 256 {
        table[b] |= HIGH;
        b += 1;
    }
    let mut i = 0;
    while i < UNDOTTED_PAIRS.len() {
        table[UNDOTTED_PAIRS[i].as_bytes()[0] as usize] |= PAIR_START;
        i += 1;
    }
    let mut b = 0;
    while b < 256 {
        if SYSTEM_NAME_START[b] {
            table[b] |= SYSTEM_START;
        }
        b += 1;
    }
    table
};

/// Whether `rest` (from a `.`) may start a protected name or the
/// bare-repository suffix: its next two bytes, without case, are those of
/// one ([`AFTER_DOT`]). A name is ASCII: a non-ASCII byte starts none.
fn may_start_name(rest: &[u8]) -> bool {
    let Some(&c1) = rest.get(1).filter(|c| c.is_ascii()) else {
        return false;
    };
    let follows = AFTER_DOT[usize::from(c1.to_ascii_lowercase())];
    match rest.get(2) {
        Some(&c2) => c2.is_ascii() && follows & (1 << c2.to_ascii_lowercase()) != 0,
        // Only a name of two bytes could end here: its entry has every bit.
        None => follows == u128::MAX,
    }
}

/// The names [`mentioned_in`] compares after a dot whose next byte is `c`
/// without case: a group of [`DOTTED`].
fn dotted_after(c: u8) -> &'static [&'static str] {
    let (names, from) = &DOTTED;
    let c = usize::from(c.to_ascii_lowercase());
    match (from.get(c), from.get(c + 1)) {
        (Some(&start), Some(&end)) => names.get(start..end).unwrap_or(&[]),
        _ => &[],
    }
}

/// How many names [`mentioned_in`] compares after a dot: the bare-repository
/// suffix, [`PROTECTED`]'s names and [`PROTECTED_PAIRS`]' first names that
/// start with `.`, in that order.
const CANDIDATES: usize = 1 + PROTECTED.len() + PROTECTED_PAIRS.len();

/// The `i`th of the [`CANDIDATES`].
const fn candidate(i: usize) -> &'static str {
    if i == 0 {
        BARE_REPO_SUFFIX
    } else if i <= PROTECTED.len() {
        PROTECTED[i - 1].0
    } else {
        PROTECTED_PAIRS[i - 1 - PROTECTED.len()].0
    }
}

/// Whether the `i`th candidate is compared after a dot: it starts with one
/// (`Library` does not), and no candidate before it is the same name
/// (`.config` starts nine pairs).
const fn compared(i: usize) -> bool {
    let name = candidate(i).as_bytes();
    if name[0] != b'.' {
        return false;
    }
    let mut j = 0;
    while j < i {
        let earlier = candidate(j).as_bytes();
        if earlier.len() == name.len() {
            let mut k = 0;
            while k < name.len() && earlier[k] == name[k] {
                k += 1;
            }
            if k == name.len() {
                return false;
            }
        }
        j += 1;
    }
    true
}

/// How many names are [`compared`].
const COMPARED: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < CANDIDATES {
        if compared(i) {
            n += 1;
        }
        i += 1;
    }
    n
};

/// The names [`mentioned_in`] compares after a dot, each once, grouped by
/// their byte after the dot (lower case), with where each group starts:
/// the group of byte `c` is `names[from[c]..from[c + 1]]`.
static DOTTED: ([&str; COMPARED], [usize; 129]) = {
    // Each candidate's group (its byte after the dot, lower case), or
    // none: worked out once, not for each group.
    let mut group = [usize::MAX; CANDIDATES];
    let mut i = 0;
    while i < CANDIDATES {
        if compared(i) {
            group[i] = candidate(i).as_bytes()[1].to_ascii_lowercase() as usize;
        }
        i += 1;
    }
    let mut names = [""; COMPARED];
    let mut from = [0; 129];
    let mut n = 0;
    let mut c = 0;
    while c < 128 {
        from[c] = n;
        let mut i = 0;
        while i < CANDIDATES {
            if group[i] == c {
                names[n] = candidate(i);
                n += 1;
            }
            i += 1;
        }
        c += 1;
    }
    from[128] = n;
    (names, from)
};

/// For each byte (lower case) after the `.` of a protected name, the bare-
/// repository suffix included, the bytes (lower case) that follow it in
/// one, as bits; every bit for a name that ends after one byte. Names are
/// ASCII, and compared without case.
static AFTER_DOT: [u128; 128] = {
    let mut table = [0u128; 128];
    const fn add(table: &mut [u128; 128], name: &str) {
        let b = name.as_bytes();
        let mut i = 0;
        while i < b.len() {
            assert!(b[i].is_ascii(), "protected names are ASCII");
            i += 1;
        }
        let c1 = b[1].to_ascii_lowercase() as usize;
        if b.len() > 2 {
            table[c1] |= 1 << b[2].to_ascii_lowercase();
        } else {
            table[c1] = u128::MAX;
        }
    }
    add(&mut table, BARE_REPO_SUFFIX);
    let mut i = 0;
    while i < PROTECTED.len() {
        add(&mut table, PROTECTED[i].0);
        i += 1;
    }
    let mut i = 0;
    while i < PROTECTED_PAIRS.len() {
        // Only pairs that start with a dot: the others (`Library/LaunchAgents`,
        // `share/berth`) are found by [`UNDOTTED_PAIRS`] or a dotted parent.
        if PROTECTED_PAIRS[i].0.as_bytes()[0] == b'.' {
            add(&mut table, PROTECTED_PAIRS[i].0);
        }
        i += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    /// Every name [`mentioned_in`] compares after a dot.
    fn dotted_names() -> Vec<&'static str> {
        std::iter::once(BARE_REPO_SUFFIX)
            .chain(PROTECTED.iter().map(|(n, _)| *n))
            .chain(PROTECTED_PAIRS.iter().map(|(n, _, _)| *n))
            .filter(|n| n.starts_with('.'))
            .collect()
    }

    /// [`mentioned_in`] without its filters: every name compared at every
    /// dot.
    fn mentioned_in_unfiltered(word: &str) -> bool {
        let b = word.as_bytes();
        let names = dotted_names();
        (0..b.len()).any(|i| {
            b[i] == b'.'
                && names.iter().any(|n| {
                    b[i..]
                        .get(..n.len())
                        .is_some_and(|r| r.eq_ignore_ascii_case(n.as_bytes()))
                })
        }) || crate::protected::tests::may_be_system_unfiltered(word, true, true)
            || crate::name_fold::may_fold(word)
            || UNDOTTED_PAIRS.iter().any(|p| word.contains(p))
    }

    #[test]
    fn the_filters_keep_every_name() {
        let mut words: Vec<String> = [
            "",
            ".",
            "x.",
            "x.c",
            "src/main.rs",
            "a.json",
            "a.js",
            "--out=.envrc",
            "-o.git/x",
            "p.git",
            "p.GIT",
            "/etc/passwd",
            "x.é",
            ".é",
            "~/Library/LaunchAgents/x",
            "Library/LaunchAgents",
            "of=/etc/x",
            "a=b=../../etc",
            "x/../etc",
            "/work",
            "/work/gen",
            "/tmp/x.txt",
            "a./b",
            "a.",
            "a. ",
            "./x",
            "../x",
            "x/./y",
            "GIT~1",
            "HEAD~3",
            "caf\u{e9}",
            "/\u{e9}",
            "--out=/etc/x",
        ]
        .map(String::from)
        .to_vec();
        words.extend(crate::protected::tests::system_words());
        words.extend(["/", "of=/", "a=b=/", "/work/", "./", "=/"].map(String::from));
        for n in dotted_names() {
            // The name, in other cases, in a path, with more after it or
            // before it, and each cut short.
            for w in [
                n.to_string(),
                n.to_uppercase(),
                format!("a/{n}/b"),
                format!("--x={}", n.to_uppercase()),
                format!("{n}x"),
                format!("x{n}"),
            ] {
                for end in (0..=w.len()).filter(|&e| w.is_char_boundary(e)) {
                    words.push(w[..end].to_string());
                }
            }
        }
        for w in &words {
            assert_eq!(mentioned_in(w), mentioned_in_unfiltered(w), "{w:?}");
        }
        // Every short word of dots, slashes, spaces, `~`, `=`, letters and
        // a digit: where a dot ends a component, a fold, a system path.
        crate::short_strings::each(b"./ ~g1=e", 6, |w| {
            assert_eq!(mentioned_in(w), mentioned_in_unfiltered(w), "{w:?}");
        });
        // Every pair of bytes after a dot, and every byte alone.
        for a in 0u8..=255 {
            for b in 0u8..=255 {
                let w = String::from_utf8_lossy(&[b'x', b'.', a, b]).into_owned();
                assert_eq!(mentioned_in(&w), mentioned_in_unfiltered(&w), "{w:?}");
            }
            let w = String::from_utf8_lossy(&[b'.', a]).into_owned();
            assert_eq!(mentioned_in(&w), mentioned_in_unfiltered(&w), "{w:?}");
        }
    }
}

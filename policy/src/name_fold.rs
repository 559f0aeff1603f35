//! A path component as the file systems berth's hosts may sit on open it,
//! for the protected names (`protected.rs`). git refuses these spellings
//! of `.git` in a tree for the same reason (`is_hfs_dotgit`,
//! `is_ntfs_dotgit` in git's `path.c`): a host that ignores case, HFS+'s
//! ignorable code points or NTFS's trailing dots and spaces, or that
//! answers to an 8.3 short name, opens `.GIT`, `.g\u{200c}it`, `.git. .`
//! and `GIT~1` as `.git`. Comparing spellings byte for byte would let a
//! write reach a protected place the decision did not see.

/// Code points HFS+ ignores when it compares names, as git lists them
/// (`next_hfs_char`), each with why it is invisible.
const HFS_IGNORABLE: &[(char, &str)] = &[
    ('\u{200c}', "zero width non-joiner"),
    ('\u{200d}', "zero width joiner"),
    ('\u{200e}', "left-to-right mark"),
    ('\u{200f}', "right-to-left mark"),
    ('\u{202a}', "left-to-right embedding"),
    ('\u{202b}', "right-to-left embedding"),
    ('\u{202c}', "pop directional formatting"),
    ('\u{202d}', "left-to-right override"),
    ('\u{202e}', "right-to-left override"),
    ('\u{206a}', "inhibit symmetric swapping"),
    ('\u{206b}', "activate symmetric swapping"),
    ('\u{206c}', "inhibit Arabic form shaping"),
    ('\u{206d}', "activate Arabic form shaping"),
    ('\u{206e}', "national digit shapes"),
    ('\u{206f}', "nominal digit shapes"),
    ('\u{feff}', "zero width no-break space (byte order mark)"),
];

/// Whether a file system may open `comp` as the protected `name`: the
/// same letters without case, once HFS+'s ignorable code points are
/// dropped and NTFS's trailing dots and spaces are trimmed, or `name`'s
/// NTFS 8.3 short name (`GIT~1` for `.git`, `CLAUDE~1` for `.claude`).
pub fn same_name(comp: &str, name: &str) -> bool {
    if comp.eq_ignore_ascii_case(name) {
        return true;
    }
    if is_plain(comp) {
        return false;
    }
    Folded::of(comp).is(name)
}

/// A component with something to fold (not [`is_plain`]), folded once to
/// be compared with many names: [`Folded::is`] answers what [`same_name`]
/// answers, without dropping the ignorable code points again for each
/// name.
pub struct Folded<'a> {
    comp: &'a str,
    /// `comp` without HFS+'s ignorable code points, and without NTFS's
    /// trailing dots and spaces.
    trimmed: String,
    /// Whether `trimmed` holds a `~`: without one it is no 8.3 short name
    /// ([`short_name`] answers `false`), and is not searched for one again
    /// for each name.
    tilde: bool,
}

impl<'a> Folded<'a> {
    pub fn of(comp: &'a str) -> Folded<'a> {
        let mut trimmed: String = comp
            .chars()
            .filter(|c| !HFS_IGNORABLE.iter().any(|(i, _)| i == c))
            .collect();
        trimmed.truncate(trimmed.trim_end_matches([' ', '.']).len());
        let tilde = trimmed.contains('~');
        Folded {
            comp,
            trimmed,
            tilde,
        }
    }

    /// [`same_name`]`(comp, name)`.
    pub fn is(&self, name: &str) -> bool {
        self.comp.eq_ignore_ascii_case(name)
            || self.trimmed.eq_ignore_ascii_case(name)
            || self.tilde && short_name(&self.trimmed, name)
    }
}

/// Whether `comp` has nothing to fold — ASCII, with no trailing dot or
/// space and no `~`, as most components are — so [`same_name`] is a
/// comparison without case. A caller comparing one component with many
/// names asks once.
pub fn is_plain(comp: &str) -> bool {
    comp.is_ascii() && !comp.ends_with([' ', '.']) && !comp.contains('~')
}

/// Whether `comp` may be `name`'s NTFS 8.3 short name: the name's letters
/// without dots, at most six of them, `~` and a number, and an optional
/// extension (`MCPJSO~1`, `MCP~1.JSO`) — every number, since which one a
/// name got depends on what else the directory holds.
fn short_name(comp: &str, name: &str) -> bool {
    let Some((stem, tail)) = comp.split_once('~') else {
        return false;
    };
    let (number, ext) = tail.split_once('.').unwrap_or((tail, "x"));
    let ext_ok = (1..=3).contains(&ext.len()) && ext.bytes().all(|b| b.is_ascii_alphanumeric());
    if stem.is_empty()
        || number.is_empty()
        || !ext_ok
        || !number.bytes().all(|b| b.is_ascii_digit())
    {
        return false;
    }
    let letters: String = name.chars().filter(|c| *c != '.').collect();
    let first = name.trim_start_matches('.');
    let base: String = first.split('.').next().unwrap_or("").chars().collect();
    // `.git` → `GIT`; `.mcp.json` → `MCPJSO` or `MCP`.
    [letters, base].iter().any(|l| {
        let prefix: String = l.chars().take(6).collect();
        stem.len() <= prefix.len()
            && stem.len() >= prefix.len().min(2)
            && prefix
                .get(..stem.len())
                .is_some_and(|p| p.eq_ignore_ascii_case(stem))
    })
}

/// Whether a word may hold a spelling [`same_name`] folds: a non-ASCII
/// byte, an 8.3 short name's `~` between a letter or digit and a digit
/// (`GIT~1`), or dots and spaces ending a component after a name
/// (`.git./`, `.envrc.` at the end) — not `./` or `../`, which are common
/// and fold to nothing, so they cost the decision nothing more.
pub fn may_fold(word: &str) -> bool {
    // One pass: most words hold none of `~`, `.`, ` ` or a non-ASCII byte.
    let b = word.as_bytes();
    let mut i = 0;
    while i < b.len() {
        // Most bytes are none of those: one table look for them.
        if !MAY_FOLD[usize::from(b[i])] {
            i += 1;
            continue;
        }
        match b[i] {
            0x80.. => return true,
            b'~' => {
                if i > 0
                    && b[i - 1].is_ascii_alphanumeric()
                    && b.get(i + 1).is_some_and(u8::is_ascii_digit)
                {
                    return true;
                }
                i += 1;
            }
            b'.' | b' ' => {
                let start = i;
                while i < b.len() && (b[i] == b'.' || b[i] == b' ') {
                    i += 1;
                }
                let ends_component = i == b.len() || b[i] == b'/';
                if ends_component && start > 0 && b[start - 1] != b'/' {
                    return true;
                }
            }
            _ => i += 1,
        }
    }
    false
}

/// The bytes [`may_fold`] looks at: the non-ASCII ones, `~`, `.` and ` `.
static MAY_FOLD: [bool; 256] = crate::byte_set::byte_set(b"~. ", true);

#[cfg(test)]
mod tests {
    use super::*;

    /// [`Folded::is`] as it was: the ignorable code points dropped, the
    /// trailing dots and spaces trimmed and the short name looked for on
    /// every comparison.
    fn same_name_each_time(comp: &str, name: &str) -> bool {
        let kept: String = comp
            .chars()
            .filter(|c| !HFS_IGNORABLE.iter().any(|(i, _)| i == c))
            .collect();
        let trimmed = kept.trim_end_matches([' ', '.']);
        comp.eq_ignore_ascii_case(name)
            || trimmed.eq_ignore_ascii_case(name)
            || short_name(trimmed, name)
    }

    #[test]
    fn folding_once_answers_as_folding_each_time() {
        let names = [".git", "git", ".mcp.json", ".claude", ".gi"];
        let check = |comp: &str| {
            let folded = Folded::of(comp);
            for name in names {
                assert_eq!(
                    folded.is(name),
                    same_name_each_time(comp, name),
                    "{comp:?} {name:?}"
                );
            }
        };
        crate::short_strings::each(b".gi~1 tG", 6, check);
        for comp in [
            ".g\u{200c}it",
            ".gi\u{206f}t.",
            "GIT~1\u{200c}.",
            "MCP~1.JSO",
            "MCPJSO~1 .",
            "\u{feff}~",
        ] {
            check(comp);
        }
    }

    #[test]
    fn folds_what_git_refuses() {
        let same = [
            (".git", ".git"),
            (".GIT", ".git"),
            (".git.", ".git"),
            (".git. . ", ".git"),
            (".git ", ".git"),
            (".g\u{200c}it", ".git"),
            (".\u{feff}git", ".git"),
            (".gi\u{206f}t.", ".git"),
            ("git~1", ".git"),
            ("GIT~12", ".git"),
            ("CLAUDE~1", ".claude"),
            ("VSCODE~1", ".vscode"),
            ("MCPJSO~1", ".mcp.json"),
            ("MCP~1.JSO", ".mcp.json"),
            (".envrc.", ".envrc"),
        ];
        for (comp, name) in same {
            assert!(same_name(comp, name), "{comp:?} should be {name}");
            assert!(
                may_fold(comp) || comp.eq_ignore_ascii_case(name),
                "{comp:?} passes the cheap test"
            );
        }
        let different = [
            ("git", ".git"),
            (".gitx", ".git"),
            (".g\u{0301}it", ".git"),
            (".gіt", ".git"),
            ("~1", ".git"),
            ("GIT~", ".git"),
            ("GIT~x", ".git"),
            ("src", ".git"),
            ("GITHUB~1", ".git"),
            ("login~5..feature", ".login"),
        ];
        for (comp, name) in different {
            assert!(!same_name(comp, name), "{comp:?} is not {name}");
        }
    }

    #[test]
    fn the_cheap_test_lets_common_words_through_and_no_folded_spelling() {
        for word in [
            "./gradlew",
            "../x",
            "src/../lib",
            "a/./b",
            "~/notes.txt",
            "x.tar.gz",
            "HEAD",
            ".",
            "..",
            "-",
        ] {
            assert!(!may_fold(word), "{word:?} costs nothing more");
        }
        for word in [
            "dir/.git./hooks/x",
            "x/.envrc.",
            ".git. ./config",
            "sub/GIT~1/config",
            "HEAD~3",
            "caf\u{e9}",
        ] {
            assert!(may_fold(word), "{word:?} is looked at");
        }
    }
}

//! `.dockerignore`: what of a build context berth leaves out of the tar it
//! sends (and so out of the hash that tags the image — a `.git` directory or
//! a `node_modules` would otherwise rebuild the image at every commit).
//!
//! Docker's rules: one pattern a line, `#` comments, `*` and `?` within a
//! path component, `**` for any number of components, a leading `!` takes
//! paths back in; the last pattern that matches a path, or one of its parent
//! directories, decides. Character classes (`[a-z]`) are not supported and
//! match literally.

/// The parsed patterns of one `.dockerignore`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ignore {
    /// (components, excludes) in file order.
    rules: Vec<(Vec<String>, bool)>,
}

impl Ignore {
    pub(crate) fn parse(text: &str) -> Ignore {
        let rules = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .filter_map(|l| {
                let (exclude, pattern) = match l.strip_prefix('!') {
                    Some(rest) => (false, rest.trim()),
                    None => (true, l),
                };
                let parts: Vec<String> = pattern
                    .split('/')
                    .filter(|c| !c.is_empty() && *c != ".")
                    .map(str::to_string)
                    .collect();
                (!parts.is_empty()).then_some((parts, exclude))
            })
            .collect();
        Ignore { rules }
    }

    /// Whether some pattern takes paths back in (then an excluded directory
    /// is still walked, for what it may hold that is kept).
    pub(crate) fn has_exceptions(&self) -> bool {
        self.rules.iter().any(|(_, exclude)| !exclude)
    }

    /// Whether `path` (relative, `/`-separated) is left out.
    pub(crate) fn excluded(&self, path: &str) -> bool {
        let parts: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
        let mut out = false;
        for (pattern, exclude) in &self.rules {
            // The path itself or one of its parent directories.
            if (1..=parts.len()).any(|n| matches(pattern, &parts[..n])) {
                out = *exclude;
            }
        }
        out
    }
}

/// Whether the pattern's components match the path's, `**` standing for any
/// number of components.
fn matches(pattern: &[String], path: &[&str]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((first, rest)) if first == "**" => {
            (0..=path.len()).any(|skip| matches(rest, &path[skip..]))
        }
        Some((first, rest)) => match path.split_first() {
            Some((head, tail)) => component_matches(first, head) && matches(rest, tail),
            None => false,
        },
    }
}

/// `*` and `?` within one component.
fn component_matches(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    // Iterative wildcard match with backtracking to the last `*`.
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    while i < p.len() && p[i] == '*' {
        i += 1;
    }
    i == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_as_docker_reads_them() {
        let ignore = Ignore::parse(
            "# comment\n.git\nnode_modules/\n*.log\n**/tmp\ndocs/**/*.md\n!docs/keep.md\n/build\n",
        );
        let cases = [
            (".git", true),
            (".git/HEAD", true),
            ("src/.git", false),
            ("node_modules/a/b.js", true),
            ("error.log", true),
            ("src/error.log", false),
            ("tmp", true),
            ("a/b/tmp/x", true),
            ("docs/a.md", true),
            ("docs/x/y/a.md", true),
            ("docs/keep.md", false),
            ("build/out", true),
            ("src/main.rs", false),
            ("Dockerfile", false),
        ];
        for (path, want) in cases {
            assert_eq!(ignore.excluded(path), want, "{path}");
        }
        assert!(ignore.has_exceptions());
        assert!(!Ignore::parse("a\n").has_exceptions());
        for (p, n, want) in [
            ("*", "abc", true),
            ("a?c", "abc", true),
            ("a*c", "abbbc", true),
            ("a*c", "abcd", false),
            ("*.rs", "main.rs", true),
            ("[ab]", "a", false),
        ] {
            assert_eq!(component_matches(p, n), want, "{p} {n}");
        }
    }
}

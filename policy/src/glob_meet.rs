//! Whether two shell globs can match one file name.
//!
//! A glob in a command is judged by what it can match (POLICY.md, "Spelling
//! does not change meaning", points 6 and 14): `cat .e*` and `cat .[e]nv`
//! may read `.env`, so a rule about `.env` — itself possibly a glob — holds
//! for them. Both sides are bash patterns over one path component: `*`,
//! `?`, `[…]` (with `!`/`^` negation and ranges) and literal bytes; a
//! backslash quotes the next byte. Where the answer is not cheap to know
//! (two bracket sets), the answer is "they may meet": fail closed.

/// One token of a component glob.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Lit(u8),
    /// `?`: any one byte.
    One,
    /// `*`: any bytes.
    Star,
    /// `[…]`: one byte of a set (or, negated, not of it).
    Set {
        bytes: Vec<(u8, u8)>,
        negated: bool,
    },
}

impl Tok {
    fn single_matches(&self, b: u8) -> bool {
        match self {
            Tok::Lit(l) => *l == b,
            Tok::One => true,
            Tok::Star => true,
            Tok::Set { bytes, negated } => {
                bytes.iter().any(|&(lo, hi)| lo <= b && b <= hi) != *negated
            }
        }
    }

    /// Whether some byte matches both single-byte tokens.
    fn meets(&self, other: &Tok) -> bool {
        match (self, other) {
            (Tok::Lit(b), t) | (t, Tok::Lit(b)) => t.single_matches(*b),
            _ => true,
        }
    }
}

fn tokens(glob: &[u8]) -> Vec<Tok> {
    let mut out = Vec::with_capacity(glob.len());
    let mut i = 0;
    while i < glob.len() {
        match glob[i] {
            b'*' => {
                if out.last() != Some(&Tok::Star) {
                    out.push(Tok::Star);
                }
            }
            b'?' => out.push(Tok::One),
            b'\\' if i + 1 < glob.len() => {
                i += 1;
                out.push(Tok::Lit(glob[i]));
            }
            b'[' => match bracket(glob, i) {
                Some((tok, end)) => {
                    out.push(tok);
                    i = end;
                }
                None => out.push(Tok::Lit(b'[')),
            },
            b => out.push(Tok::Lit(b)),
        }
        i += 1;
    }
    out
}

/// A bracket expression starting at `start`: the token and the index of
/// its closing `]`, or `None` when it does not close (then `[` is literal).
fn bracket(glob: &[u8], start: usize) -> Option<(Tok, usize)> {
    let mut i = start + 1;
    let negated = matches!(glob.get(i), Some(b'!' | b'^'));
    if negated {
        i += 1;
    }
    let mut bytes = Vec::new();
    let mut first = true;
    while i < glob.len() {
        let b = glob[i];
        if b == b']' && !first {
            return Some((Tok::Set { bytes, negated }, i));
        }
        first = false;
        if b == b'[' && glob.get(i + 1) == Some(&b':') {
            // A character class (`[:alpha:]`): any byte may be in it.
            let close = glob[i + 2..].windows(2).position(|w| w == b":]")?;
            bytes.push((0, 255));
            i += close + 4;
            continue;
        }
        if glob.get(i + 1) == Some(&b'-') && glob.get(i + 2).is_some_and(|&c| c != b']') {
            let hi = glob[i + 2];
            bytes.push((b.min(hi), b.max(hi)));
            i += 3;
            continue;
        }
        bytes.push((b, b));
        i += 1;
    }
    None
}

/// Whether some name matches both `a` and `b`. When `hidden_rule` is set,
/// `a` is a glob bash expands (its `*`, `?` and `[…]` never match a
/// leading `.`, without `dotglob`).
pub fn may_meet(a: &str, b: &str, hidden_rule: bool) -> bool {
    let ta = tokens(a.as_bytes());
    let tb = tokens(b.as_bytes());
    if hidden_rule && !matches!(ta.first(), Some(Tok::Lit(b'.'))) {
        // The expansion cannot start with `.`: `b` must match a name that
        // does not. Only a `b` that starts with a literal `.` cannot.
        if matches!(tb.first(), Some(Tok::Lit(b'.'))) {
            return false;
        }
    }
    let (n, m) = (ta.len(), tb.len());
    let mut seen = vec![false; (n + 1) * (m + 1)];
    let mut stack = vec![(0usize, 0usize)];
    while let Some((i, j)) = stack.pop() {
        let k = i * (m + 1) + j;
        if seen[k] {
            continue;
        }
        seen[k] = true;
        if i == n && j == m {
            return true;
        }
        let (x, y) = (ta.get(i), tb.get(j));
        if x == Some(&Tok::Star) {
            stack.push((i + 1, j));
            if j < m {
                stack.push((i, j + 1));
            }
        }
        if y == Some(&Tok::Star) {
            stack.push((i, j + 1));
            if i < n {
                stack.push((i + 1, j));
            }
        }
        if let (Some(x), Some(y)) = (x, y)
            && *x != Tok::Star
            && *y != Tok::Star
            && x.meets(y)
        {
            stack.push((i + 1, j + 1));
        }
    }
    false
}

/// Whether `s` holds a glob character bash would expand.
pub fn is_glob(s: &str) -> bool {
    s.bytes().any(|b| matches!(b, b'*' | b'?' | b'['))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_meet() {
        let cases = [
            (".e*", ".env", true, true),
            (".[e]nv", ".env", true, true),
            (".[!e]nv", ".env", true, false),
            ("*", ".env", true, false),
            ("*", ".env", false, true),
            ("?env", ".env", true, false),
            ("*.md", ".env", true, false),
            ("*.md", "*.pem", true, false),
            ("k*", "*.pem", true, true),
            ("[a-c]x", "bx", true, true),
            ("[a-c]x", "dx", true, false),
            ("src", "src", true, true),
            ("src", "sr", true, false),
            ("s*", "secrets", true, true),
            ("\\*", "*", true, true),
            ("[", "[", true, true),
        ];
        for (a, b, hidden, want) in cases {
            assert_eq!(may_meet(a, b, hidden), want, "{a} {b}");
        }
    }
}

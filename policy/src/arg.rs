//! One argument as the policy sees it: its text after quote removal and
//! expansion, and what could not be known about it.

/// An argument of a command (or the command name).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Arg {
    /// The value; for a dynamic argument, its static skeleton (every dynamic
    /// part removed).
    pub text: String,
    /// Its value is unknowable before running (`$X`, `$(…)`, too many braces).
    pub dynamic: bool,
    /// Holds an unquoted glob.
    pub glob: bool,
    /// Came from brace expansion.
    pub braced: bool,
    /// Starts with `~user`.
    pub tilde_user: bool,
    /// A process substitution (`/dev/fd/N`).
    pub proc_sub: bool,
    /// A package name given to a package runner (`npx prettier@3`): compared
    /// as a name, never as a path.
    pub package: bool,
    /// `{}` of `find -exec`: replaced by the paths find walks.
    pub find_placeholder: bool,
}

impl Arg {
    pub fn lit(text: impl Into<String>) -> Arg {
        Arg {
            text: text.into(),
            ..Arg::default()
        }
    }

    pub fn dynamic(skeleton: impl Into<String>) -> Arg {
        Arg {
            text: skeleton.into(),
            dynamic: true,
            ..Arg::default()
        }
    }

    /// The text when the argument is known.
    pub fn known(&self) -> Option<&str> {
        (!self.dynamic).then_some(self.text.as_str())
    }

    /// Is this exactly the static word `w`?
    pub fn is(&self, w: &str) -> bool {
        !self.dynamic && self.text == w
    }

    /// The program name's basename (`/usr/bin/sudo` → `sudo`).
    pub fn basename(&self) -> &str {
        if self.package {
            return &self.text;
        }
        basename(&self.text)
    }
}

pub fn basename(s: &str) -> &str {
    // Bytes, not chars: `/` is ASCII, and this runs for every word of every
    // invocation several times per decision.
    // Two plain loops over the bytes: cheaper than `rposition` for the
    // short names this mostly sees.
    let b = s.as_bytes();
    let mut end = b.len();
    while end > 0 && b[end - 1] == b'/' {
        end -= 1;
    }
    let mut start = end;
    while start > 0 && b[start - 1] != b'/' {
        start -= 1;
    }
    // `start` and `end` sit next to a `/` or at an end: char boundaries.
    s.get(start..end).unwrap_or(s)
}

/// Renders argv for people: words with spaces or quotes are quoted.
pub fn render(argv: &[Arg]) -> String {
    let mut out = String::new();
    render_into(&mut out, argv);
    out
}

/// [`render`] appended to `out` (a segment's wrappers and program in one
/// string, no string per part).
pub fn render_into(out: &mut String, argv: &[Arg]) {
    render_within(out, argv, usize::MAX);
}

/// [`render_into`] that stops once `out` holds `limit` bytes: what it
/// appends is what `render_into` appends, or a prefix of it (cut at a char
/// boundary) at least `limit` bytes long. A reason quotes the first few
/// dozen characters of a segment: a word of a hundred KB (a heredoc's
/// text, a long argument) is not copied, nor its quotes escaped, past them.
pub fn render_within(out: &mut String, argv: &[Arg], limit: usize) {
    // `s`, or as much of it as fills `out` to `limit` (at least that much).
    let prefix = |out: &String, s: &'_ str| -> usize {
        let mut cut = limit.saturating_sub(out.len()).min(s.len());
        while !s.is_char_boundary(cut) {
            cut += 1;
        }
        cut
    };
    for (i, a) in argv.iter().enumerate() {
        if out.len() >= limit {
            return;
        }
        if i > 0 {
            out.push(' ');
        }
        let t = &a.text;
        if a.dynamic {
            out.push('⟨');
            let cut = prefix(out, t);
            out.push_str(&t[..cut]);
            if cut < t.len() {
                return;
            }
            out.push('⟩');
        } else if t.is_empty() || t.bytes().any(|b| QUOTED[usize::from(b)]) {
            out.push('\'');
            // `'` is one char: the prefix's escaped text is a prefix of
            // the whole word's.
            let cut = prefix(out, t);
            out.push_str(&t[..cut].replace('\'', "'\\''"));
            if cut < t.len() {
                return;
            }
            out.push('\'');
        } else {
            let cut = prefix(out, t);
            out.push_str(&t[..cut]);
        }
    }
}

/// The bytes that make [`render_into`] quote a word: ASCII whitespace,
/// quotes, `\\`, `$`, a backquote, `;`, `&` and `|`.
static QUOTED: [bool; 256] = crate::byte_set::byte_set(b" \t\n\x0c\r'\"\\$`;&|", false);

#[cfg(test)]
mod tests {
    use super::*;

    /// What `render_into` appended before it had a limit.
    fn unbounded(argv: &[Arg]) -> String {
        let mut out = String::new();
        for (i, a) in argv.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            let t = &a.text;
            if a.dynamic {
                out.push('⟨');
                out.push_str(t);
                out.push('⟩');
            } else if t.is_empty()
                || t.bytes().any(|b| {
                    b.is_ascii_whitespace()
                        || matches!(b, b'\'' | b'"' | b'\\' | b'$' | b'`' | b';' | b'&' | b'|')
                })
            {
                out.push('\'');
                out.push_str(&t.replace('\'', "'\\''"));
                out.push('\'');
            } else {
                out.push_str(t);
            }
        }
        out
    }

    /// Within a limit the text is the whole one, or a prefix of it at
    /// least the limit long.
    #[test]
    fn a_limited_rendering_is_the_whole_or_a_long_enough_prefix() {
        let words = [
            "git",
            "",
            "it's",
            "a b",
            "ünï'cödé",
            "日本語",
            "x\u{b}y",
            "'''",
            "plain-word",
        ];
        for (i, w) in words.iter().enumerate() {
            for n in [1, 3, 17] {
                let long = w.repeat(n);
                let argv = vec![
                    Arg::lit("cmd"),
                    Arg::lit(long.clone()),
                    Arg::dynamic(long.clone()),
                    Arg::lit(words[(i + 1) % words.len()]),
                ];
                let whole = unbounded(&argv);
                assert_eq!(render(&argv), whole);
                for limit in 0..whole.len() + 2 {
                    let mut out = String::from("> ");
                    render_within(&mut out, &argv, limit + 2);
                    let got = &out[2..];
                    assert!(whole.starts_with(got), "{argv:?} {limit}: {got:?}");
                    assert!(
                        got.len() >= limit.min(whole.len()),
                        "{argv:?} {limit}: {got:?}"
                    );
                }
            }
        }
    }
}

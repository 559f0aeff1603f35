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
}

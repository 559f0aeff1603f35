//! From a parsed word to what bash would pass to a program.
//!
//! A word is *static* when quote removal, tilde and brace expansion alone
//! give its value; it is *dynamic* when it holds a parameter, a command or
//! process substitution, or arithmetic — its value is then unknowable here.

use super::ast::{Part, Word};
use super::brace::{self, Tagged};

/// A word's value as far as it can be known before running anything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Value {
    /// Static words: the values after brace expansion (usually one).
    /// Dynamic words: one value, the static text with every dynamic part
    /// removed (the skeleton: `$X/` gives `/`).
    pub values: Vec<String>,
    pub dynamic: bool,
    /// Holds an unquoted `*`, `?` or `[…]`.
    pub glob: bool,
    /// Brace expansion applied (an unquoted `{a,b}` or `{1..3}`).
    pub braced: bool,
    /// Brace expansion past its cap: the values are not all known.
    pub too_many: bool,
    /// Starts with `~user` (another user's home).
    pub tilde_user: bool,
    /// Is a process substitution (`<(…)` expands to `/dev/fd/N`).
    pub proc_sub: bool,
    /// Holds arithmetic over variables, which can run `$(…)` held in them.
    pub arith_vars: bool,
}

impl Value {
    /// The single static value, when the word is static and expands to one.
    pub fn single(&self) -> Option<&str> {
        if self.dynamic || self.too_many || self.values.len() != 1 {
            None
        } else {
            self.values.first().map(String::as_str)
        }
    }
}

/// The word's one value when it is one literal with nothing to expand (no
/// glob, no brace): most words. [`evaluate`] gives it as its only value,
/// with no flag set.
pub fn single_literal(word: &Word) -> Option<&str> {
    match word.parts.as_slice() {
        [Part::Lit { text, quoted }]
            if *quoted || !text.bytes().any(|b| MAY_EXPAND[usize::from(b)]) =>
        {
            Some(text)
        }
        _ => None,
    }
}

/// `{`, `*`, `?` and `[`: the bytes that may start a brace expansion or a
/// glob in unquoted text, looked up a byte at a time over every word.
static MAY_EXPAND: [bool; 256] = crate::byte_set::byte_set(b"{*?[", false);

/// Evaluates a word; `home` replaces `~`.
pub fn evaluate(word: &Word, home: &str) -> Value {
    // Most words are one literal with nothing to expand: no byte tagging.
    if let Some(text) = single_literal(word) {
        return Value {
            values: vec![text.to_string()],
            ..Value::default()
        };
    }
    let mut v = Value::default();
    let mut tagged: Vec<Tagged> = Vec::new();
    let mut has_unquoted_brace = false;
    for (i, part) in word.parts.iter().enumerate() {
        match part {
            Part::Lit { text, quoted } => {
                if !quoted {
                    if text.bytes().any(|b| b == b'*' || b == b'?') || has_bracket_glob(text) {
                        v.glob = true;
                    }
                    if text.contains('{') {
                        has_unquoted_brace = true;
                    }
                }
                tagged.extend(text.bytes().map(|b| (b, *quoted)));
                if *quoted && text.is_empty() {
                    // `''`: a word even when empty (see QUOTED_EMPTY).
                    tagged.push(QUOTED_EMPTY);
                }
            }
            Part::Tilde(user) => match user.as_str() {
                "" => tagged.extend(home.bytes().map(|b| (b, true))),
                "+" | "-" => v.dynamic = true,
                u => {
                    if i == 0 {
                        v.tilde_user = true;
                    }
                    tagged.push((b'~', true));
                    tagged.extend(u.bytes().map(|b| (b, true)));
                }
            },
            // `$HOME` is the frame's home: the template `rm -rf $HOME` is by
            // meaning `rm -rf ~`. (Assigning HOME makes a segment opaque.)
            Part::Param { name, inner } if name == "HOME" && inner.is_empty() => {
                tagged.extend(home.bytes().map(|b| (b, true)));
            }
            Part::Param { name, inner } => {
                v.dynamic = true;
                if param_evaluates_code(name, inner) || arith_vars_in(inner) {
                    v.arith_vars = true;
                }
            }
            Part::CmdSub(_) => v.dynamic = true,
            Part::Arith(a) => {
                v.dynamic = true;
                if a.has_vars {
                    v.arith_vars = true;
                }
            }
            Part::ProcSub(_) => {
                v.proc_sub = true;
                tagged.extend(b"/dev/fd/63".iter().map(|&b| (b, true)));
            }
        }
    }
    if v.dynamic {
        v.values.push(text_of(&tagged));
        return v;
    }
    if has_unquoted_brace {
        match brace::expand(&tagged) {
            Some(list) => {
                v.braced = list.len() != 1 || list.first().map(Vec::len) != Some(tagged.len());
                // bash removes the expansions that are empty and unquoted:
                // `git {,} push` runs `git push`.
                v.values = list
                    .into_iter()
                    .filter(|b| !b.is_empty())
                    .map(|b| {
                        let b: Vec<u8> = b.into_iter().filter(|&c| c != QUOTED_EMPTY.0).collect();
                        String::from_utf8_lossy(&b).into_owned()
                    })
                    .collect();
            }
            None => {
                v.too_many = true;
                v.braced = true;
                v.values.push(text_of(&tagged));
            }
        }
    } else {
        v.values.push(text_of(&tagged));
    }
    v
}

/// Stands for an empty quoted string (`''`, `""`) in the tagged bytes, so
/// that a brace expansion holding one is not removed as empty. A NUL cannot
/// be in a bash word (bash cuts words at NUL), so it is free.
const QUOTED_EMPTY: Tagged = (0, true);

/// The word's text, without QUOTED_EMPTY marks.
fn text_of(tagged: &[Tagged]) -> String {
    let bytes: Vec<u8> = tagged
        .iter()
        .filter(|&&t| t != QUOTED_EMPTY)
        .map(|&(b, _)| b)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn has_bracket_glob(text: &str) -> bool {
    match text.find('[') {
        Some(i) => text[i + 1..].contains(']'),
        None => false,
    }
}

/// Whether expanding these parts makes bash evaluate text as code: an
/// arithmetic expansion over variables, or a parameter expansion that
/// evaluates its variable's text (see [`param_evaluates_code`]), at any depth.
pub fn arith_vars_in(parts: &[Part]) -> bool {
    parts.iter().any(|p| match p {
        Part::Arith(a) => a.has_vars,
        Part::Param { name, inner } => param_evaluates_code(name, inner) || arith_vars_in(inner),
        _ => false,
    })
}

/// Whether bash evaluates text held in a variable as code when it expands
/// this parameter: an indirection (`${!x}`: `x` may hold `a[$(cmd)]`), an
/// array subscript (evaluated as arithmetic: `${a[$i]}`, `${a[i]}`), or
/// prompt expansion (`${x@P}` runs the `$(…)` in the value).
fn param_evaluates_code(name: &str, inner: &[Part]) -> bool {
    if crate::substring::contains(name, "@P") {
        return true;
    }
    let lit = match inner.first() {
        Some(Part::Lit { text, .. }) => Some(text.as_str()),
        _ => None,
    };
    if let Some(indirect) = name.strip_prefix('!')
        && !indirect.is_empty()
        && indirect != "#"
        && !indirect.ends_with('*')
        && !indirect.ends_with('@')
        && !lit.is_some_and(|t| t.starts_with("[@]") || t.starts_with("[*]"))
    {
        return true;
    }
    let Some(rest) = lit.and_then(|t| t.strip_prefix('[')) else {
        // `${x:OFFSET:LENGTH}`: both are arithmetic.
        return lit.is_some_and(|t| substring_is_code(t, &inner[1..]));
    };
    match rest.find(']') {
        Some(end) => {
            let sub = &rest[..end];
            let after = &rest[end + 1..];
            (sub != "@" && sub != "*" && sub.bytes().any(|b| b.is_ascii_alphabetic() || b == b'_'))
                || after.starts_with("@P")
                || substring_is_code(after, &inner[1..])
        }
        // The subscript holds an expansion: its value is evaluated.
        None => true,
    }
}

/// Whether the operator of a `${…}` — `op`, the literal text after the
/// name (and subscript), then the parts `more` — is the substring operator
/// `:OFFSET[:LENGTH]` with code in it. bash evaluates the offset and the
/// length as arithmetic, quotes or not (`${x:i}`, `${x:'a[$(cmd)]'}`,
/// `${x:$i}`): a name can hold `a[$(cmd)]`, a `$(…)` runs, and any
/// expansion's value is evaluated in turn. `${x:-…}`, `:=`, `:?`, `:+` are
/// other operators; `${x: -1}` and `${x:1:2}` are plain numbers.
fn substring_is_code(op: &str, more: &[Part]) -> bool {
    let Some(expr) = op.strip_prefix(':') else {
        return false;
    };
    if expr.starts_with(['-', '=', '?', '+']) {
        return false;
    }
    let code = |t: &str| {
        t.bytes()
            .any(|b| b.is_ascii_alphabetic() || matches!(b, b'_' | b'$' | b'`'))
    };
    if expr.is_empty()
        && matches!(more.first(), Some(Part::Lit { text, quoted: false }) if text.starts_with(['-', '=', '?', '+']))
    {
        return false;
    }
    code(expr)
        || more.iter().any(|p| match p {
            Part::Lit { text, .. } => code(text),
            Part::Tilde(_) => false,
            _ => true,
        })
}

/// The word's text when it is entirely unquoted literal text (reserved
/// words, function names).
pub fn plain(word: &Word) -> Option<&str> {
    match word.parts.as_slice() {
        [
            Part::Lit {
                text,
                quoted: false,
            },
        ] => Some(text),
        _ => None,
    }
}

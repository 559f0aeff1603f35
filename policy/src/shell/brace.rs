//! Brace expansion (`{a,b}`, `{1..3}`), done before paths are judged:
//! `/work/{a,../../etc}` names `/etc`.
//!
//! Works on a word flattened to bytes tagged quoted/unquoted: only unquoted
//! braces expand. The number of results is capped; past the cap the caller
//! treats the word as unknowable.

/// Most words one word may expand to.
pub const MAX_EXPANSIONS: usize = 256;

/// A byte and whether it was quoted.
pub type Tagged = (u8, bool);

/// Longest word brace expansion is attempted on; a longer word with braces
/// is treated as unknowable (the caller fails closed).
pub const MAX_WORD: usize = 4096;

/// Expands `input`. `None` when the expansion exceeds [`MAX_EXPANSIONS`] or
/// the word is longer than [`MAX_WORD`].
/// A word without an unquoted brace pair expands to itself.
pub fn expand(input: &[Tagged]) -> Option<Vec<Vec<u8>>> {
    if input.len() > MAX_WORD {
        return None;
    }
    let mut out = Vec::new();
    expand_into(input, &mut out, 0)?;
    Some(out)
}

fn expand_into(input: &[Tagged], out: &mut Vec<Vec<u8>>, depth: usize) -> Option<()> {
    if depth > 32 {
        return None;
    }
    let Some((open, close, alternatives)) = find_brace_checked(input).map_err(|_| ()).ok()? else {
        out.push(input.iter().map(|&(b, _)| b).collect());
        return Some(());
    };
    let prefix = &input[..open];
    let suffix = &input[close + 1..];
    for alt in alternatives {
        let mut word: Vec<Tagged> = Vec::with_capacity(prefix.len() + alt.len() + suffix.len());
        word.extend_from_slice(prefix);
        word.extend_from_slice(&alt);
        word.extend_from_slice(suffix);
        expand_into(&word, out, depth + 1)?;
        if out.len() > MAX_EXPANSIONS {
            return None;
        }
    }
    Some(())
}

/// The first expandable brace pair: its positions and alternatives.
/// `Err` when a sequence is too long to expand.
/// An expandable brace: its open and close positions and alternatives.
type Brace = (usize, usize, Vec<Vec<Tagged>>);

fn find_brace_checked(input: &[Tagged]) -> Result<Option<Brace>, ()> {
    // One pass pairs the braces (a stack of opens with the commas seen at
    // their own level) and keeps the leftmost pair that expands: linear in
    // the word, with no allocation per pair.
    let mut stack: Vec<(usize, usize)> = Vec::new();
    let mut best: Option<(usize, usize, bool)> = None; // (open, close, has commas)
    for (i, &(b, q)) in input.iter().enumerate() {
        if q {
            continue;
        }
        match b {
            b'{' => stack.push((i, 0)),
            b'}' => {
                let Some((open, commas)) = stack.pop() else {
                    continue;
                };
                if best.is_some_and(|(o, _, _)| o < open) {
                    continue;
                }
                if commas > 0 {
                    best = Some((open, i, true));
                } else if i - open <= 64 {
                    // Sequences are short (`{1..100}`).
                    match sequence(&input[open + 1..i]) {
                        Seq::TooMany => return Err(()),
                        Seq::Values(_) => best = Some((open, i, false)),
                        Seq::NotASequence => {}
                    }
                }
            }
            b',' => {
                if let Some(top) = stack.last_mut() {
                    top.1 += 1;
                }
            }
            _ => {}
        }
    }
    let Some((open, close, commas)) = best else {
        return Ok(None);
    };
    if !commas {
        return match sequence(&input[open + 1..close]) {
            Seq::Values(seq) => Ok(Some((open, close, seq))),
            Seq::TooMany => Err(()),
            Seq::NotASequence => Ok(None),
        };
    }
    let mut alts = Vec::new();
    let mut depth = 0usize;
    let mut from = open + 1;
    for (i, &(b, q)) in input.iter().enumerate().take(close).skip(open + 1) {
        if q {
            continue;
        }
        match b {
            b'{' => depth += 1,
            b'}' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => {
                alts.push(input[from..i].to_vec());
                from = i + 1;
            }
            _ => {}
        }
    }
    alts.push(input[from..close].to_vec());
    Ok(Some((open, close, alts)))
}

enum Seq {
    Values(Vec<Vec<Tagged>>),
    TooMany,
    NotASequence,
}

/// `{1..5}`, `{a..e}`, `{1..10..2}`.
fn sequence(inner: &[Tagged]) -> Seq {
    let text: Vec<u8> = inner.iter().map(|&(b, _)| b).collect();
    let Ok(text) = std::str::from_utf8(&text) else {
        return Seq::NotASequence;
    };
    let mut pieces = text.split("..");
    let (Some(a), Some(b)) = (pieces.next(), pieces.next()) else {
        return Seq::NotASequence;
    };
    let step = pieces.next();
    if pieces.next().is_some() {
        return Seq::NotASequence;
    }
    let step: i64 = match step {
        Some(s) => match s.parse::<i64>().ok().and_then(i64::checked_abs) {
            Some(v) => v.max(1),
            None => return Seq::NotASequence,
        },
        None => 1,
    };
    let tag = |s: String| {
        s.into_bytes()
            .into_iter()
            .map(|b| (b, false))
            .collect::<Vec<_>>()
    };
    if let (Ok(x), Ok(y)) = (a.parse::<i64>(), b.parse::<i64>()) {
        let Some(span) = x.checked_sub(y).and_then(i64::checked_abs) else {
            return Seq::TooMany;
        };
        let count = span / step + 1;
        if count > MAX_EXPANSIONS as i64 {
            return Seq::TooMany;
        }
        let width = if (a.starts_with('0') && a.len() > 1) || (b.starts_with('0') && b.len() > 1) {
            a.len().max(b.len())
        } else {
            0
        };
        let mut v = Vec::new();
        let mut i = x;
        for _ in 0..count {
            v.push(tag(format!("{i:0width$}")));
            i = if x <= y { i + step } else { i - step };
        }
        return Seq::Values(v);
    }
    let (Some(ca), Some(cb)) = (single_char(a), single_char(b)) else {
        return Seq::NotASequence;
    };
    if !ca.is_ascii_alphabetic() || !cb.is_ascii_alphabetic() {
        return Seq::NotASequence;
    }
    let (lo, hi) = (ca.min(cb) as i64, ca.max(cb) as i64);
    let mut v: Vec<Vec<Tagged>> = (lo..=hi)
        .step_by(step as usize)
        .map(|c| tag(((c as u8) as char).to_string()))
        .collect();
    if ca > cb {
        v.reverse();
    }
    Seq::Values(v)
}

fn single_char(s: &str) -> Option<u8> {
    let b = s.as_bytes();
    (b.len() == 1).then(|| b[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unquoted(s: &str) -> Vec<Tagged> {
        s.bytes().map(|b| (b, false)).collect()
    }

    fn exp(s: &str) -> Vec<String> {
        expand(&unquoted(s))
            .unwrap()
            .into_iter()
            .map(|v| String::from_utf8(v).unwrap())
            .collect()
    }

    #[test]
    fn expands_like_bash() {
        let cases: &[(&str, &[&str])] = &[
            ("a{b,c}d", &["abd", "acd"]),
            ("/work/{a,../../etc}", &["/work/a", "/work/../../etc"]),
            ("{a,b}{1,2}", &["a1", "a2", "b1", "b2"]),
            ("x{1..3}", &["x1", "x2", "x3"]),
            ("{3..1}", &["3", "2", "1"]),
            ("{01..3}", &["01", "02", "03"]),
            ("{a..c}", &["a", "b", "c"]),
            ("{}", &["{}"]),
            ("{a}", &["{a}"]),
            ("${x}", &["${x}"]),
            ("{a,{b,c}}", &["a", "b", "c"]),
            ("{pu,}sh", &["push", "sh"]),
            ("a{,}", &["a", "a"]),
        ];
        for (input, want) in cases {
            assert_eq!(exp(input), want.to_vec(), "{input}");
        }
    }

    #[test]
    fn quoted_braces_stay() {
        let mut w = unquoted("a");
        w.extend("{b,c}".bytes().map(|b| (b, true)));
        assert_eq!(expand(&w).unwrap(), vec![b"a{b,c}".to_vec()]);
    }

    #[test]
    fn caps_the_count() {
        assert!(expand(&unquoted("{1..100000}")).is_none());
        assert!(expand(&unquoted("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}")).is_none());
    }
}

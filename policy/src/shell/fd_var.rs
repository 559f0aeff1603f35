//! `{NAME}>file` and `{NAME[SUB]}>file`: a redirection that stores the
//! descriptor it opens in a variable.
//!
//! bash reads the word as any word (quotes and all) and, when it starts with
//! `{`, ends with `}` and an operator follows at once, takes it as a
//! variable name — an array element too. Assigning the element evaluates
//! its subscript as arithmetic, which runs the `$(…)` in it (quoted or not)
//! or held in a variable it names: `{a['$(cmd)']}>/dev/null` runs `cmd`.

/// Where the `{…}` word starting at `start` (at `{`) ends, when it is a
/// descriptor variable — `}` directly followed by `<` or `>` — and whether
/// it is an array element with code in its subscript. `None`: an ordinary
/// word.
pub(super) fn scan(src: &[u8], start: usize, meta: fn(u8) -> bool) -> Option<(usize, bool)> {
    let name_start = start + 1;
    let mut k = name_start;
    while src
        .get(k)
        .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_')
    {
        k += 1;
    }
    if k == name_start || src[name_start].is_ascii_digit() {
        return None;
    }
    if src.get(k) == Some(&b'}') {
        return matches!(src.get(k + 1), Some(b'<' | b'>')).then_some((k + 1, false));
    }
    if src.get(k) != Some(&b'[') {
        return None;
    }
    // The word's extent as bash's lexer reads it: quotes and escapes hold
    // blanks and operators.
    while let Some(&b) = src.get(k) {
        match b {
            b'\\' => k += 2,
            b'\'' => k += 1 + crate::substring::find_byte(b'\'', src.get(k + 1..)?)? + 1,
            b'"' => {
                k += 1;
                loop {
                    match src.get(k)? {
                        b'\\' => k += 2,
                        b'"' => break,
                        _ => k += 1,
                    }
                }
                k += 1;
            }
            b if meta(b) => break,
            _ => k += 1,
        }
    }
    let k = k.min(src.len());
    let word = &src[start..k];
    if word.len() < 4 || !word.ends_with(b"]}") || !matches!(src.get(k), Some(b'<' | b'>')) {
        return None;
    }
    Some((
        k,
        super::parser::subscript_is_code(&word[1..word.len() - 1]),
    ))
}

#[cfg(test)]
mod tests {
    use super::scan;

    fn meta(b: u8) -> bool {
        b" \t\n|&;()<>".contains(&b)
    }

    #[test]
    fn descriptor_variables_and_their_subscripts() {
        assert_eq!(scan(b"{fd}>x", 0, meta), Some((4, false)));
        assert_eq!(scan(b"{a[1]}>x", 0, meta), Some((6, false)));
        assert_eq!(scan(b"{a[i]}>x", 0, meta), Some((6, true)));
        assert_eq!(scan(b"{a['$(x y)']}>x", 0, meta), Some((13, true)));
        assert_eq!(scan(b"{a[\"$i\"]}<x", 0, meta), Some((9, true)));
        assert_eq!(scan(b"{fd} >x", 0, meta), None);
        assert_eq!(scan(b"{a[1]} >x", 0, meta), None);
        assert_eq!(scan(b"{a,b}>x", 0, meta), None);
        assert_eq!(scan(b"{a['x", 0, meta), None);
        assert_eq!(scan(b"{1}>x", 0, meta), None);
    }
}
